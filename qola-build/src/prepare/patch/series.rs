//! The patch series: every `*.patch` of a directory in file-name order, applied in memory to the
//! pristine pinned tree. One patch may touch the superproject and any submodule; a path's owner
//! is decided later, when the result is written. The series is all-or-nothing: the first failure
//! returns an error and nothing has been written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::binary::apply_delta;
use super::hunks::apply_hunks;
use super::model::{
    BinaryData, Body, FileFailure, FilePatch, Patch, PatchFile, PristineTree, Series, failure,
};
use super::parse::parse_patch;
use super::three_way::{ThreeWay, three_way};
use crate::prepare::git::Pristine;
use crate::prepare::git::{FileContent, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK, blob_id};
use crate::prepare::report::{PrepareError, Result};

/// Where a preparation's series comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SeriesSource {
    /// No patches (no manifest and no directory given).
    None,
    /// Every `*.patch` of a directory.
    Dir(PathBuf),
    /// qola's own series for the commit given (a manifest without `patches_dir`).
    Bundled(Option<String>),
}

/// The series of `source`.
pub(crate) fn load_series(source: &SeriesSource) -> Result<Series> {
    match source {
        SeriesSource::None => Ok(Series::default()),
        SeriesSource::Dir(dir) => load_dir(dir),
        SeriesSource::Bundled(commit) => Ok(super::bundled::bundled_series(commit.as_deref())),
    }
}

/// Reads every `*.patch` in `dir`, sorted by file name.
fn load_dir(dir: &Path) -> Result<Series> {
    let read_err = |source| PrepareError::PatchesDir {
        dir: dir.to_path_buf(),
        source,
    };
    // As QoLA reads a series: every `*.patch` (a glob, which passes over hidden files), sorted
    // by name; anything else named so is not a patch and is refused rather than skipped.
    let mut patches = Vec::new();
    let mut hidden = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".patch") {
            continue;
        }
        if name.starts_with('.') {
            hidden.push(name);
            continue;
        }
        if !entry.path().is_file() {
            let what = match std::fs::metadata(entry.path()) {
                Ok(meta) if meta.is_dir() => "a directory",
                Ok(_) => "not a regular file",
                Err(_) => "a link to nothing",
            };
            return Err(PrepareError::NotAPatch {
                path: entry.path(),
                what: what.to_string(),
            });
        }
        let bytes = std::fs::read(entry.path()).map_err(read_err)?;
        patches.push(PatchFile {
            name,
            path: entry.path(),
            bytes,
        });
    }
    patches.sort_by(|a, b| a.name.cmp(&b.name));
    hidden.sort();
    let warnings = if hidden.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "the patch series in {} has hidden files named *.patch, which are not part of it (as QoLA reads a series): {}",
            dir.display(),
            hidden.join(", ")
        )]
    };
    Ok(Series {
        dir: Some(dir.to_path_buf()),
        bundled: false,
        written_for: Vec::new(),
        patches,
        warnings,
    })
}

/// The series applied: the paths whose content differs from the pinned tree.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// Expected content by path (`None`: the series deletes the path).
    pub files: BTreeMap<String, Option<FileContent>>,
    /// Hunks applied at an offset and files merged three-way, as messages.
    pub notes: Vec<String>,
}

