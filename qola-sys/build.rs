//! Builds the attention kernels behind `kernels/include/qola_mha.h` into a static library with
//! qola-build's incremental HIP pipeline.
//!
//! * `QOLA_KERNELS=builtin` (the default unless `QOLA_MANIFEST` names a manifest with
//!   `[[modules]]`): qola's own portable kernels in `kernels/`; no AITER.
//! * `QOLA_KERNELS=aiter` (the default when `QOLA_MANIFEST` names such a manifest): AITER's
//!   kernels. The AITER tree is prepared (`prepare_aiter()`, with
//!   qola-sys's own `qola.toml`, shipped in the package with its patch series, unless
//!   `QOLA_MANIFEST` names another), each selected module of
//!   the manifest is generated and compiled with AITER's flags, its hsa code objects embedded,
//!   with qola's C API wrapper (`aiter/`). `QOLA_AITER_MODULES` selects modules (default: all of
//!   the manifest's that have a wrapper: `libmha_fwd`, `libmha_bwd`, and the a4w4 GEMMs
//!   `libgemm_a4w4_blockscale` and `libgemm_a4w4_asm` behind `qola_gemm.h`, each of which sets
//!   the cfg `qola_<module less lib>` for the Rust declarations); `QOLA_CK_FILTER` narrows
//!   CK's instances (CK's `--filter`), for narrow builds, and `QOLA_CK_FILTER_<MODULE>` (e.g.
//!   `QOLA_CK_FILTER_LIBMHA_BWD`, whose filter has CK's three-part `a@b@c` form) one module's.
//!   One static library per module, each exporting only its `qola_mha_*` or `qola_gemm_*`
//!   functions, and `libqola_mha_status.a` with `qola_mha_status_string` (and
//!   `qola_gemm_status_string` when a GEMM module is built).
//! * `DOCS_RS` set: nothing is compiled, the docs still build.

use std::path::{Path, PathBuf};

use qola_build::BuildScript;

type BoxError = Box<dyn std::error::Error>;

fn main() {
    // One context for the whole script: every directive printed once, every read tracked.
    let script = BuildScript::new();
    if let Err(e) = build(&script) {
        panic!("{e}");
    }
}

fn build(script: &BuildScript) -> Result<(), BoxError> {
    let env = |name: &str| script.var(name);
    for module in GEMM_MODULES {
        println!("cargo:rustc-check-cfg=cfg(qola_{})", &module["lib".len()..]);
    }
    if env("DOCS_RS")?.is_some() {
        return Ok(());
    }
    let manifest_dir =
        PathBuf::from(env("CARGO_MANIFEST_DIR")?.ok_or("CARGO_MANIFEST_DIR is not set")?);
    let kernels = manifest_dir.join("kernels");
    println!("cargo:include={}", kernels.join("include").display());
    // The manifest is read once: the one the user names (QOLA_MANIFEST), whose modules make
    // AITER the default, or qola-sys's own when AITER is asked for.
    let named = match env("QOLA_MANIFEST")? {
        Some(path) => Some(qola_build::Manifest::from_path(Path::new(&path))?),
        None => None,
    };
    let default = match &named {
        Some(manifest) if !manifest.modules.is_empty() => "aiter",
        _ => "builtin",
    };
    match env("QOLA_KERNELS")?.as_deref().unwrap_or(default) {
        "builtin" => builtin(script, &kernels),
        "aiter" => {
            let manifest = match named {
                Some(manifest) => manifest,
                None => qola_build::Manifest::from_path(&manifest_dir.join("qola.toml"))?,
            };
            aiter(script, manifest, &manifest_dir, &kernels)
        }
        other => Err(format!("QOLA_KERNELS={other}: expected builtin or aiter").into()),
    }
}

/// The GEMM modules qola-sys wraps (AITER only): each sets the cfg `qola_<name less lib>`.
const GEMM_MODULES: [&str; 2] = ["libgemm_a4w4_blockscale", "libgemm_a4w4_asm"];

