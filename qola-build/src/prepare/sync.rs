//! Writing the prepared state into the work tree, touching only what differs, every write
//! through the preparation's journal (see `journal`: an error or a kill never leaves it half
//! written).
//!
//! 1. **Plan and check** before the first write: every path must be creatable (components of at
//!    most 255 bytes, no deeper than libgit2 reads back); no directory on its way may be a
//!    symlink, except one that replaced a tracked directory (moved aside); what is in the way of
//!    a path becoming a file or a directory (untracked files, a directory that must become a
//!    file) is listed; so is the work tree of a submodule that the pinned commit no longer has.
//!    Any failure here leaves the tree as it was and names the path.
//! 2. **Move aside** what is in the way, into a backup directory under `.git/qola/backups/`
//!    (renamed, not copied: nothing of the user's is removed).
//! 3. Each repository's `HEAD` goes to its pinned commit, detached; each old `HEAD` is kept as
//!    `refs/qola/kept/<id>` (and the latest as `refs/qola/previous-head`). A repository without
//!    a work tree yet (just cloned, never checked out, no index) is checked out from scratch;
//!    any other one's files are written path by path below (every path that differs between its
//!    old `HEAD` and the pinned commit is a candidate).
//! 4. Paths that must go are removed first (deepest first, with the directories they leave
//!    empty), then each path whose content differs from its target is written (through a
//!    temporary file and a rename), the paths each patch of the series leaves last together, in
//!    the series' order. A path already right is not touched: its mtime stays. Just before a
//!    file is replaced its content is checked again: if it changed since the decision (an editor
//!    saved it meanwhile), it is copied into the backup first.
//! 5. Index entries are set: files the series creates are staged (so they are tracked and part of
//!    the fingerprint), files it deletes are unstaged, every other candidate goes back to its
//!    pinned entry, and each submodule's entry in its parent is its pinned commit. An index is
//!    written only when an entry changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{IndexEntry, IndexTime, Oid, build::CheckoutBuilder};

use crate::common::io::io_error;
use crate::common::io::is_absent;
use crate::common::tree_path::on_disk;
use crate::prepare::git::{Entry, PathState, workdir_entry};
use crate::prepare::git::{Pinned, PinnedRepo, Pristine};
use crate::prepare::journal::Journal;
use crate::prepare::patch::{FileContent, MODE_GITLINK};
use crate::prepare::report::{PrepareError, Result, git_error};

/// The longest file name component Linux file systems take.
const NAME_MAX: usize = 255;

/// The deepest path libgit2 reads back ("directory nesting too deep").
const MAX_DEPTH: usize = 100;

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
    /// Where `rel` goes in the backup (its directories are made by whoever writes there).
    fn path(&mut self, rel: &str) -> PathBuf {
        self.used = true;
        crate::common::tree_path::on_disk(&self.dir, rel)
    }
}

/// The writes of a sync, planned and checked before the first one ([`check_writes`]).
#[derive(Default)]
pub(crate) struct Checked {
    /// Work-tree paths (superproject-relative) to move into the backup first.
    move_aside: BTreeSet<String>,
}

/// The patch series as [`sync`] names it in what it reports: the patches in order, and which
/// of them leaves a path (`None`: the pinned content).
pub(crate) struct SeriesNames<'a> {
    /// The patches, in order.
    pub patches: &'a [String],
    /// The patch that leaves a path.
    pub patch_for: &'a dyn Fn(&str) -> Option<String>,
}

