//! A module's compile flags and include directories in AITER's order and for this compiler
//! (see the folder's docs), and each source's own flags.

use std::path::{Path, PathBuf};

use super::{AiterModuleSpec, Generated, key_error};
use crate::aiter::Result;
use crate::aiter::recipe::{self, AiterPaths, ModuleRecipe};
use crate::build_script::Env;
use crate::compile::HipToolchain;

/// Each source's own flags (`flags_extra_hip_per_source`), as AITER matches them: the pattern is
/// the source's path, or a wildcard matching its path or its file name. Two patterns giving one
/// source different flags are an error (AITER would take the first of a table whose order is not
/// kept); a pattern no source matches is a warning.
pub(super) fn per_source_flags(
    spec: &AiterModuleSpec,
    recipe: &ModuleRecipe,
    sources: &[PathBuf],
    warnings: &mut Vec<String>,
) -> Result<Vec<(PathBuf, Vec<String>)>> {
    use crate::common::fnmatch::fnmatch;
    let table = &recipe.flags_extra_hip_per_source;
    let mut out: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut used = vec![false; table.len()];
    for source in sources {
        let path = source.to_string_lossy();
        let name = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut found: Option<(&str, &Vec<String>)> = None;
        for (i, (pattern, flags)) in table.iter().enumerate() {
            if *pattern != path && !fnmatch(pattern, &path) && !fnmatch(pattern, &name) {
                continue;
            }
            used[i] = true;
            match found {
                Some((first, theirs)) if theirs != flags => {
                    return Err(key_error(
                        spec,
                        "flags_extra_hip_per_source",
                        &format!("{first:?} and {pattern:?}"),
                        &format!(
                            "both match {} with other flags; make the patterns name different sources",
                            source.display()
                        ),
                    ));
                }
                Some(_) => {}
                None => found = Some((pattern, flags)),
            }
        }
        if let Some((_, flags)) = found {
            out.push((source.clone(), flags.clone()));
        }
    }
    for ((pattern, _), used) in table.iter().zip(used) {
        if !used {
            warnings.push(format!(
                "flags_extra_hip_per_source: {pattern:?} matches no source of {}; no flags given",
                spec.module.name
            ));
        }
    }
    Ok(out)
}

/// The include directories in AITER's order: ck_helper, CK's `include` and `library/include`,
/// AITER's `csrc/include`, the generated code, the module's `extra_include`, then
/// `csrc/include/torch`.
pub(super) fn includes_of(
    root: &Path,
    generated: &[Generated],
    recipe: &ModuleRecipe,
) -> Vec<PathBuf> {
    let ck = root.join("3rdparty/composable_kernel");
    let mut includes = vec![
        root.join("3rdparty/ck_helper"),
        ck.join("include"),
        ck.join("library/include"),
        root.join("csrc/include"),
    ];
    includes.extend(generated.iter().map(|g| g.dir.clone()));
    includes.extend(recipe.extra_include.iter().cloned());
    includes.push(root.join("csrc/include/torch"));
    includes
}

/// AITER's compile flags for this compiler (see the module docs), one argument each, the
/// `-mllvm` flags dropped because the compiler does not know them, and `core.py`'s own lists.
pub(super) fn flags_for(
    spec: &AiterModuleSpec,
    paths: &AiterPaths,
    recipe: &ModuleRecipe,
    toolchain: &HipToolchain,
    env: &Env,
) -> Result<(Vec<String>, Vec<String>, recipe::CoreFlags)> {
    let arch = recipe::aiter_gfx(spec.archs).to_string();
    // What the tree's own core.py gives the module (see `recipe::core_flags`).
    let core = recipe::core_flags(paths, recipe, spec.archs, toolchain, spec.cache, env)?;
    let mut candidates: Vec<String> = vec!["-DWITH_HIP".into(), "-fPIC".into()];
    candidates.extend(core.flags_cc.iter().cloned());
    candidates.extend(
        [
            "-D__HIP_PLATFORM_AMD__=1",
            "-DUSE_ROCM=1",
            "-DHIPBLAS_V2",
            "-DCUDA_HAS_FP16=1",
            "-D__HIP_NO_HALF_OPERATORS__=1",
            "-D__HIP_NO_HALF_CONVERSIONS__=1",
            "-mcmodel=large",
            "-fno-unique-section-names",
            "-ffunction-sections",
            "-fdata-sections",
            "-fvisibility=hidden",
            "-fvisibility-inlines-hidden",
        ]
        .map(String::from),
    );
    // core.py sorted and deduplicated its HIP flags; qola probes the `-mllvm` ones.
    let hip = core.flags_hip.clone();
    let mut dropped_flags = Vec::new();
    let scratch = spec.gen_dir.join("qola-flag-probe");
    for flag in hip {
        if flag.starts_with("-mllvm")
            && !toolchain.accepts_flag(&flag, &arch, spec.cache, &scratch)?
        {
            dropped_flags.push(flag);
            continue;
        }
        candidates.push(flag);
    }
    if !env.flag("QOLA_AITER_KEEP_INLINE_ALL")?
        && upstream_clang_20(toolchain)
        && candidates
            .iter()
            .any(|f| f == "-mllvm -amdgpu-function-calls=false")
    {
        candidates.push("-mllvm -amdgpu-function-calls=true".into());
    }
    candidates.push("-fno-gpu-rdc".into());
    let flags = candidates
        .iter()
        .flat_map(|f| f.split_whitespace().map(String::from).collect::<Vec<_>>())
        .collect();
    Ok((flags, dropped_flags, core))
}

/// Whether the compiler is an upstream clang 20 or newer (not AMD's), where AITER's
/// inline-everything pair costs minutes per CK instance (see the module docs).
fn upstream_clang_20(toolchain: &HipToolchain) -> bool {
    let version = toolchain.clang_version.as_deref().unwrap_or("");
    version
        .split("clang version ")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.trim().parse::<u32>().ok())
        .is_some_and(|major| major >= 20 && !version.contains("AMD"))
}