/// The C API's functions, all exported by the built-in kernels' library.
const API: [&str; 6] = [
    "qola_mha_fwd",
    "qola_mha_fwd_check",
    "qola_mha_bwd",
    "qola_mha_bwd_check",
    "qola_mha_bwd_workspace_size",
    "qola_mha_status_string",
];

fn builtin(script: &BuildScript, kernels: &Path) -> Result<(), BoxError> {
    // A new or removed kernel file reruns the script; the files it reads are watched one by one.
    println!("cargo:rerun-if-changed={}", kernels.display());
    let mut sources: Vec<PathBuf> = std::fs::read_dir(kernels)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    sources.retain(|p| p.extension().is_some_and(|x| x == "hip"));
    sources.sort();
    let mut build = qola_build::HipBuild::new();
    build
        .files(&sources)
        .include(kernels.join("include"))
        .flag("-std=c++17")
        .flag("-fvisibility=hidden");
    for symbol in API {
        build.export(symbol);
    }
    let report = script.compile(&build, "qola_mha")?;
    println!(
        "cargo:rustc-env=QOLA_MHA_LIBRARIES={}",
        report.library.display()
    );
    Ok(())
}

/// Each AITER module with a C API wrapper: the module, its wrapper and the symbols it exports.
const WRAPPERS: [(&str, &str, &[&str]); 4] = [
    (
        "libmha_fwd",
        "qola_aiter_fwd.cpp",
        &["qola_mha_fwd", "qola_mha_fwd_check"],
    ),
    (
        "libmha_bwd",
        "qola_aiter_bwd.cpp",
        &[
            "qola_mha_bwd",
            "qola_mha_bwd_check",
            "qola_mha_bwd_workspace_size",
        ],
    ),
    (
        "libgemm_a4w4_blockscale",
        "qola_aiter_gemm_a4w4_blockscale.cpp",
        &[
            "qola_gemm_a4w4_blockscale",
            "qola_gemm_a4w4_blockscale_check",
        ],
    ),
    (
        "libgemm_a4w4_asm",
        "qola_aiter_gemm_a4w4_asm.cpp",
        &["qola_gemm_a4w4_asm", "qola_gemm_a4w4_asm_check"],
    ),
];

/// The C API wrapper of `module` and the symbols it exports.
fn wrapper(module: &str) -> Option<(&'static str, &'static [&'static str])> {
    WRAPPERS
        .iter()
        .find(|(name, _, _)| *name == module)
        .map(|&(_, source, exports)| (source, exports))
}

/// The modules with a wrapper, for messages (`a, b, c`).
fn wrapped_modules() -> String {
    WRAPPERS.map(|(name, _, _)| name).join(", ")
}

/// A module to build, its wrapper source and the symbols that wrapper exports.
type Selected<'m> = (
    &'m qola_build::manifest::Module,
    &'static str,
    &'static [&'static str],
);

/// The manifest's modules that `QOLA_AITER_MODULES` selects (default: every module with a
/// wrapper), with their wrappers; checked before anything is prepared.
fn selected_modules<'m>(
    manifest: &'m qola_build::Manifest,
    selection: Option<&str>,
) -> Result<Vec<Selected<'m>>, BoxError> {
    let names: Option<Vec<String>> = selection.map(qola_build::split_list);
    if let Some(names) = &names {
        for name in names {
            if !manifest.modules.iter().any(|m| m.name == *name) {
                let known: Vec<&str> = manifest.modules.iter().map(|m| m.name.as_str()).collect();
                return Err(format!(
                    "QOLA_AITER_MODULES={}: the manifest has no module {name} (it has: {}); fix QOLA_AITER_MODULES or add the module to the manifest",
                    names.join(","),
                    known.join(", ")
                )
                .into());
            }
        }
    }
    let mut selected = Vec::new();
    for module in &manifest.modules {
        let named = names.as_ref().map(|n| n.contains(&module.name));
        match (wrapper(&module.name), named) {
            (Some((source, exports)), None | Some(true)) => {
                selected.push((module, source, exports))
            }
            (None, Some(true)) => {
                return Err(format!(
                    "QOLA_KERNELS=aiter: module {} has no qola C API wrapper in this version ({} have); drop it from QOLA_AITER_MODULES",
                    module.name,
                    wrapped_modules()
                )
                .into());
            }
            _ => {}
        }
    }
    if selected.is_empty() {
        return Err(format!(
            "QOLA_KERNELS=aiter: the manifest names no module qola can wrap ({})",
            wrapped_modules()
        )
        .into());
    }
    Ok(selected)
}