/// Applies the whole series to `base`; `pinned` names the commit in messages.
pub(crate) fn apply_series(
    series: &Series,
    base: &dyn PristineTree,
    pinned: &str,
) -> Result<Applied> {
    let mut tree = Overlay {
        base,
        files: BTreeMap::new(),
    };
    let mut notes = Vec::new();
    for file in &series.patches {
        let patch =
            parse_patch(&file.name, &file.bytes).map_err(|e| PrepareError::PatchSyntax {
                patch: file.path.clone(),
                line: e.line,
                message: e.message,
            })?;
        // `git diff` in a superproject adds `Subproject commit X-dirty` for a submodule with
        // changes: no change of the submodule's commit, nothing to apply.
        let sections: Vec<&FilePatch> = patch
            .files
            .iter()
            .filter(|s| !s.is_dirty_submodule_marker())
            .collect();
        for section in sections {
            // `git apply` makes a submodule entry (an empty directory) for a new gitlink and
            // removes one for a deleted gitlink: qola does not add or remove submodules through
            // patches.
            if section.old_mode == Some(MODE_GITLINK) || section.new_mode == Some(MODE_GITLINK) {
                return Err(PrepareError::UnsafePatchPath {
                    patch: patch.name.clone(),
                    path: section.display_path().to_string(),
                    why: "adds or removes a submodule (mode 160000); qola does not patch submodules in or out: pin an AITER commit that has (or lacks) it".to_string(),
                });
            }
            // Checked against the tree as the sections before it left it: a symlink created by
            // this patch or an earlier one is seen before a path goes through it.
            for path in [&section.old_path, &section.new_path].into_iter().flatten() {
                check_path(&patch.name, path, &tree)?;
            }
            match apply_section(section, &mut tree) {
                Ok(said) => notes.extend(said.into_iter().map(|note| {
                    format!("patch {}: {} {note}", patch.name, section.display_path())
                })),
                Err(failure) => {
                    let upstream = reverse_applies(&patch, base).then(|| pinned.into());
                    return Err(PrepareError::PatchFailed {
                        patch: patch.name.clone(),
                        file: section.display_path().to_string(),
                        hunk: failure.hunk,
                        detail: failure.detail,
                        upstream,
                    });
                }
            }
        }
    }
    // Keep only what differs from the pinned tree.
    let mut files = BTreeMap::new();
    for (path, content) in tree.files {
        let pristine = match base.read(&path)? {
            Pristine::File(f) => Some(f),
            _ => None,
        };
        if pristine != content {
            files.insert(path, content);
        }
    }
    Ok(Applied { files, notes })
}

/// The pinned tree with the changes of the patches applied so far.
struct Overlay<'b> {
    base: &'b dyn PristineTree,
    files: BTreeMap<String, Option<FileContent>>,
}

impl Overlay<'_> {
    /// The path as the patches so far left it: a directory is one while it holds a file (created
    /// by a patch, or pinned and not deleted).
    fn read(&self, path: &str) -> Result<Pristine> {
        let inside = format!("{path}/");
        let holds_new = || {
            self.files
                .range(inside.clone()..)
                .take_while(|(p, _)| p.starts_with(&inside))
                .any(|(_, c)| c.is_some())
        };
        match self.files.get(path) {
            Some(Some(content)) => Ok(Pristine::File(content.clone())),
            Some(None) if holds_new() => Ok(Pristine::Directory),
            Some(None) => Ok(Pristine::Absent),
            None => match self.base.read(path)? {
                Pristine::Directory if !holds_new() => {
                    let emptied = self.base.files_under(path)?.is_some_and(|files| {
                        files
                            .iter()
                            .all(|f| matches!(self.files.get(f), Some(None)))
                    });
                    Ok(if emptied {
                        Pristine::Absent
                    } else {
                        Pristine::Directory
                    })
                }
                Pristine::Absent if holds_new() => Ok(Pristine::Directory),
                other => Ok(other),
            },
        }
    }
}

