//! qola in one minute, on a built-in demo: an AITER-shaped upstream (a superproject with a
//! `3rdparty/composable_kernel` submodule) and a three-patch series, made in a temp dir.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! It clones and prepares, prepares again (nothing to do), makes a hand edit and shows qola
//! refusing to discard it, then the three ways on: skip, diff, force. Then, when a HIP compiler
//! is found, it compiles a kernel of the prepared tree and qola-sys's built-in attention kernels
//! (for `GPU_ARCHS`, default gfx90a), twice: the second time everything comes from the cache.

use std::time::Instant;

use qola_build::{Error, HipBuild, Preparation, Prepare, PrepareError};
use qola_tests::{DEMO_KERNEL, Demo};

fn step(title: &str, options: &Prepare) -> Result<Preparation, PrepareError> {
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
        Err(PrepareError::Refused(_)) => {}
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
    let prepared = step("next build: nothing changed", &options)?;

    if std::env::var_os("HIPCC").is_none() && which("hipcc").is_none() {
        println!(
            "\n== no HIP compiler found (HIPCC unset, no hipcc on PATH): stopping before the kernels\n   apt-get install hipcc libamdhip64-dev rocm-device-libs"
        );
        return Ok(());
    }
    let cache = tmp.path().join("cache");
    let arch = std::env::var("GPU_ARCHS").unwrap_or_else(|_| "gfx90a".to_string());
    let mut demo_kernel = HipBuild::new();
    demo_kernel
        .file(prepared.root.join(DEMO_KERNEL))
        .include(prepared.root.join("csrc/include"))
        .include(prepared.root.join("3rdparty/composable_kernel/include"))
        .arch(&arch)
        .export("qola_demo_scale")
        .cache_dir(&cache)
        .out_dir(tmp.path().join("out-demo"))
        .cargo_metadata(false);
    compile("a kernel of the prepared tree", &demo_kernel, "demo")?;

    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-sys/kernels");
    let sources = qola_tests::files_with_extension(&kernels, "hip");
    let mut builtin = HipBuild::new();
    builtin
        .files(&sources)
        .include(kernels.join("include"))
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .arch(&arch)
        .export("qola_mha_fwd")
        .export("qola_mha_bwd")
        .export("qola_mha_bwd_workspace_size")
        .cache_dir(&cache)
        .out_dir(tmp.path().join("out-builtin"))
        .cargo_metadata(false);
    compile(
        "qola-sys's built-in attention kernels",
        &builtin,
        "qola_mha",
    )?;
    compile("the same kernels again", &builtin, "qola_mha")?;
    Ok(())
}

fn compile(title: &str, build: &HipBuild, name: &str) -> Result<(), Error> {
    let report = build.try_compile(name)?;
    println!(
        "\n== {title}: {} of {} units compiled, {} from the cache, in {:.1} s ({}, {})",
        report.compiled(),
        report.units.len(),
        report.units.len() - report.compiled(),
        report.elapsed.as_secs_f64(),
        report.archs.join(","),
        report.toolchain.version()
    );
    println!("   library: {}", report.library.display());
    Ok(())
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
