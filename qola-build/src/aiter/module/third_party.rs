//! A module's `third_party`: the checkouts AITER's build clones for it while building
//! (`clone_3rdparty` of the tree's `aiter/jit/core.py`, AITER 7a24cd87 and later). qola never
//! fetches during a build, so each name is served from what is on disk, as AITER's build would
//! use it:
//!
//! | name | AITER's build | qola |
//! |---|---|---|
//! | `ComposableKernel` | nothing (the submodule) | nothing: the submodule qola prepared |
//! | `HipKittens` | clones it into `HIP_KITTENS_DIR` (default `<tree>/3rdparty/HipKittens`) at the commit `core.py` names, and includes its `include/` | includes `<dir>/include`; a missing directory is an error saying where to clone which commit |
//! | any other | what `core.py` says | an error: qola does not know what it needs |
//!
//! A name the tree's `core.py` does not know (AITER 05a0d1f knows none) is an error.

use std::path::{Path, PathBuf};

use crate::build_script::Env;

/// The include directories the module's `third_party` names add, or why they cannot be had.
pub(crate) fn includes(
    root: &Path,
    names: &[String],
    env: &Env,
) -> std::result::Result<Vec<PathBuf>, String> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let core = root.join("aiter/jit/core.py");
    let text = std::fs::read_to_string(&core).unwrap_or_default();
    let known = known_names(&text);
    let mut includes = Vec::new();
    for name in names {
        if !known.iter().any(|k| k == name) {
            return Err(format!(
                "{name:?} is no third-party checkout of this AITER's build ({} knows {}): remove it, or pin an AITER whose build has it",
                core.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
        match name.as_str() {
            "ComposableKernel" => {}
            "HipKittens" => {
                let dir = match env.var("HIP_KITTENS_DIR").map_err(|e| e.to_string())? {
                    Some(dir) => PathBuf::from(dir),
                    None => root.join("3rdparty/HipKittens"),
                };
                if !dir.join("include").is_dir() {
                    return Err(format!(
                        "AITER's build clones HipKittens{} into {} while building; qola never fetches during a build: clone it there first (or set HIP_KITTENS_DIR to a checkout)",
                        commit_of(&text, name)
                            .map(|c| format!(" at {c}"))
                            .unwrap_or_default(),
                        dir.display()
                    ));
                }
                includes.push(dir.join("include"));
            }
            other => {
                return Err(format!(
                    "qola does not know what AITER's build needs for the third-party checkout {other:?}: build this module with AITER's own tools"
                ));
            }
        }
    }
    Ok(includes)
}

/// The names `clone_3rdparty` handles (`third_party == "NAME"`).
fn known_names(core: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for piece in core.split("third_party == \"").skip(1) {
        if let Some(name) = piece.split('"').next()
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_string());
        }
    }
    names
}

/// The commit `core.py` clones `name` at (its `"commit": "<sha>"` after the name's branch).
fn commit_of(core: &str, name: &str) -> Option<String> {
    let branch = core.split(&format!("third_party == \"{name}\"")).nth(1)?;
    let branch = branch.split("elif ").next()?;
    let after = branch.split("\"commit\":").nth(1)?;
    Some(after.split('"').nth(1)?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_and_commits_are_read_from_cores_clone_3rdparty() {
        let core = "    if third_party == \"HipKittens\":\n        dir_path = HIP_KITTENS_DIR\n        third_party_info = {\n            \"url\": \"https://github.com/HazyResearch/HipKittens.git\",\n            \"commit\": \"a5e308a7ec633b1e94a952de629f41653a0874f3\",\n        }\n    elif third_party == \"ComposableKernel\":\n        pass\n";
        assert_eq!(known_names(core), ["HipKittens", "ComposableKernel"]);
        assert_eq!(
            commit_of(core, "HipKittens").as_deref(),
            Some("a5e308a7ec633b1e94a952de629f41653a0874f3")
        );
        assert_eq!(commit_of(core, "ComposableKernel"), None);
        assert!(known_names("def build_module(md_name):\n").is_empty());
    }
}
