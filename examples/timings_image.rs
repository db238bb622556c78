//! The picture of docs/timings.md: the timings report of a cold build of the narrow AITER
//! forward (TE's `libmha_fwd`, `NARROW_FWD_FILTER`) for `gfx942;gfx950` with the sid toolchain,
//! 2 jobs, rendered by headless Chromium into `docs/images/timings-narrow-aiter.png`.
//!
//! ```text
//! tools/sid-hipcc-setup
//! cargo run --release -p qola-examples --example timings_image
//! ```

#![allow(clippy::disallowed_methods)] // an example sets its own environment

use std::path::Path;

use qola_build::{OutputBuild, Prepare};
use qola_tests::NARROW_FWD_FILTER;

fn main() {
    let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain: run tools/sid-hipcc-setup");
    let real = qola_tests::real_aiter().expect("the amd-aiter wheel (see README)");
    let chromium = qola_tests::tool("chromium", "chromium").expect("chromium");
    let dir = qola_tests::fixtures_dir().join("timings-image");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // SAFETY: single-threaded here; the library reads these through its environment helper.
    unsafe {
        std::env::set_var("HIPCC", &hipcc);
        std::env::set_var("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
        std::env::set_var("NUM_JOBS", "2");
        for name in ["GPU_ARCHS", "QOLA_CACHE_DIR", "QOLA_COMPILER_LAUNCHER"] {
            std::env::remove_var(name);
        }
    }
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942", "gfx950"])
        .narrow_forward()
        .write(dir.join("te.toml"));
    let mut prepare = Prepare::new();
    prepare
        .manifest(&manifest)
        .root(dir.join("aiter"))
        .cache_dir(dir.join("cache"));
    let mut build = OutputBuild::new(prepare, dir.join("out"));
    build.timings(true);
    let outcome = build.try_build().unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.compiled > 0, "a cold build compiles");
    let page = std::fs::read_dir(dir.join("out/_qola/build/te_libmha_fwd"))
        .expect("the module's build directory")
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "html"))
        .expect("the timings page");
    let png = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images/timings-narrow-aiter.png");
    qola_tests::screenshot(&chromium, &page, &dir.join("profile"), &png, (1200, 1100));
    println!("{} compiled units; {}", outcome.compiled, png.display());
}
