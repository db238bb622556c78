//! Builds the attention kernels behind `kernels/include/qola_mha.h` into a static library with
//! qola-build's incremental HIP pipeline.
//!
//! * `QOLA_KERNELS=builtin` (the default): qola's own portable kernels in `kernels/`; no AITER.
//! * `QOLA_KERNELS=aiter`: AITER's kernels. The AITER tree is prepared (`prepare_aiter()`, with
//!   the workspace's `qola.toml` unless `QOLA_MANIFEST` names another), each selected module of
//!   the manifest is generated and compiled with AITER's flags, its hsa code objects embedded,
//!   with qola's C API wrapper (`aiter/`). `QOLA_AITER_MODULES` selects modules (default: all of
//!   the manifest's that have a wrapper); `QOLA_CK_FILTER` narrows CK's instances (CK's
//!   `--filter`), for narrow builds.
//! * `DOCS_RS` set: nothing is compiled, the docs still build.

use std::path::{Path, PathBuf};

type BoxError = Box<dyn std::error::Error>;

fn main() {
    if let Err(e) = build() {
        panic!("{e}");
    }
}

fn env(name: &str) -> Result<Option<String>, BoxError> {
    Ok(qola_build::build_script_env(name)?)
}

fn build() -> Result<(), BoxError> {
    if env("DOCS_RS")?.is_some() {
        return Ok(());
    }
    let manifest_dir =
        PathBuf::from(env("CARGO_MANIFEST_DIR")?.ok_or("CARGO_MANIFEST_DIR is not set")?);
    let kernels = manifest_dir.join("kernels");
    println!("cargo:include={}", kernels.join("include").display());
    match env("QOLA_KERNELS")?.as_deref() {
        None | Some("builtin") => builtin(&kernels),
        Some("aiter") => aiter(&manifest_dir, &kernels),
        Some(other) => Err(format!("QOLA_KERNELS={other}: expected builtin or aiter").into()),
    }
}

fn builtin(kernels: &Path) -> Result<(), BoxError> {
    // A new or removed kernel file reruns the script; the files it reads are watched one by one.
    println!("cargo:rerun-if-changed={}", kernels.display());
    let mut sources: Vec<PathBuf> = std::fs::read_dir(kernels)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    sources.retain(|p| p.extension().is_some_and(|x| x == "hip"));
    sources.sort();
    let report = qola_build::HipBuild::new()
        .files(&sources)
        .include(kernels.join("include"))
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .export("qola_mha_fwd")
        .export("qola_mha_bwd")
        .export("qola_mha_bwd_workspace_size")
        .try_compile("qola_mha")?;
    println!(
        "cargo:rustc-env=QOLA_MHA_LIBRARY={}",
        report.library.display()
    );
    Ok(())
}

/// The C API wrapper of each AITER module and the symbols it exports.
fn wrapper(module: &str) -> Option<(&'static str, &'static [&'static str])> {
    match module {
        "libmha_fwd" => Some(("qola_aiter_fwd.cpp", &["qola_mha_fwd"])),
        _ => None,
    }
}

fn aiter(manifest_dir: &Path, kernels: &Path) -> Result<(), BoxError> {
    let mut prepare = qola_build::Prepare::new();
    if env("QOLA_MANIFEST")?.is_none() {
        prepare.manifest(manifest_dir.join("../qola.toml"));
    }
    let prepared = prepare.try_prepare()?;
    let manifest_path = match env("QOLA_MANIFEST")? {
        Some(path) => PathBuf::from(path),
        None => manifest_dir.join("../qola.toml"),
    };
    let manifest = qola_build::Manifest::from_path(&manifest_path)?;
    let selected: Option<Vec<String>> =
        env("QOLA_AITER_MODULES")?.map(|m| m.split(',').map(|s| s.trim().to_string()).collect());
    let archs = qola_build::gpu_archs(&manifest.build.architectures)?;
    let out_dir = PathBuf::from(env("OUT_DIR")?.ok_or("OUT_DIR is not set")?);
    let cache = qola_build::cache_dir()?;
    let ck_filter = env("QOLA_CK_FILTER")?;
    let wrappers = manifest_dir.join("aiter");
    println!("cargo:rerun-if-changed={}", wrappers.display());
    let mut built = 0;
    for module in &manifest.modules {
        let wanted = selected.as_ref().is_none_or(|s| s.contains(&module.name));
        let Some((source, exports)) = wrapper(&module.name).filter(|_| wanted) else {
            if selected.as_ref().is_some_and(|s| s.contains(&module.name)) {
                return Err(format!(
                    "QOLA_KERNELS=aiter: module {} has no qola C API wrapper in this version (libmha_fwd has)",
                    module.name
                )
                .into());
            }
            continue;
        };
        let aiter = qola_build::aiter::prepare_module(&qola_build::aiter::AiterModuleSpec {
            root: &prepared.root,
            module,
            archs: &archs,
            gen_dir: &out_dir.join("aiter-gen"),
            cache: &cache,
            ck_filter: ck_filter.as_deref(),
            compiler: None,
            cargo_metadata: true,
        })?;
        let hsa_dir = out_dir.join(format!("hsa-{}", aiter.recipe.name));
        std::fs::create_dir_all(&hsa_dir)?;
        let arch = archs.first().ok_or("no GPU architecture")?;
        for subdir in &module.hsa_subdirs {
            let dir = prepared.root.join("hsa").join(arch).join(subdir);
            if dir.exists() {
                println!("cargo:rerun-if-changed={}", dir.display());
            }
        }
        qola_build::aiter::embed_hsa(&prepared.root, arch, &module.hsa_subdirs, &hsa_dir)?;
        let mut build = aiter.hip_build();
        build
            .file(wrappers.join(source))
            .include(&hsa_dir)
            .include(kernels.join("include"))
            .define("AITER_EMBEDDED_HSA", None)
            .manifest_archs(&manifest.build.architectures);
        for symbol in exports {
            build.export(symbol);
        }
        let name = &aiter.recipe.name;
        let report = build.try_compile(name.strip_prefix("lib").unwrap_or(name))?;
        println!(
            "cargo:rustc-env=QOLA_MHA_LIBRARY={}",
            report.library.display()
        );
        built += 1;
    }
    if built == 0 {
        return Err(
            "QOLA_KERNELS=aiter: the manifest names no module qola can wrap (libmha_fwd)".into(),
        );
    }
    Ok(())
}