/// Writes `targets` (superproject-relative paths) into the checkout, through `journal`, as
/// `plan` (checked before) says; `backup_dir` receives what is in the way; `series` names the
/// patches.
pub(crate) fn sync(
    root: &Path,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
    plan: &Checked,
    series: &SeriesNames,
    backup_dir: PathBuf,
    journal: &mut Journal,
) -> Result<Synced> {
    let (patches, patch_for) = (series.patches, series.patch_for);
    let mut backup = Backup {
        dir: backup_dir,
        used: false,
    };
    let mut synced = Synced::default();
    for path in &plan.move_aside {
        let from = on_disk(root, path);
        let to = backup.path(path);
        journal.move_path(&from, &to)?;
        synced.moved_aside.push(path.clone());
    }
    for repo in &pinned.repos {
        move_head(repo, journal)?;
        for other in &pinned.repos[1..] {
            link_gitdir(other, journal)?;
        }
        journal.step(&if repo.path.is_empty() {
            "superproject-checkout".to_string()
        } else {
            format!("submodule-checkout:{}", repo.path)
        });
    }
    // Removals first, deepest first: a directory that must become a file is emptied before.
    for (path, _) in targets.iter().rev().filter(|(_, t)| t.content.is_none()) {
        let full = on_disk(root, path);
        if workdir_entry(&full)?.is_some() {
            journal.remove_file(&full)?;
            remove_empty_parents(root, &full, journal)?;
        }
    }
    // Then the writes, the pinned content first, then what each patch leaves, in order (each
    // patch a step, whether it leaves a path last or not).
    let mut groups: BTreeMap<Option<String>, Vec<(&String, &Target)>> = BTreeMap::new();
    for (path, target) in targets.iter().filter(|(_, t)| t.content.is_some()) {
        groups
            .entry(patch_for(path))
            .or_default()
            .push((path, target));
    }
    let order = std::iter::once(None).chain(patches.iter().cloned().map(Some));
    for patch in order {
        for &(path, target) in groups.get(&patch).map(Vec::as_slice).unwrap_or_default() {
            let content = target.content.as_ref().expect("a write has content");
            let full = on_disk(root, path);
            let now = workdir_entry(&full)?;
            if now == Some(Entry::of(content)) {
                continue;
            }
            if keep_if_changed_meanwhile(&full, path, target, &now, &mut backup)? {
                synced.changed_meanwhile.push(path.clone());
            }
            write_path(&full, content, journal)?;
        }
        if let Some(patch) = patch {
            journal.step(&format!("patch:{patch}"));
        }
    }
    for repo in &pinned.repos {
        update_index(repo, pinned, targets, journal)?;
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
    let to = backup.path(path);
    let dir = to.parent().expect("a backup path has a parent");
    std::fs::create_dir_all(dir).map_err(io_error("create the backup directory", dir))?;
    std::fs::copy(full, &to).map_err(io_error("save (into the backup)", full))?;
    Ok(true)
}

/// Checks every write of a sync before the first one and lists what must be moved aside.
pub(crate) fn check_writes(
    root: &Path,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
    patch_for: &dyn Fn(&str) -> Option<String>,
) -> Result<Checked> {
    let mut plan = Checked::default();
    let removed = |p: &str| targets.get(p).is_some_and(|t| t.content.is_none());
    for (path, target) in targets {
        let refuse = |why: String| PrepareError::UnsafePatchPath {
            patch: patch_for(path).unwrap_or_else(|| "(restoring the pinned tree)".to_string()),
            path: path.clone(),
            why,
        };
        let depth = path.split('/').count();
        if depth > MAX_DEPTH {
            return Err(refuse(format!(
                "lies {depth} directories deep; libgit2, which reads the tree back, stops at {MAX_DEPTH}"
            )));
        }
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
                Err(e) => return Err(io_error("inspect", on_disk(root, &prefix))(e).into()),
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
    let old = crate::prepare::git::gitlinks(&repo.repo, head, &repo.workdir)?;
    let new = crate::prepare::git::gitlinks(&repo.repo, repo.commit, &repo.workdir)?;
    Ok(old
        .into_iter()
        .filter(|(path, _)| !new.iter().any(|(p, _)| p == path))
        .map(|(path, _)| crate::common::text::join(&repo.path, &path))
        .filter(|path| !pinned.repos.iter().any(|r| r.path == *path))
        .collect())
}

/// Moves the repository's `HEAD` to its pinned commit, detached, keeping the old one as a ref;
/// a repository without a work tree yet (new, or no index: a clone interrupted before its
/// checkout) is checked out there from scratch.
fn move_head(repo: &PinnedRepo, journal: &mut Journal) -> Result<()> {
    let head = crate::prepare::git::head_commit(&repo.repo);
    let no_index = repo.repo.index().map(|i| i.is_empty()).unwrap_or(true);
    if !repo.fresh && head == Some(repo.commit) && !no_index {
        return Ok(());
    }
    let at = &repo.workdir;
    if let Some(old) = head.filter(|old| *old != repo.commit && !repo.fresh) {
        // The latest one under a fixed name, and every one under its own: a later resync never
        // makes an earlier commit unreachable (refs only add reachability: not journaled).
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
    if repo.fresh || no_index {
        journal.fresh_checkout(at)?;
        journal.git_write()?;
        repo.repo
            .checkout_tree(commit.as_object(), Some(CheckoutBuilder::new().force()))
            .map_err(git_error(&format!("check out {}", repo.commit), at))?;
    }
    journal.git_write()?;
    repo.repo
        .set_head_detached(repo.commit)
        .map_err(git_error("detach HEAD at the pinned commit", at))
}

/// A submodule's `.git` link file, made again when a checkout of its parent removed it
/// (libgit2 clears a submodule directory the parent's work tree does not know yet).
fn link_gitdir(repo: &PinnedRepo, journal: &mut Journal) -> Result<()> {
    let link = repo.workdir.join(".git");
    if link.exists() {
        return Ok(());
    }
    journal.create_dir_all(&repo.workdir)?;
    journal.save_git_file(&link)?;
    repo.ensure_gitdir_link()
}

/// The ref that keeps a `HEAD` qola moved away from, until the user deletes it.
pub(crate) fn kept_ref(head: Oid) -> String {
    format!("refs/qola/kept/{head}")
}

/// Writes one work-tree file (the plan made sure nothing is in its way but, at most, an empty
/// directory).
fn write_path(full: &Path, content: &FileContent, journal: &mut Journal) -> Result<()> {
    if std::fs::symlink_metadata(full).is_ok_and(|m| m.is_dir())
        && !journal.remove_empty_dir(full)?
    {
        return Err(PrepareError::Journal {
            journal: full.to_path_buf(),
            why: "a directory that is not empty is where a file must be written".to_string(),
        });
    }
    journal.write_file(full, content)
}

/// Removes directories left empty by a deletion, up to `root` (git does not track directories).
fn remove_empty_parents(root: &Path, full: &Path, journal: &mut Journal) -> Result<()> {
    let mut dir = full.parent();
    while let Some(d) = dir.filter(|d| d.starts_with(root) && *d != root) {
        if !journal.remove_empty_dir(d)? {
            break;
        }
        dir = d.parent();
    }
    Ok(())
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

/// Sets the index entries of `repo`'s candidate paths and of its submodules (see the module
/// docs).
fn update_index(
    repo: &PinnedRepo,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
    journal: &mut Journal,
) -> Result<()> {
    let at = &repo.workdir;
    let mut index = repo.repo.index().map_err(git_error("read the index", at))?;
    let mut changed = false;
    // Each submodule it owns, at its pinned commit.
    for sub in &pinned.repos[1..] {
        let (owner, rel) = pinned.owner_of_repo(&sub.path);
        if owner.path != repo.path {
            continue;
        }
        let rel_path = &crate::common::tree_path::as_path(rel);
        let current = index.get_path(rel_path, 0).map(|e| (e.mode, e.id));
        if current == Some((MODE_GITLINK, sub.commit)) {
            continue;
        }
        let link = Entry {
            mode: MODE_GITLINK,
            id: sub.commit.to_string(),
        };
        let entry = index_entry(rel, &link).expect("a commit id is a valid id");
        index.add(&entry).map_err(git_error(
            &format!("record submodule {} at its commit", sub.path),
            at,
        ))?;
        changed = true;
    }
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
        journal.git_write()?;
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
