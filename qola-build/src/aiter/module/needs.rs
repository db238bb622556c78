//! What a module's own sources ask of its recipe, read from the tree (QoLA's cpp_itfs mode adds
//! the same to `libmha_fwd` and `libmha_bwd` from a fixed list; qola derives it, so a tree that
//! asks for something else is noticed):
//!
//! * **Feature switches**: a listed source's top-level `#if NAME`, where `NAME` is one of
//!   AITER's feature switches (`FAV2_ON`, `FAV3_ON`, `FAV_NATIVE_ON`: `FAV…_ON`). A switch the
//!   recipe does not define already is turned on (`-DNAME=1` among the module's HIP flags) when
//!   every header included under it can be had: found on the module's include path, or an hsa
//!   code-object config (`asm_<kernels>_configs.hpp`) that the tree's `hsa/codegen.py` writes
//!   for `hsa/<arch>/<kernels>/`, whose generator qola then adds. Without the switch the
//!   function it gates returns -1 on every call (AITER 7a24cd87's `mha_fwd.cu`), so a switch
//!   qola cannot satisfy is an error naming the file, the switch and the header.
//! * **Unconditional hsa configs** (`mha_bwd.cu` includes `asm_fmha_v3_bwd_configs.hpp`): the
//!   generator is added; a config no generator of the tree writes is an error.
//! * **The hsa subdirectories** the module embeds (unless the manifest names them): the
//!   kernels of those generators.
//!
//! `FAV2_ON` is AITER's composable_kernel path: a module built without CK (`ENABLE_CK=0`, as
//! `core.py` takes it: the recipe's `-DENABLE_CK=`, else the `ENABLE_CK` environment variable)
//! does not get it turned on; its code uses the CK types the tree's headers declare only under
//! `#if ENABLE_CK`.
//!
//! A tree whose listed sources ask for none of this (AITER 05a0d1f generates its API sources)
//! keeps its recipe as it is, and the modules' known hsa subdirectories.

use std::path::{Path, PathBuf};

use crate::aiter::{AiterError, Result};

/// The feature switches of AITER's composable_kernel code.
const CK_SWITCHES: &[&str] = &["FAV2_ON"];

/// Whether a module with the recipe's `flags` is built with composable_kernel, as `core.py`
/// decides it: the last `-DENABLE_CK=` of the flags, else the environment's `ENABLE_CK` (an
/// integer, 1 when unset).
pub(crate) fn ck_enabled(flags: &[String], environment: Option<&str>) -> bool {
    let value = flags
        .iter()
        .rev()
        .find_map(|f| f.strip_prefix("-DENABLE_CK="))
        .or(environment)
        .unwrap_or("1");
    // Not an integer: core.py fails on it, with its own words (see `recipe::core_flags`).
    !matches!(value.trim().parse::<i64>(), Ok(0))
}

/// What the sources ask of the recipe.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// Switches to turn on (`-DFAV3_ON=1`).
    pub defines: Vec<String>,
    /// Generators to add (`<root>/hsa/codegen.py -m fmha_v3_fwd --output_dir {}`).
    pub generators: Vec<String>,
    /// The hsa kernels (subdirectories of `hsa/<arch>/`) those generators configure.
    pub hsa_kernels: Vec<String>,
}

/// One `#include "..."` of a source, and the feature switch it sits under, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Include {
    header: String,
    switch: Option<String>,
}

/// The feature switches (`#if FAV…_ON` at the top level) of `text`, and its quoted includes.
fn read(text: &str) -> (Vec<String>, Vec<Include>) {
    let mut switches = Vec::new();
    let mut includes = Vec::new();
    let mut stack: Vec<Option<String>> = Vec::new();
    for line in text.lines() {
        let Some(directive) = line.trim().strip_prefix('#').map(str::trim_start) else {
            continue;
        };
        if let Some(condition) = directive.strip_prefix("if ") {
            let condition = condition.split("//").next().unwrap_or_default().trim();
            let switch = is_switch(condition).then(|| condition.to_string());
            if let (Some(name), true) = (&switch, stack.is_empty())
                && !switches.contains(name)
            {
                switches.push(name.clone());
            }
            stack.push(switch);
        } else if directive.starts_with("if") {
            stack.push(None);
        } else if directive.starts_with("endif") {
            stack.pop();
        } else if let Some(rest) = directive.strip_prefix("include") {
            let rest = rest.trim_start();
            if let Some(header) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) {
                includes.push(Include {
                    header: header.to_string(),
                    switch: stack.iter().rev().flatten().next().cloned(),
                });
            }
        }
    }
    (switches, includes)
}

