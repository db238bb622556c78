//! Which modules a `qola build` builds: every `[[modules]]` entry, or those of the groups
//! asked for, each with its library's path and, for a prebuilt group, where its libraries are.

use std::path::{Path, PathBuf};

use crate::aiter::{AiterError, Result};
use crate::build_script::{Directives, Env};
use crate::manifest::{Manifest, ManifestError, Module};
use crate::prepare::Prepare;

/// A module selected, with where its library goes.
pub(super) struct Selected {
    pub module: Module,
    pub md_name: String,
    pub so_path: PathBuf,
    /// A prebuilt group's directory (`QOLA_PREBUILT_DIR_<GROUP>`) its library is copied from.
    pub prebuilt: Option<PathBuf>,
}

/// Every group of `groups` is the group of some `[[modules]]` entry of `manifest`.
fn groups_exist(manifest: &Manifest, groups: &[String]) -> Result<()> {
    for group in groups {
        if !manifest
            .modules
            .iter()
            .any(|m| m.group.as_deref() == Some(group))
        {
            return Err(AiterError::InvalidOption {
                option: format!("group {group}"),
                problem: format!(
                    "no [[modules]] entry of {} has group = {group:?}",
                    manifest.path.display()
                ),
            });
        }
    }
    Ok(())
}

/// QoLA's `checkout --group`: every group named is a group of the manifest `prepare` reads (the
/// tree is the same for all of them, so they select nothing).
pub fn check_groups(prepare: &Prepare, groups: &[String]) -> Result<()> {
    let directives = Directives::new(false);
    let env = Env::new(&directives);
    let settings = prepare.settings(&env)?;
    if settings.manifest_path.is_none() {
        return Err(ManifestError::Missing.into());
    }
    let groups = group_list(groups.iter().map(String::as_str));
    groups_exist(&settings.manifest, &groups)
}

/// Group names from lists as QoLA reads them (`"mha;gemm"`, `--group` or `QOLA_BUILD_GROUPS`:
/// `;` or `,` between names).
pub(super) fn group_list<'a>(lists: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    lists
        .into_iter()
        .flat_map(crate::common::text::split_list)
        .collect()
}

/// The modules to build (those of `groups`, else of `QOLA_BUILD_GROUPS`, else all), in
/// manifest order, their libraries under `output_dir`.
pub(super) fn select(
    env: &Env,
    manifest: &Manifest,
    namespace: Option<&str>,
    groups: &[String],
    output_dir: &Path,
) -> Result<Vec<Selected>> {
    let groups: Vec<String> = if !groups.is_empty() {
        groups.to_vec()
    } else {
        group_list(env.var("QOLA_BUILD_GROUPS")?.as_deref())
    };
    groups_exist(manifest, &groups)?;
    let mut selected = Vec::new();
    for module in &manifest.modules {
        if !groups.is_empty() && !module.group.as_ref().is_some_and(|g| groups.contains(g)) {
            continue;
        }
        let md_name = match namespace {
            Some(ns) => format!("{ns}_{}", module.md_name()),
            None => module.md_name().to_string(),
        };
        let prebuilt = match &module.group {
            Some(group) => env
                .var_os(&format!("QOLA_PREBUILT_DIR_{}", group.to_ascii_uppercase()))
                .map(PathBuf::from),
            None => None,
        };
        selected.push(Selected {
            module: module.clone(),
            so_path: output_dir.join("lib").join(format!("{md_name}.so")),
            md_name,
            prebuilt,
        });
    }
    Ok(selected)
}
