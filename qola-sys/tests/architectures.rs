//! The built-in kernels compile for CDNA and RDNA architectures alike (gfx90a, gfx942, gfx950,
//! gfx1100) with a current HIP toolchain (Debian sid's, clang 21; required in CI), through
//! qola's own pipeline. The unit tests compile them for gfx90a with Debian's hipcc as well.

#[test]
fn the_built_in_kernels_compile_for_cdna_and_rdna_architectures() {
    let Some(hipcc) = qola_tests::sid_hipcc() else {
        return;
    };
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let sources = qola_tests::files_with_extension(&kernels, "hip");
    assert_eq!(sources.len(), 11);
    let tmp = tempfile::tempdir().unwrap();
    let mut build = qola_build::HipBuild::new();
    build
        .files(&sources)
        .include(kernels.join("include"))
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .flag("-Werror")
        .compiler(&hipcc)
        .cache_dir(qola_tests::fixtures_dir().join("cache"))
        .out_dir(tmp.path())
        .export("qola_mha_fwd")
        .cargo_metadata(false);
    for arch in ["gfx90a", "gfx942", "gfx950", "gfx1100"] {
        build.arch(arch);
    }
    let report = build
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.units.len(), 11);
}
