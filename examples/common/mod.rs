//! What the benchmarks on the real AITER tree share: the workspace's manifest, a prepared
//! checkout of the real tree (the amd-aiter wheel as git repositories, with `qola-build/patches/aiter`),
//! and an AITER module generated for one architecture.

use std::path::{Path, PathBuf};

use qola_build::aiter::{AiterModule, AiterModuleSpec, prepare_module};
use qola_build::manifest::Module;
use qola_build::{Manifest, Prepare};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// qola-sys's `qola.toml` (the default manifest).
pub fn manifest() -> Manifest {
    Manifest::from_path(&workspace().join("qola-sys/qola.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The manifest's module `name`.
pub fn module(manifest: &Manifest, name: &str) -> Module {
    manifest
        .modules
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("qola.toml has no module {name}"))
        .clone()
}

/// The real tree prepared at `root` (qola's stat snapshots in `cache`).
pub fn prepare_real(root: &Path, cache: &Path) {
    let real = qola_tests::real_aiter().expect("the amd-aiter wheel (see README)");
    Prepare::new()
        .root(root)
        .url(real.upstream.to_string_lossy())
        .commit(&real.commit)
        .patches_dir(workspace().join("qola-build/patches/aiter"))
        .cache_dir(cache)
        .cargo_metadata(false)
        .try_prepare()
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Module `m` of the tree at `root`, generated into `gen_dir` for `arch` with `hipcc`.
pub fn aiter_module(
    root: &Path,
    m: &Module,
    arch: &str,
    filter: Option<&str>,
    gen_dir: &Path,
    cache: &Path,
    hipcc: &Path,
) -> AiterModule {
    prepare_module(&AiterModuleSpec {
        root,
        module: m,
        archs: &[arch.to_string()],
        gen_dir,
        cache,
        ck_filter: filter,
        variants: &Default::default(),
        compiler: Some(hipcc),
        toolchain: None,
        cargo_metadata: false,
        registry: None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}