/// AITER's modules of `manifest` (read once, handed to the preparation).
fn aiter(
    script: &BuildScript,
    manifest: qola_build::Manifest,
    manifest_dir: &Path,
    kernels: &Path,
) -> Result<(), BoxError> {
    let selection = script.var("QOLA_AITER_MODULES")?;
    let selected = selected_modules(&manifest, selection.as_deref())?;
    let prepared = script.prepare(qola_build::Prepare::new().manifest_read(manifest.clone()))?;
    let archs = script.gpu_archs(&manifest.build.architectures)?;
    let out_dir = PathBuf::from(script.var("OUT_DIR")?.ok_or("OUT_DIR is not set")?);
    let cache = script.cache_dir()?;
    let wrappers = manifest_dir.join("aiter");
    println!("cargo:rerun-if-changed={}", wrappers.display());
    let variants = manifest.variant_filters()?;
    let mut libraries = Vec::new();
    let mut gemm_built = false;
    // The compiler is identified once: by the first module, then handed to the others.
    let mut toolchain: Option<qola_build::HipToolchain> = None;
    for (module, source, exports) in selected {
        // The module's own filter, else every module's (CK's forward and backward filters
        // differ in form: the backward's has three `@` parts).
        let ck_filter = script.ck_filter(&module.name)?;
        let api = qola_build::aiter::Api::C {
            sources: vec![wrappers.join(source)],
            include: kernels.join("include"),
            exports: exports.iter().map(|s| s.to_string()).collect(),
        };
        let mut library = script.library(
            &qola_build::aiter::AiterModuleSpec {
                root: &prepared.root,
                module,
                archs: &archs,
                gen_dir: &out_dir.join("aiter-gen"),
                cache: &cache,
                ck_filter: ck_filter.as_deref(),
                variants: &variants,
                compiler: None,
                toolchain: toolchain.as_ref(),
                cargo_metadata: true,
                registry: None,
            },
            &api,
        )?;
        // Handed on unless this module runs a clang of its own (hip_clang_path).
        if library.module.recipe.hip_clang_path.is_none() {
            toolchain = Some(library.module.toolchain.clone());
        }
        for warning in &library.module.warnings {
            println!("cargo:warning={}: {warning}", module.name);
        }
        // The Rust declarations of a GEMM module's functions (see `gemm`) exist where it is built.
        if GEMM_MODULES.contains(&module.name.as_str()) {
            println!("cargo:rustc-cfg=qola_{}", &module.name["lib".len()..]);
            gemm_built = true;
        }
        let name = library.module.recipe.name.clone();
        // A batch of CK instances that fails is compiled again one instance each (qola-build).
        let report =
            script.compile_library(&mut library, name.strip_prefix("lib").unwrap_or(&name))?;
        libraries.push(report.library.display().to_string());
    }
    // The status strings every module's statuses need: a library of its own, with
    // qola_gemm_status_string when a GEMM module was built.
    let mut status = qola_build::HipBuild::new();
    status
        .file(kernels.join("status.hip"))
        .include(kernels.join("include"))
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .export("qola_mha_status_string");
    if gemm_built {
        status
            .file(wrappers.join("qola_gemm_status.hip"))
            .export("qola_gemm_status_string");
    }
    for arch in &archs {
        status.arch(arch);
    }
    if let Some(toolchain) = toolchain {
        status.toolchain(toolchain);
    }
    libraries.push(
        script
            .compile(&status, "qola_mha_status")?
            .library
            .display()
            .to_string(),
    );
    println!("cargo:rustc-env=QOLA_MHA_LIBRARIES={}", libraries.join(";"));
    Ok(())
}