/// Refuses paths that would leave the tree or write through a link: absolute, `..`, `.`, empty
/// components, `.git`, a symlink or submodule pointer on the way, or the submodule pointer itself.
fn check_path(patch: &str, path: &str, tree: &Overlay) -> Result<()> {
    let refuse = |why: &str| PrepareError::UnsafePatchPath {
        patch: patch.to_string(),
        path: path.to_string(),
        why: why.to_string(),
    };
    if path.starts_with('/') {
        return Err(refuse("is absolute"));
    }
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts {
        match *part {
            "" => return Err(refuse("has an empty component")),
            "." | ".." => return Err(refuse("has a `.` or `..` component (leaves the tree)")),
            p if p.eq_ignore_ascii_case(".git") => {
                return Err(refuse("goes into a .git directory"));
            }
            _ => {}
        }
    }
    for depth in 1..=parts.len() {
        let prefix = parts[..depth].join("/");
        match tree.read(&prefix)? {
            Pristine::File(f) if f.mode == MODE_SYMLINK && depth < parts.len() => {
                return Err(refuse(&format!("goes through the symlink `{prefix}`")));
            }
            Pristine::File(_) if depth < parts.len() => {
                return Err(refuse(&format!(
                    "needs `{prefix}` to be a directory, but it is a file"
                )));
            }
            Pristine::Gitlink if depth == parts.len() => {
                return Err(refuse(
                    "is a submodule pointer (gitlink); qola does not patch submodule commits: pin another AITER commit instead",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Applies one file section; returns what to tell (hunks that moved, a three-way merge).
fn apply_section(
    section: &FilePatch,
    tree: &mut Overlay,
) -> std::result::Result<Vec<String>, FileFailure> {
    let whole = "(whole file)";
    let read =
        |tree: &Overlay, path: &str| -> std::result::Result<Option<FileContent>, FileFailure> {
            match tree.read(path) {
                Ok(Pristine::File(f)) => Ok(Some(f)),
                Ok(Pristine::Absent) => Ok(None),
                Ok(Pristine::Directory) => Err(failure(whole, format!("`{path}` is a directory"))),
                Ok(Pristine::Gitlink) => Err(failure(whole, format!("`{path}` is a submodule"))),
                Err(e) => Err(failure(whole, e.to_string())),
            }
        };
    let old = match &section.old_path {
        Some(path) => match read(tree, path)? {
            Some(content) => Some(content),
            None => return Err(failure(whole, "the file does not exist in the tree")),
        },
        None => None,
    };
    let new_mode = section.new_path.as_ref().and(section.new_mode);
    if let (Some(mode), Some(file)) = (section.old_mode.or(new_mode), &old)
        && mode & 0o170000 != file.mode & 0o170000
    {
        return Err(failure(
            whole,
            format!(
                "the patch expects mode {mode:o} but the file has {:o} (wrong type)",
                file.mode
            ),
        ));
    }
    if let Some(new) = &section.new_path {
        let is_move = section.old_path.as_deref() != Some(new.as_str());
        if is_move && read(tree, new)?.is_some() {
            return Err(failure(
                whole,
                "the patch creates the file but it already exists",
            ));
        }
    }
    let mut notes = Vec::new();
    let data = patched_content(section, old.as_ref(), tree, &mut notes)?;
    place(section, old.as_ref(), data, tree)?;
    Ok(notes)
}

/// The content a file section gives the file `old` (`None`: it does not exist yet); hunks that
/// moved and a three-way merge are told in `notes`.
fn patched_content(
    section: &FilePatch,
    old: Option<&FileContent>,
    tree: &Overlay,
    notes: &mut Vec<String>,
) -> std::result::Result<Vec<u8>, FileFailure> {
    let old_data = old.map(|f| f.data.as_slice()).unwrap_or(b"");
    Ok(match &section.body {
        Body::None => old_data.to_vec(),
        Body::Text(hunks) => match apply_hunks(old_data, hunks, false) {
            Ok(applied) => {
                notes.extend(applied.offsets.into_iter().map(|(hunk, by)| {
                    format!("hunk {hunk} applied {by:+} lines from where it says")
                }));
                applied.data
            }
            Err(f) => {
                let direct = "its context and removed lines match nowhere after the previous hunk (qola applies with offsets, never with fuzz)";
                match three_way(section, old_data, hunks, tree.base)? {
                    ThreeWay::Merged { data, base } => {
                        notes.push(format!(
                            "did not apply as it is; merged three-way from the blob {base} it was made from, as `git apply --3way` does"
                        ));
                        data
                    }
                    ThreeWay::NoBase(why) => {
                        return Err(failure(&f.header, format!("{direct}; {why}")));
                    }
                }
            }
        },
        Body::Binary(forward) => {
            if let Some(expected) = section.old_id.as_deref().filter(|id| id.len() == 40)
                && old.is_some()
                && blob_id(old_data) != expected
            {
                return Err(failure(
                    "GIT binary patch",
                    format!("the file is not the blob {expected} the binary patch was made from"),
                ));
            }
            match forward {
                BinaryData::Literal(data) => data.clone(),
                BinaryData::Delta(delta) => apply_delta(old_data, delta).ok_or_else(|| {
                    failure("GIT binary patch", "the binary delta does not fit the file")
                })?,
            }
        }
        Body::BinaryWithoutData => {
            return Err(failure(
                "Binary files differ",
                "the patch has no binary data; regenerate it with `git diff --binary` or `qola diff`",
            ));
        }
    })
}

/// Puts the section's result `data` in the overlay: the new path, or the deletion.
fn place(
    section: &FilePatch,
    old: Option<&FileContent>,
    data: Vec<u8>,
    tree: &mut Overlay,
) -> std::result::Result<(), FileFailure> {
    let whole = "(whole file)";
    match &section.new_path {
        None => {
            if !data.is_empty() {
                return Err(failure(
                    whole,
                    "the patch deletes the file but its content differs",
                ));
            }
            if let Some(path) = &section.old_path {
                tree.files.insert(path.clone(), None);
            }
        }
        Some(new) => {
            let mode = section
                .new_mode
                .or(old.map(|f| f.mode))
                .unwrap_or(MODE_FILE);
            let mode = match mode {
                MODE_EXEC | MODE_SYMLINK => mode,
                _ => MODE_FILE,
            };
            if let Some(old_path) = section.old_path.as_ref().filter(|p| *p != new)
                && !section.copy
            {
                tree.files.insert(old_path.clone(), None);
            }
            tree.files
                .insert(new.clone(), Some(FileContent { mode, data }));
        }
    }
    Ok(())
}

/// Whether `patch` is already in the pristine tree: every section reverse-applies there.
fn reverse_applies(patch: &Patch, base: &dyn PristineTree) -> bool {
    patch.files.iter().all(|section| {
        let current = |path: &Option<String>| match path.as_deref().map(|p| base.read(p)) {
            Some(Ok(Pristine::File(f))) => Some(f),
            _ => None,
        };
        let Some(new_path) = &section.new_path else {
            return current(&section.old_path).is_none();
        };
        let Some(now) = current(&Some(new_path.clone())) else {
            return false;
        };
        match &section.body {
            Body::Text(hunks) => apply_hunks(&now.data, hunks, true)
                .is_ok_and(|a| section.old_path.is_some() || a.data.is_empty()),
            Body::Binary(BinaryData::Literal(data)) => *data == now.data,
            Body::None => section.new_mode.is_none_or(|m| m == now.mode),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree(BTreeMap<String, Pristine>);

    impl PristineTree for Tree {
        fn read(&self, path: &str) -> Result<Pristine> {
            Ok(self.0.get(path).cloned().unwrap_or(Pristine::Absent))
        }
    }

    fn file(data: &str) -> Pristine {
        Pristine::File(FileContent {
            mode: MODE_FILE,
            data: data.as_bytes().to_vec(),
        })
    }

    fn series(patches: &[(&str, &str)]) -> Series {
        Series {
            dir: None,
            bundled: false,
            written_for: Vec::new(),
            patches: patches
                .iter()
                .map(|(name, text)| PatchFile {
                    name: name.to_string(),
                    path: PathBuf::from(name),
                    bytes: text.as_bytes().to_vec(),
                })
                .collect(),
            warnings: Vec::new(),
        }
    }

    fn tree() -> Tree {
        Tree(BTreeMap::from([
            ("a.txt".to_string(), file("1\n2\n3\n")),
            ("ck".to_string(), Pristine::Gitlink),
            ("ck/k.h".to_string(), file("x\n")),
            (
                "link".to_string(),
                Pristine::File(FileContent {
                    mode: MODE_SYMLINK,
                    data: b"/etc".to_vec(),
                }),
            ),
        ]))
    }

    const EDIT_A: &str = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n";

    #[test]
    fn later_patches_see_earlier_ones() {
        let second = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-two\n+TWO\n 3\n";
        let out = apply_series(&series(&[("1", EDIT_A), ("2", second)]), &tree(), "c").unwrap();
        assert_eq!(out.files["a.txt"].as_ref().unwrap().data, b"1\nTWO\n3\n");
    }

    #[test]
    fn already_applied_patch_gets_the_upstream_hint() {
        let mut t = tree();
        t.0.insert("a.txt".into(), file("1\ntwo\n3\n"));
        let e = apply_series(&series(&[("0001-x.patch", EDIT_A)]), &t, "abc123").unwrap_err();
        let PrepareError::PatchFailed { upstream, hunk, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(upstream.as_deref(), Some("abc123"));
        assert_eq!(hunk, "@@ -1,3 +1,3 @@");
        assert!(e.to_string().contains("drop 0001-x.patch"), "{e}");
    }

    #[test]
    fn escaping_paths_are_refused() {
        for bad in [
            "../x",
            "ck/../../x",
            "/etc/passwd",
            "link/passwd",
            ".git/config",
            "ck",
        ] {
            let p = format!("--- a/{bad}\n+++ b/{bad}\n@@ -1 +1 @@\n-x\n+y\n");
            let e = apply_series(&series(&[("p", &p)]), &tree(), "c").unwrap_err();
            assert!(
                matches!(e, PrepareError::UnsafePatchPath { .. }),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn dirty_submodule_marker_is_skipped_but_a_submodule_bump_is_refused() {
        let marker = "diff --git a/ck b/ck\n--- a/ck\n+++ b/ck\n@@ -1 +1 @@\n-Subproject commit 01bc\n+Subproject commit 01bc-dirty\n";
        let out = apply_series(
            &series(&[("1", &format!("{marker}{EDIT_A}"))]),
            &tree(),
            "c",
        )
        .unwrap();
        assert!(out.files.contains_key("a.txt"));
        let bump = marker.replace("01bc-dirty", "9999");
        let e = apply_series(&series(&[("1", &bump)]), &tree(), "c").unwrap_err();
        assert!(e.to_string().contains("submodule pointer"), "{e}");
    }

    #[test]
    fn a_symlink_created_earlier_in_the_same_patch_is_not_written_through() {
        let p = "diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+../../victim\n\\ No newline at end of file\ndiff --git a/evil/x b/evil/x\nnew file mode 100644\n--- /dev/null\n+++ b/evil/x\n@@ -0,0 +1 @@\n+owned\n";
        let e = apply_series(&series(&[("p", p)]), &tree(), "c").unwrap_err();
        assert!(
            matches!(&e, PrepareError::UnsafePatchPath { path, .. } if path == "evil/x"),
            "{e}"
        );
        // Split over two patches: the same.
        let (first, second) = p.split_at(p.find("diff --git a/evil/x").unwrap());
        let e = apply_series(&series(&[("1", first), ("2", second)]), &tree(), "c").unwrap_err();
        assert!(e.to_string().contains("symlink `evil`"), "{e}");
    }

    #[test]
    fn a_file_under_a_file_is_refused() {
        let p = "diff --git a/a.txt/x b/a.txt/x\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt/x\n@@ -0,0 +1 @@\n+x\n";
        let e = apply_series(&series(&[("p", p)]), &tree(), "c").unwrap_err();
        assert!(e.to_string().contains("it is a file"), "{e}");
    }

    #[test]
    fn create_then_delete_leaves_nothing() {
        let create =
            "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+n\n";
        let delete = "diff --git a/n b/n\ndeleted file mode 100644\n--- a/n\n+++ /dev/null\n@@ -1 +0,0 @@\n-n\n";
        let out = apply_series(&series(&[("1", create), ("2", delete)]), &tree(), "c").unwrap();
        assert!(out.files.is_empty());
    }
}
