//! Writing the prepared state into the work tree, touching only what differs.
//!
//! 1. **Plan and check** before the first write: every path must be creatable (components of at
//!    most 255 bytes); no directory on its way may be a symlink, except one that replaced a
//!    tracked directory (moved aside); what is in the way of a path becoming a file or a
//!    directory (untracked files, a directory that must become a file) is listed; so is the work
//!    tree of a submodule that the pinned commit no longer has. Any failure here leaves the tree
//!    as it was and names the path.
//! 2. **Move aside** what is in the way, into a backup directory under `.git/qola/backups/`
//!    (renamed, not copied: nothing of the user's is removed).
//! 3. A repository whose `HEAD` is not at its pinned commit (or that was just cloned, or has no
//!    index) is checked out there, detached; each old `HEAD` is kept as `refs/qola/kept/<id>`
//!    (and the latest as `refs/qola/previous-head`).
//! 4. Paths that must go are removed first (deepest first, with the directories they leave
//!    empty), then each path whose content differs from its target is written (through a
//!    temporary file and a rename). A path already right is not touched: its mtime stays. Just
//!    before a file is replaced its content is checked again: if it changed since the decision
//!    (an editor saved it meanwhile), it is copied into the backup first.
//! 5. Index entries are set: files the series creates are staged (so they are tracked and part of
//!    the fingerprint), files it deletes are unstaged, every other candidate goes back to its
//!    pinned entry. The index is written only when an entry changed.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::{IndexEntry, IndexTime, Oid, build::CheckoutBuilder};

use crate::common::io::is_absent;
use crate::common::tree_path::on_disk;
use crate::prepare::git::pinned::{Pinned, PinnedRepo, Pristine};
use crate::prepare::git::state::{Entry, PathState, workdir_entry};
use crate::prepare::patch::{FileContent, MODE_EXEC, MODE_SYMLINK};
use crate::prepare::report::error::io_error;
use crate::prepare::report::error::{PrepareError, Result, git_error};

/// The longest file name component Linux file systems take.
const NAME_MAX: usize = 255;

/// What one candidate path must become.
pub(crate) struct Target {
    /// The prepared content (`None`: absent).
    pub content: Option<FileContent>,
    /// The entry at the pinned commit (decides how the index records the path).
    pub pinned: PathState,
    /// Its state when the decision was taken (`None` inside: absent; `None` outside: not
    /// looked at, e.g. a fresh clone).
    pub observed: Option<PathState>,
}

/// What a sync did besides writing the prepared state.
#[derive(Debug, Default)]
pub(crate) struct Synced {
    /// The directory holding what was moved aside or saved (when anything was).
    pub backup: Option<PathBuf>,
    /// Paths that were in the way (untracked files, a symlink in place of a directory, the work
    /// tree of a removed submodule), moved into `backup`.
    pub moved_aside: Vec<String>,
    /// Files that changed between the decision and their replacement, copied into `backup`.
    pub changed_meanwhile: Vec<String>,
}

/// Where a sync puts what it must not lose; created on first use.
struct Backup {
    dir: PathBuf,
    used: bool,
}

impl Backup {
    fn target(&mut self, rel: &str) -> Result<PathBuf> {
        let to = crate::common::tree_path::on_disk(&self.dir, rel);
        let parent = to.parent().expect("a backup path has a parent");
        std::fs::create_dir_all(parent).map_err(io_error("create the backup directory", parent))?;
        self.used = true;
        Ok(to)
    }
}

/// The writes of a sync, planned and checked before the first one.
#[derive(Default)]
struct Checked {
    /// Work-tree paths (superproject-relative) to move into the backup first.
    move_aside: BTreeSet<String>,
}

