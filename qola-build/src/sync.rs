//! Writing the prepared state into the work tree, touching only what differs.
//!
//! 1. Every path to be written is checked first: no directory on its way may be a symlink in the
//!    work tree (a patch must not write outside the tree through a link someone made).
//! 2. A repository whose `HEAD` is not at its pinned commit (or that was just cloned, or has no
//!    index) is checked out there, detached; the old `HEAD` is kept as `refs/qola/kept/<id>` (and as
//!    `refs/qola/previous-head`, the latest).
//! 3. Each candidate path whose work-tree content differs from its target is rewritten (through a
//!    temporary file and a rename) or removed. A path already right is not touched: its mtime
//!    stays, so compilers see no change.
//! 4. Index entries are set: files the series creates are staged (so they are tracked and part of
//!    the fingerprint), files it deletes are unstaged, every other candidate goes back to its
//!    pinned entry. The index is written only when an entry changed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::{IndexEntry, IndexTime, Oid, build::CheckoutBuilder};

use crate::checkout::{Pinned, PinnedRepo};
use crate::error::{Error, Result, git_error, io_error};
use crate::patch::{FileContent, MODE_EXEC, MODE_SYMLINK};
use crate::state::{Entry, PathState, is_absent, workdir_entry};

/// What one candidate path must become.
pub(crate) struct Target {
    /// The prepared content (`None`: absent).
    pub content: Option<FileContent>,
    /// The entry at the pinned commit (decides how the index records the path).
    pub pinned: PathState,
}

/// Writes `targets` (superproject-relative paths) into the checkout; returns the paths written
/// or removed.
pub(crate) fn sync(
    root: &Path,
    pinned: &Pinned,
    targets: &BTreeMap<String, Target>,
    patch_for: &dyn Fn(&str) -> String,
) -> Result<Vec<String>> {
    for path in targets.keys() {
        check_no_symlink_on_the_way(root, path, patch_for)?;
    }
    for repo in &pinned.repos {
        checkout_pinned(repo)?;
        for other in &pinned.repos {
            other.ensure_gitdir_link()?;
        }
    }
    let mut written = Vec::new();
    for (path, target) in targets {
        let full = root.join(path);
        let want = target.content.as_ref().map(Entry::of);
        if workdir_entry(&full)? != want {
            write_path(&full, target.content.as_ref())?;
            written.push(path.clone());
        }
    }
    for repo in &pinned.repos {
        update_index(repo, pinned, targets)?;
    }
    Ok(written)
}

fn check_no_symlink_on_the_way(
    root: &Path,
    path: &str,
    patch_for: &dyn Fn(&str) -> String,
) -> Result<()> {
    let parts: Vec<&str> = path.split('/').collect();
    let mut dir = root.to_path_buf();
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Error::UnsafePatchPath {
                    patch: patch_for(path),
                    path: path.to_string(),
                    why: format!(
                        "goes through `{}`, a symlink in the work tree",
                        parts[..=i].join("/")
                    ),
                });
            }
            Err(e) if is_absent(&e) => return Ok(()),
            Err(e) => return Err(io_error("inspect", &dir)(e)),
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Checks the repository out at its pinned commit when `HEAD` is elsewhere, when it is new, or
/// when it has no index yet (a clone interrupted before its checkout).
fn checkout_pinned(repo: &PinnedRepo) -> Result<()> {
    let head = repo.repo.head().ok().and_then(|h| h.target());
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

/// Writes or removes one work-tree path.
fn write_path(full: &Path, content: Option<&FileContent>) -> Result<()> {
    match std::fs::symlink_metadata(full) {
        Ok(meta) if meta.is_dir() => {
            return Err(io_error(
                "replace the directory (move it away, it is not tracked)",
                full,
            )(std::io::Error::from(
                std::io::ErrorKind::IsADirectory,
            )));
        }
        Ok(_) if content.is_none_or(|c| c.mode == MODE_SYMLINK) => {
            std::fs::remove_file(full).map_err(io_error("remove", full))?;
        }
        _ => {}
    }
    let Some(content) = content else {
        remove_empty_parents(full);
        return Ok(());
    };
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

/// Removes directories left empty by a deletion (git does not track directories).
fn remove_empty_parents(full: &Path) {
    let mut dir = full.parent();
    while let Some(d) = dir {
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
        path: rel.as_bytes().to_vec(),
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
        let rel_path = Path::new(rel);
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
                let entry = index_entry(rel, entry).ok_or_else(|| Error::Git {
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
