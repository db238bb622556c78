//! Where a manifest's relative `patches_dir` is.
//!
//! qola reads a relative `patches_dir` against the manifest's directory, so a manifest means the
//! same series from wherever it is run. QoLA reads it against the working directory, so a
//! manifest written for QoLA and run from a build directory (TransformerEngine's CMake runs QoLA
//! from its build tree) may name a series only that reading finds. The decision, from what
//! exists under each reading:
//!
//! | relative to the manifest | relative to the working directory | series used |
//! |---|---|---|
//! | any | the same directory | that one |
//! | exists | missing | the manifest's |
//! | missing | exists | the working directory's, with a warning naming both |
//! | exists | exists, the same patches (names and bytes) | the manifest's |
//! | exists | exists, other patches | none: an error naming both |
//! | missing | missing | the manifest's (reading it fails, naming it) |
//!
//! An absolute `patches_dir`, `--patches-dir` and `QOLA_PATCHES_DIR` are taken as given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::prepare::report::{PrepareError, Result};

/// What is found at one reading of `patches_dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing (or not a directory).
    Missing,
    /// A directory.
    Dir,
}

/// Which reading is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Relative to the manifest (qola's reading).
    Manifest,
    /// Relative to the working directory (QoLA's reading), with a warning.
    WorkingDir,
    /// Both exist with other patches: refused.
    Ambiguous,
}

/// The decision of the table above. `same` says whether the two readings are one directory or
/// hold the same patches (asked only when both exist).
pub(crate) fn choose(by_manifest: Found, by_cwd: Found, same: impl FnOnce() -> bool) -> Choice {
    match (by_manifest, by_cwd) {
        (Found::Missing, Found::Dir) => Choice::WorkingDir,
        (Found::Dir, Found::Dir) if !same() => Choice::Ambiguous,
        _ => Choice::Manifest,
    }
}

/// The series directory a manifest's `patches_dir = written` names, and a warning when it is
/// the working directory's reading.
pub(crate) fn locate(
    written: &Path,
    manifest: &Path,
    cwd: &Path,
) -> Result<(PathBuf, Option<String>)> {
    let by_manifest = manifest.parent().unwrap_or(Path::new(".")).join(written);
    if written.is_absolute() {
        return Ok((by_manifest, None));
    }
    let by_cwd = cwd.join(written);
    let found = |p: &Path| {
        if p.is_dir() {
            Found::Dir
        } else {
            Found::Missing
        }
    };
    let same = || {
        by_manifest.canonicalize().ok() == by_cwd.canonicalize().ok()
            || patches(&by_manifest) == patches(&by_cwd)
    };
    match choose(found(&by_manifest), found(&by_cwd), same) {
        Choice::Manifest => Ok((by_manifest, None)),
        Choice::WorkingDir => {
            let warning = format!(
                "{}: patches_dir = \"{}\" is read relative to the working directory, {} (as QoLA reads it): relative to the manifest, as qola reads it, {} does not exist; write the path relative to the manifest (or absolute) to silence this",
                manifest.display(),
                written.display(),
                by_cwd.display(),
                by_manifest.display()
            );
            Ok((by_cwd, Some(warning)))
        }
        Choice::Ambiguous => Err(PrepareError::PatchesDirAmbiguous {
            manifest: manifest.to_path_buf(),
            written: written.to_path_buf(),
            by_manifest,
            by_cwd,
        }),
    }
}

/// The `*.patch` files of a directory by name, with their bytes (`None`: unreadable).
fn patches(dir: &Path) -> Option<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".patch") {
            out.insert(name, std::fs::read(entry.path()).ok()?);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_of_the_table_chooses_as_documented() {
        use Choice::*;
        use Found::*;
        let rows = [
            (Dir, Missing, None, Manifest),
            (Missing, Dir, None, WorkingDir),
            (Dir, Dir, Some(true), Manifest),
            (Dir, Dir, Some(false), Ambiguous),
            (Missing, Missing, None, Manifest),
        ];
        for (by_manifest, by_cwd, same, expected) in rows {
            let asked = std::cell::Cell::new(false);
            let choice = choose(by_manifest, by_cwd, || {
                asked.set(true);
                same.unwrap()
            });
            assert_eq!(choice, expected, "{by_manifest:?} {by_cwd:?} {same:?}");
            assert_eq!(
                asked.get(),
                same.is_some(),
                "same asked only when both exist"
            );
        }
    }

    #[test]
    fn a_series_only_the_working_directory_finds_is_used_with_a_warning_and_two_differing_are_refused()
     {
        let tmp = tempfile::tempdir().unwrap();
        let (project, build) = (tmp.path().join("te"), tmp.path().join("te/build"));
        std::fs::create_dir_all(build.join("patches")).unwrap();
        std::fs::write(build.join("patches/0001-a.patch"), "a").unwrap();
        let manifest = project.join("manifest.toml");
        let written = Path::new("patches");

        let (dir, warning) = locate(written, &manifest, &build).unwrap();
        assert_eq!(dir, build.join("patches"));
        let warning = warning.unwrap();
        assert!(
            warning.contains(&build.join("patches").display().to_string())
                && warning.contains(&project.join("patches").display().to_string()),
            "{warning}"
        );

        // The same patches at both: the manifest's, silently.
        std::fs::create_dir_all(project.join("patches")).unwrap();
        std::fs::write(project.join("patches/0001-a.patch"), "a").unwrap();
        assert_eq!(
            locate(written, &manifest, &build).unwrap(),
            (project.join("patches"), None)
        );
        // Other patches: refused, naming both.
        std::fs::write(project.join("patches/0001-a.patch"), "b").unwrap();
        let e = locate(written, &manifest, &build).unwrap_err().to_string();
        assert!(
            e.contains(&build.join("patches").display().to_string())
                && e.contains(&project.join("patches").display().to_string()),
            "{e}"
        );
        // Run from the manifest's directory: one reading, no question.
        assert_eq!(
            locate(written, &manifest, &project).unwrap(),
            (project.join("patches"), None)
        );
    }
}
