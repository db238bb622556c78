//! qola in one minute, on a built-in demo: an AITER-shaped upstream (a superproject with a
//! `3rdparty/composable_kernel` submodule) and a three-patch series, made in a temp dir.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! It clones and prepares, prepares again (nothing to do), makes a hand edit and shows qola
//! refusing to discard it, then the three ways on: skip, diff, force.

use std::time::Instant;

use qola_build::{Error, Preparation, Prepare};
use qola_tests::Demo;

fn step(title: &str, options: &Prepare) -> Result<Preparation, Error> {
    let start = Instant::now();
    let result = options.try_prepare();
    let ms = start.elapsed().as_secs_f64() * 1e3;
    match &result {
        Ok(p) => println!("\n== {title} ({ms:.0} ms)\n{p}"),
        Err(e) => println!("\n== {title} ({ms:.0} ms)\n{e}"),
    }
    result
}

fn main() -> Result<(), Error> {
    let tmp = tempfile::tempdir().expect("a temp dir");
    let demo = Demo::create(&tmp.path().join("upstream"));
    let root = tmp.path().join("checkout/aiter");
    println!("demo upstream: {}", demo.aiter.display());
    println!("patch series:  {}", demo.patches.display());
    for (name, _) in qola_tests::DEMO_PATCHES {
        println!("  {name}");
    }

    let mut options = Prepare::new();
    options
        .root(&root)
        .url(demo.aiter.to_string_lossy())
        .commit(&demo.commit)
        .patches_dir(&demo.patches)
        .force(false)
        .skip(false)
        .offline(false)
        .cache_dir(tmp.path().join("cache"))
        .cargo_metadata(false);

    step("first build: no checkout yet", &options)?;
    step("second build: nothing changed", &options)?;

    let edited = root.join("csrc/include/mha_fwd.h");
    let mut text = std::fs::read_to_string(&edited).expect("read the header");
    text.push_str("// debugging: print the strides\n");
    std::fs::write(&edited, text).expect("edit the header");
    println!("\n(hand edit of csrc/include/mha_fwd.h)");
    match step("third build: a local edit", &options) {
        Err(Error::Refused(_)) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }

    step(
        "QOLA_SKIP_PREPARE=1: build with the edit",
        options.clone().skip(true),
    )?;

    let patch = options.try_diff()?;
    println!(
        "\n== qola diff: the edit as the next patch of the series\n{}",
        String::from_utf8_lossy(&patch)
    );

    let forced = step(
        "QOLA_FORCE_PREPARE=1: back to the prepared tree",
        options.clone().force(true),
    )?;
    if let Some(backup) = forced.backup {
        println!("the edit is kept in {}", backup.display());
    }
    step("next build: nothing changed", &options)?;
    Ok(())
}