/// Writes `targets` (superproject-relative paths) into the checkout; `backup_dir` receives what
/// is in the way. Nothing is written when the plan fails.
pub(crate) fn sync(
    root: &Path,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
    patch_for: &dyn Fn(&str) -> String,
    backup_dir: PathBuf,
) -> Result<Synced> {
    let plan = check_writes(root, pinned, targets, patch_for)?;
    let mut backup = Backup {
        dir: backup_dir,
        used: false,
    };
    let mut synced = Synced::default();
    for path in &plan.move_aside {
        let from = on_disk(root, path);
        let to = backup.target(path)?;
        std::fs::rename(&from, &to).map_err(io_error("move aside (into the backup)", &from))?;
        synced.moved_aside.push(path.clone());
    }
    for repo in &pinned.repos {
        checkout_pinned(repo)?;
        for other in &pinned.repos {
            other.ensure_gitdir_link()?;
        }
    }
    // Removals first, deepest first: a directory that must become a file is emptied before.
    for (path, _) in targets.iter().rev().filter(|(_, t)| t.content.is_none()) {
        let full = on_disk(root, path);
        if workdir_entry(&full)?.is_some() {
            std::fs::remove_file(&full).map_err(io_error("remove", &full))?;
            remove_empty_parents(root, &full);
        }
    }
    for (path, target) in targets {
        let Some(content) = &target.content else {
            continue;
        };
        let full = on_disk(root, path);
        let now = workdir_entry(&full)?;
        if now == Some(Entry::of(content)) {
            continue;
        }
        if keep_if_changed_meanwhile(&full, path, target, &now, &mut backup)? {
            synced.changed_meanwhile.push(path.clone());
        }
        write_path(&full, content)?;
    }
    for repo in &pinned.repos {
        update_index(repo, pinned, targets)?;
    }
    synced.backup = backup.used.then_some(backup.dir);
    Ok(synced)
}

/// Saves the file at `full` into the backup when it is neither what the decision saw nor the
/// pinned content a checkout above put there (an editor saved it meanwhile); returns whether
/// it did.
fn keep_if_changed_meanwhile(
    full: &Path,
    path: &str,
    target: &Target,
    now: &PathState,
    backup: &mut Backup,
) -> Result<bool> {
    let Some(observed) = &target.observed else {
        return Ok(false);
    };
    if now.is_none() || now == observed || *now == target.pinned {
        return Ok(false);
    }
    let to = backup.target(path)?;
    std::fs::copy(full, &to).map_err(io_error("save (into the backup)", full))?;
    Ok(true)
}

/// Checks every write of a sync before the first one and lists what must be moved aside.
fn check_writes(
    root: &Path,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
    patch_for: &dyn Fn(&str) -> String,
) -> Result<Checked> {
    let mut plan = Checked::default();
    let removed = |p: &str| targets.get(p).is_some_and(|t| t.content.is_none());
    for (path, target) in targets {
        let refuse = |why: String| PrepareError::UnsafePatchPath {
            patch: patch_for(path),
            path: path.clone(),
            why,
        };
        if let Some(long) = path.split('/').find(|c| c.len() > NAME_MAX) {
            return Err(refuse(format!(
                "has a name of {} bytes (`{}...`); the file system takes at most {NAME_MAX}",
                long.len(),
                &long[..40.min(long.len())]
            )));
        }
        if target.content.is_none() {
            continue;
        }
        // Every directory on the way.
        let parts: Vec<&str> = path.split('/').collect();
        for depth in 1..parts.len() {
            let prefix = parts[..depth].join("/");
            if removed(&prefix) {
                // Removed before any write (a file or symlink the series turns into a directory).
                break;
            }
            let meta = match std::fs::symlink_metadata(on_disk(root, &prefix)) {
                Ok(meta) => meta,
                Err(e) if is_absent(&e) => break,
                Err(e) => return Err(io_error("inspect", on_disk(root, &prefix))(e)),
            };
            if meta.file_type().is_symlink() {
                // A symlink where the pinned tree has a directory replaced it: it goes aside
                // with the rest of a forced run's edits. Any other is refused.
                if pinned.read(&prefix)? != Pristine::Directory {
                    return Err(refuse(format!(
                        "goes through `{prefix}`, a symlink in the work tree"
                    )));
                }
                plan.move_aside.insert(prefix);
                break;
            }
            if !meta.is_dir() {
                plan.move_aside.insert(prefix);
                break;
            }
        }
        // A directory where a file must be: whatever in it is not removed goes aside.
        let full = on_disk(root, path);
        if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir()) {
            for inside in files_under(&full)? {
                let rel = format!("{path}/{inside}");
                if !removed(&rel) {
                    plan.move_aside.insert(rel);
                }
            }
        }
    }
    // The work trees of submodules the pinned commits no longer have.
    for repo in &pinned.repos {
        for gone in submodules_leaving(repo, pinned)? {
            if root.join(&gone).exists() {
                plan.move_aside.insert(gone);
            }
        }
    }
    Ok(plan)
}