/// Whether `name` is one of AITER's feature switches.
fn is_switch(name: &str) -> bool {
    name.starts_with("FAV")
        && name.ends_with("_ON")
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The hsa kernels of a config header (`asm_fmha_v3_fwd_configs.hpp` → `fmha_v3_fwd`).
fn hsa_config(header: &str) -> Option<&str> {
    header.strip_prefix("asm_")?.strip_suffix("_configs.hpp")
}

/// What the listed `sources` of the module `module` (in the tree at `root`, with the include
/// directories `include_dirs` and the recipe's `flags`) ask of the recipe.
pub(crate) fn needs(
    root: &Path,
    module: &str,
    sources: &[PathBuf],
    include_dirs: &[PathBuf],
    flags: &[String],
    generators: &[String],
    ck_enabled: bool,
) -> Result<Needs> {
    // A config the recipe's own generators write: `hsa/<arch>/<kernels>/codegen.py` (AITER
    // 05a0d1f's per-kernel generators) or `hsa/codegen.py -m <kernels>`.
    let generated_by_recipe = |kernels: &str| {
        generators.iter().any(|g| {
            g.contains(&format!("/{kernels}/codegen.py"))
                || g.split_whitespace()
                    .collect::<Vec<_>>()
                    .windows(2)
                    .any(|w| w == ["-m", kernels])
        })
    };
    let mut needs = Needs::default();
    let codegen = root.join("hsa/codegen.py");
    let offers = |kernels: &str| -> bool {
        let writes = std::fs::read_to_string(&codegen)
            .is_ok_and(|text| text.contains("asm_{args.module}_configs.hpp"));
        let dirs = std::fs::read_dir(root.join("hsa"))
            .into_iter()
            .flatten()
            .flatten();
        writes
            && dirs
                .into_iter()
                .any(|arch| arch.path().join(kernels).is_dir())
    };
    for source in sources.iter().filter(|s| s.is_file()) {
        let text = std::fs::read_to_string(source).unwrap_or_default();
        let (switches, includes) = read(&text);
        let dir = source.parent().unwrap_or(root);
        let found = |header: &str| {
            std::iter::once(dir)
                .chain(include_dirs.iter().map(PathBuf::as_path))
                .any(|d| d.join(header).is_file())
        };
        // A header that cannot be had, and what it is under.
        let mut missing: Vec<&Include> = Vec::new();
        for include in &includes {
            if found(&include.header) {
                continue;
            }
            if let Some(kernels) = hsa_config(&include.header)
                && generated_by_recipe(kernels)
            {
                if !needs.hsa_kernels.iter().any(|k| k == kernels) {
                    needs.hsa_kernels.push(kernels.to_string());
                }
                continue;
            }
            match hsa_config(&include.header) {
                Some(kernels) if offers(kernels) => {
                    let generator = format!(
                        "{}/hsa/codegen.py -m {kernels} --output_dir {{}}",
                        root.display()
                    );
                    if !needs.generators.contains(&generator) {
                        needs.generators.push(generator);
                        needs.hsa_kernels.push(kernels.to_string());
                    }
                }
                _ => missing.push(include),
            }
        }
        for switch in switches {
            let defined = flags.iter().any(|f| {
                f.strip_prefix("-D")
                    .is_some_and(|d| d.split('=').next() == Some(&switch))
            });
            if defined || (!ck_enabled && CK_SWITCHES.contains(&switch.as_str())) {
                continue;
            }
            if let Some(include) = missing
                .iter()
                .find(|i| i.switch.as_deref() == Some(&switch))
            {
                return Err(AiterError::RecipeNeeds {
                    file: source.clone(),
                    symbol: switch.clone(),
                    why: format!(
                        "it includes \"{}\", which is not on {module}'s include path and which no generator of the tree writes; without {switch} the code it gates is left out and the library would fail every call it serves",
                        include.header
                    ),
                });
            }
            needs.defines.push(format!("-D{switch}=1"));
        }
        if let Some(include) = missing
            .iter()
            .find(|i| i.switch.is_none() && hsa_config(&i.header).is_some())
        {
            return Err(AiterError::RecipeNeeds {
                file: source.clone(),
                symbol: include.header.clone(),
                why: "an hsa config that the tree's hsa/codegen.py does not write (no hsa/<arch>/ directory of these kernels)".to_string(),
            });
        }
    }
    Ok(needs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_switches_and_the_includes_under_them_are_read() {
        let text = "#include \"mha_fwd.h\"\n#if FAV3_ON\n#include \"asm_fmha_v3_fwd_configs.hpp\"\n#endif\n#if FAV_NATIVE_ON // native\n#include \"mha_native_launch.h\"\n#endif\n#include <string>\nvoid f() {\n#if FAV2_ON\n  g();\n#endif\n#if ENABLE_CK\n#if FAV9_ON\n#endif\n#endif\n}\n";
        let (switches, includes) = read(text);
        assert_eq!(switches, ["FAV3_ON", "FAV_NATIVE_ON", "FAV2_ON"]);
        assert_eq!(
            includes,
            [
                Include {
                    header: "mha_fwd.h".to_string(),
                    switch: None
                },
                Include {
                    header: "asm_fmha_v3_fwd_configs.hpp".to_string(),
                    switch: Some("FAV3_ON".to_string())
                },
                Include {
                    header: "mha_native_launch.h".to_string(),
                    switch: Some("FAV_NATIVE_ON".to_string())
                },
            ]
        );
        assert_eq!(
            hsa_config("asm_fmha_v3_bwd_configs.hpp"),
            Some("fmha_v3_bwd")
        );
        assert!(!is_switch("ENABLE_CK") && !is_switch("ONLY_FAV3"));
    }

    #[test]
    fn a_module_built_without_ck_does_not_get_the_ck_switch() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("mha_fwd.cu");
        std::fs::write(
            &source,
            "#if FAV3_ON\nvoid v3();\n#endif\n#if FAV2_ON\nvoid ck();\n#endif\n",
        )
        .unwrap();
        let with = |flags: &[String], environment: Option<&str>| {
            let ck = ck_enabled(flags, environment);
            needs(
                dir.path(),
                "libmha_fwd",
                std::slice::from_ref(&source),
                &[],
                flags,
                &[],
                ck,
            )
            .unwrap()
            .defines
        };
        assert_eq!(with(&[], None), ["-DFAV3_ON=1", "-DFAV2_ON=1"]);
        assert_eq!(with(&["-DENABLE_CK=0".into()], None), ["-DFAV3_ON=1"]);
        assert_eq!(with(&[], Some("0")), ["-DFAV3_ON=1"]);
        // The recipe's own define wins over the environment's, as in core.py.
        assert_eq!(
            with(&["-DENABLE_CK=1".into()], Some("0")),
            ["-DFAV3_ON=1", "-DFAV2_ON=1"]
        );
    }
}