/// The files (and symlinks) under `dir`, relative to it.
fn files_under(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let here = dir.join(&rel);
        for entry in std::fs::read_dir(&here).map_err(io_error("read the directory", &here))? {
            let entry = entry.map_err(io_error("read the directory", &here))?;
            let child = rel.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(child);
            } else {
                out.push(crate::common::tree_path::key(
                    child.as_os_str().as_encoded_bytes(),
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Submodule paths (superproject-relative) that `repo`'s current `HEAD` has and its pinned
/// commit does not.
fn submodules_leaving(repo: &PinnedRepo, pinned: &Pinned) -> Result<Vec<String>> {
    let Some(head) = crate::prepare::git::head_commit(&repo.repo) else {
        return Ok(Vec::new());
    };
    if head == repo.commit || repo.repo.find_commit(head).is_err() {
        return Ok(Vec::new());
    }
    let old = crate::prepare::git::pinned::gitlinks(&repo.repo, head, &repo.workdir)?;
    let new = crate::prepare::git::pinned::gitlinks(&repo.repo, repo.commit, &repo.workdir)?;
    Ok(old
        .into_iter()
        .filter(|(path, _)| !new.iter().any(|(p, _)| p == path))
        .map(|(path, _)| crate::common::text::join(&repo.path, &path))
        .filter(|path| !pinned.repos.iter().any(|r| r.path == *path))
        .collect())
}

/// Checks the repository out at its pinned commit when `HEAD` is elsewhere, when it is new, or
/// when it has no index yet (a clone interrupted before its checkout).
fn checkout_pinned(repo: &PinnedRepo) -> Result<()> {
    let head = crate::prepare::git::head_commit(&repo.repo);
    let no_index = repo.repo.index().map(|i| i.is_empty()).unwrap_or(true);
    if !repo.fresh && head == Some(repo.commit) && !no_index {
        return Ok(());
    }
    let at = &repo.workdir;
    if let Some(old) = head.filter(|old| *old != repo.commit && !repo.fresh) {
        // The latest one under a fixed name, and every one under its own: a later resync never
        // makes an earlier commit unreachable.
        for name in ["refs/qola/previous-head".to_string(), kept_ref(old)] {
            repo.repo
                .reference(
                    &name,
                    old,
                    true,
                    "qola: HEAD before moving to the pinned commit",
                )
                .map_err(git_error("keep the previous HEAD", at))?;
        }
    }
    let commit = repo
        .repo
        .find_commit(repo.commit)
        .map_err(git_error("find the pinned commit", at))?;
    repo.repo
        .checkout_tree(commit.as_object(), Some(CheckoutBuilder::new().force()))
        .map_err(git_error(&format!("check out {}", repo.commit), at))?;
    repo.repo
        .set_head_detached(repo.commit)
        .map_err(git_error("detach HEAD at the pinned commit", at))
}

/// The ref that keeps a `HEAD` qola moved away from, until the user deletes it.
pub(crate) fn kept_ref(head: Oid) -> String {
    format!("refs/qola/kept/{head}")
}

/// Writes one work-tree file (the plan made sure nothing is in its way).
fn write_path(full: &Path, content: &FileContent) -> Result<()> {
    match std::fs::symlink_metadata(full) {
        Ok(meta) if meta.is_dir() => {
            std::fs::remove_dir(full).map_err(io_error("replace the (empty) directory", full))?;
        }
        Ok(_) if content.mode == MODE_SYMLINK => {
            std::fs::remove_file(full).map_err(io_error("remove", full))?;
        }
        _ => {}
    }
    let dir = full.parent().expect("a tree path has a parent");
    std::fs::create_dir_all(dir).map_err(io_error("create the directory", dir))?;
    if content.mode == MODE_SYMLINK {
        let target = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&content.data);
        return std::os::unix::fs::symlink(target, full)
            .map_err(io_error("create the symlink", full));
    }
    let tmp = dir.join(format!(
        ".{}.qola-tmp",
        full.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    std::fs::write(&tmp, &content.data).map_err(io_error("write", &tmp))?;
    let mode = if content.mode == MODE_EXEC {
        0o755
    } else {
        0o644
    };
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .map_err(io_error("set the mode of", &tmp))?;
    std::fs::rename(&tmp, full).map_err(io_error("rename into place", full))
}

/// Removes directories left empty by a deletion, up to `root` (git does not track directories).
fn remove_empty_parents(root: &Path, full: &Path) {
    let mut dir = full.parent();
    while let Some(d) = dir.filter(|d| d.starts_with(root) && *d != root) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

fn index_entry(rel: &str, entry: &Entry) -> Option<IndexEntry> {
    Some(IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: entry.mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: Oid::from_str(&entry.id).ok()?,
        flags: rel.len().min(0xfff) as u16,
        flags_extended: 0,
        path: crate::common::tree_path::bytes(rel).into_owned(),
    })
}

/// Sets the index entries of `repo`'s candidate paths (see the module docs).
fn update_index(
    repo: &PinnedRepo,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
) -> Result<()> {
    let at = &repo.workdir;
    let mut index = repo.repo.index().map_err(git_error("read the index", at))?;
    let mut changed = false;
    for (path, target) in targets {
        let (owner, rel) = pinned.owner(path);
        if owner.path != repo.path || rel.is_empty() {
            continue;
        }
        let rel_path = &crate::common::tree_path::as_path(rel);
        let current = index.get_path(rel_path, 0).map(|e| Entry {
            mode: e.mode,
            id: e.id.to_string(),
        });
        let prepared = target.content.as_ref().map(Entry::of);
        let created = target.pinned.is_none() && prepared.is_some();
        let wanted = if created {
            prepared
        } else if prepared.is_none() {
            None
        } else {
            target.pinned.clone()
        };
        if current == wanted {
            continue;
        }
        changed = true;
        match &wanted {
            None => index
                .remove_path(rel_path)
                .map_err(git_error(&format!("unstage {path}"), at))?,
            Some(_) if created => index
                .add_path(rel_path)
                .map_err(git_error(&format!("stage {path}"), at))?,
            Some(entry) => {
                let entry = index_entry(rel, entry).ok_or_else(|| PrepareError::Git {
                    what: format!("restore the index entry of {path}"),
                    path: at.clone(),
                    source: git2::Error::from_str("bad blob id"),
                })?;
                index
                    .add(&entry)
                    .map_err(git_error(&format!("restore the index entry of {path}"), at))?
            }
        }
    }
    if changed {
        index.write().map_err(git_error("write the index", at))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> PathState {
        Some(Entry::of(&FileContent {
            mode: crate::prepare::patch::MODE_FILE,
            data: text.as_bytes().to_vec(),
        }))
    }

    #[test]
    fn a_file_edited_between_the_decision_and_its_replacement_is_saved_first() {
        let tmp = tempfile::tempdir().unwrap();
        let full = tmp.path().join("f.h");
        let mut backup = Backup {
            dir: tmp.path().join("backup"),
            used: false,
        };
        let target = Target {
            content: None,
            pinned: entry("pinned\n"),
            observed: Some(entry("seen by the decision\n")),
        };
        for (text, saved) in [
            ("seen by the decision\n", false),
            ("pinned\n", false),
            ("saved by an editor meanwhile\n", true),
        ] {
            std::fs::write(&full, text).unwrap();
            let now = workdir_entry(&full).unwrap();
            let kept = keep_if_changed_meanwhile(&full, "f.h", &target, &now, &mut backup).unwrap();
            assert_eq!(kept, saved, "{text}");
        }
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("backup/f.h")).unwrap(),
            "saved by an editor meanwhile\n"
        );
        assert!(backup.used);
    }
}
