//! The tree fingerprint: "`git rev-parse HEAD` + `git diff HEAD`", computed on structured data.
//!
//! # What it covers
//!
//! For the superproject and for every submodule (recursively, found from the gitlinks of the
//! superproject's index, whatever `.gitmodules ignore=` says), the fingerprint takes:
//!
//! * the repository's `HEAD` commit id (or "not checked out");
//! * every tracked path whose index entry or work-tree file differs from `HEAD`, with the state
//!   of its work-tree file: git mode and full blob id, or "absent".
//!
//! It is a blake3 hash over those records sorted by superproject-relative path. Binary files count
//! by content like any other (the blob id is a hash of the bytes). Untracked files are not part
//! of it: a build that drops logs or `__pycache__` into the tree does not invalidate it, and a
//! patch-created file counts because qola stages it. Ignored files are never looked at.
//!
//! # When it changes
//!
//! * `git reset --hard`, `git checkout -- f`, `git stash`: the patched paths go back to `HEAD`, so
//!   they leave the list: changed.
//! * A hand edit, a deleted file, a mode change (`chmod +x`, qola pins `core.filemode=true`): the
//!   path's mode or blob id changes: changed.
//! * A commit in either repository, a `git checkout` of another commit, a submodule moved: a
//!   `HEAD` id changes: changed.
//! * `touch` on every file, `git clean -fdx`, a generator writing new files: unchanged. (Touching
//!   files costs a re-hash by libgit2 on the next scan, not a rebuild.)
//!
//! The stamp stores the fingerprint the tree had right after preparation; the next build compares.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::{Repository, Status, StatusOptions};

use crate::common::text::join;
use crate::prepare::git::{Entry, PathState, workdir_entry};
use crate::prepare::patch::{MODE_EXEC, MODE_FILE, MODE_GITLINK};
use crate::prepare::report::{Result, git_error};

/// What a scan of the work tree found.
#[derive(Debug, Clone, Default)]
pub(crate) struct TreeScan {
    /// `HEAD` of each repository by path ("" for the superproject); `None`: not checked out.
    pub heads: BTreeMap<String, Option<String>>,
    /// Tracked paths that differ from their repository's `HEAD`, with their work-tree state.
    pub paths: BTreeMap<String, PathState>,
    /// Tracked paths whose index entry differs from `HEAD`, with that entry (`None`: removed
    /// from the index).
    pub staged: BTreeMap<String, PathState>,
    /// Untracked paths (directories end with `/`), when asked for.
    pub untracked: Vec<String>,
}

impl TreeScan {
    /// The fingerprint of this state: staged content that differs from the work tree counts
    /// too (a prepared tree has none, so its fingerprint is [`fingerprint_of`] its paths).
    pub(crate) fn fingerprint(&self) -> String {
        let staged: Vec<(&String, &PathState)> = self.staged_apart().collect();
        if staged.is_empty() {
            return fingerprint_of(&self.heads, &self.paths);
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(fingerprint_of(&self.heads, &self.paths).as_bytes());
        for (path, state) in staged {
            hasher.update(b"staged\0");
            hasher.update(path.as_bytes());
            hasher.update(format!("\0{state:?}\n").as_bytes());
        }
        hasher.finalize().to_hex().to_string()
    }

    /// Index entries that differ from the work-tree file (content staged, then changed back).
    pub(crate) fn staged_apart(&self) -> impl Iterator<Item = (&String, &PathState)> {
        self.staged
            .iter()
            .filter(|(path, state)| self.paths.get(*path) != Some(*state))
    }
}

/// The fingerprint of a state given as heads and differing paths.
pub(crate) fn fingerprint_of(
    heads: &BTreeMap<String, Option<String>>,
    paths: &BTreeMap<String, PathState>,
) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"qola-fingerprint-1\n");
    for (repo, head) in heads {
        hasher.update(b"head\0");
        hasher.update(repo.as_bytes());
        hasher.update(b"\0");
        hasher.update(head.as_deref().unwrap_or("-").as_bytes());
        hasher.update(b"\n");
    }
    for (path, state) in paths {
        hasher.update(b"path\0");
        hasher.update(path.as_bytes());
        hasher.update(b"\0");
        match state {
            Some(e) => hasher.update(format!("{:o} {}", e.mode, e.id).as_bytes()),
            None => hasher.update(b"absent"),
        };
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// Scans the checkout at `root` (superproject and submodules). `untracked`: also list untracked
/// paths (for `qola status`); the fingerprint never depends on them.
///
/// Each repository is scanned on its own thread. `expected_submodules` (from the stamp) lets the
/// submodule threads start before the superproject's index is read; the result is the same
/// without it: the index's gitlinks decide which submodules count.
pub(crate) fn scan(
    root: &Path,
    untracked: bool,
    expected_submodules: &[String],
) -> Result<TreeScan> {
    // Like git, trust object ids on read instead of hashing every tree object again (a third of
    // a scan's time otherwise); objects are still verified when fetched and written.
    git2::opts::strict_hash_verification(false);
    let mut out = TreeScan::default();
    for part in scan_repo(root, "", untracked, expected_submodules)? {
        out.heads.extend(part.heads);
        out.paths.extend(part.paths);
        out.staged.extend(part.staged);
        out.untracked.extend(part.untracked);
    }
    out.untracked.sort();
    Ok(out)
}

/// The submodules of the repository at `prefix` among `hints` (full paths), relative to it.
fn direct_children(prefix: &str, hints: &[String]) -> Vec<String> {
    let inside = |h: &str| -> Option<String> {
        if prefix.is_empty() {
            Some(h.to_string())
        } else {
            h.strip_prefix(prefix)?.strip_prefix('/').map(String::from)
        }
    };
    let candidates: Vec<String> = hints
        .iter()
        .filter_map(|h| inside(h))
        .filter(|h| !h.is_empty())
        .collect();
    candidates
        .iter()
        .filter(|c| {
            !candidates
                .iter()
                .any(|o| o != *c && c.starts_with(&format!("{o}/")))
        })
        .cloned()
        .collect()
}

/// Scans the repository at `workdir` and, in parallel, its submodules (recursively).
fn scan_repo(
    workdir: &Path,
    prefix: &str,
    untracked: bool,
    hints: &[String],
) -> Result<Vec<TreeScan>> {
    std::thread::scope(|scope| {
        let spawn = |path: &String| {
            let sub_dir = workdir.join(path);
            let sub_prefix = join(prefix, path);
            scope.spawn(move || scan_repo(&sub_dir, &sub_prefix, untracked, hints))
        };
        let mut started: Vec<(String, _)> = direct_children(prefix, hints)
            .into_iter()
            .map(|path| {
                let handle = spawn(&path);
                (path, handle)
            })
            .collect();
        let mut own = TreeScan::default();
        let repo = match Repository::open(workdir) {
            Ok(repo) if repo.workdir().is_some() => repo,
            _ => {
                own.heads.insert(prefix.to_string(), None);
                return Ok(vec![own]);
            }
        };
        let head = crate::prepare::git::head_commit(&repo).map(|id| id.to_string());
        own.heads.insert(prefix.to_string(), head);
        let index = repo.index().map_err(git_error("read the index", workdir))?;
        let submodules: Vec<String> = index
            .iter()
            .filter(|e| e.mode == MODE_GITLINK)
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        drop(index);
        for path in &submodules {
            if !started.iter().any(|(p, _)| p == path) {
                started.push((path.clone(), spawn(path)));
            }
        }
        scan_status(&repo, workdir, prefix, untracked, &mut own)?;
        let mut parts = vec![own];
        for (path, handle) in started {
            let result = handle.join().expect("a scan thread panicked");
            // A hinted path that is no gitlink (any more) does not count.
            if submodules.contains(&path) {
                parts.extend(result?);
            }
        }
        Ok(parts)
    })
}

/// The status of one repository (submodules excluded: they are scanned as repositories).
fn scan_status(
    repo: &Repository,
    workdir: &Path,
    prefix: &str,
    untracked: bool,
    out: &mut TreeScan,
) -> Result<()> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(untracked)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true)
        .renames_head_to_index(false)
        .renames_index_to_workdir(false);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(git_error("read the status", workdir))?;
    for entry in statuses.iter() {
        let path = &crate::common::tree_path::key(entry.path_bytes());
        let status = entry.status();
        if status == Status::WT_NEW {
            out.untracked.push(join(prefix, path));
            continue;
        }
        if status.is_ignored() || status.is_empty() {
            continue;
        }
        let state = workdir_entry(&crate::common::tree_path::on_disk(workdir, path))?;
        out.paths.insert(join(prefix, path), state);
        if status.intersects(Status::INDEX_NEW | Status::INDEX_MODIFIED | Status::INDEX_TYPECHANGE)
        {
            let staged = entry.head_to_index().map(|d| Entry {
                mode: d.new_file().mode().into(),
                id: d.new_file().id().to_string(),
            });
            out.staged.insert(join(prefix, path), staged);
        } else if status.contains(Status::INDEX_DELETED) {
            out.staged.insert(join(prefix, path), None);
        }
    }
    scan_what_status_hides(repo, workdir, prefix, out)
}

/// What libgit2's status does not show but `git status` would with the index flags cleared:
/// files marked `assume-unchanged` or `skip-worktree`, executable bits under a user's
/// `core.filemode=false`, and tracked files behind a directory replaced by a symlink (git sees
/// them as deleted; libgit2 follows the link). And what a repository's settings tell git not to
/// look at: with `core.trustctime=false` or `core.checkStat=minimal`, a file whose size, mtime,
/// ctime, inode or mode differs from its index entry is read (an edit that kept its size and
/// mtime is an edit all the same).
fn scan_what_status_hides(
    repo: &Repository,
    workdir: &Path,
    prefix: &str,
    out: &mut TreeScan,
) -> Result<()> {
    const ASSUME_VALID: u16 = 0x8000;
    const SKIP_WORKTREE: u16 = 0x4000;
    let config = repo.config().ok();
    let filemode = config
        .as_ref()
        .and_then(|c| c.get_bool("core.filemode").ok())
        .unwrap_or(true);
    let weak_stat = config.as_ref().is_some_and(|c| {
        c.get_bool("core.trustctime").ok() == Some(false)
            || c.get_string("core.checkstat")
                .is_ok_and(|v| v.eq_ignore_ascii_case("minimal"))
    });
    let index = repo.index().map_err(git_error("read the index", workdir))?;
    let mut dir_is_link: HashMap<Vec<u8>, bool> = HashMap::new();
    for entry in index.iter() {
        if entry.mode == MODE_GITLINK {
            continue;
        }
        let rel = &crate::common::tree_path::key(&entry.path);
        let path = join(prefix, rel);
        let behind_link = entry
            .path
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'/')
            .any(|(i, _)| {
                let dir = &entry.path[..i];
                *dir_is_link.entry(dir.to_vec()).or_insert_with(|| {
                    std::fs::symlink_metadata(workdir.join(std::ffi::OsStr::from_bytes(dir)))
                        .is_ok_and(|m| m.file_type().is_symlink())
                })
            });
        if behind_link {
            out.paths.insert(path, None);
            continue;
        }
        if out.paths.contains_key(&path) {
            continue;
        }
        let flagged = entry.flags & ASSUME_VALID != 0 || entry.flags_extended & SKIP_WORKTREE != 0;
        let exec_only = !filemode && (entry.mode == MODE_FILE || entry.mode == MODE_EXEC);
        let full = crate::common::tree_path::on_disk(workdir, rel);
        let weak_stat_hides = weak_stat && !flagged && stat_differs(&full, &entry);
        if !weak_stat_hides && !flagged && !exec_only {
            continue;
        }
        if !weak_stat_hides && exec_only && !flagged {
            let exec = std::fs::symlink_metadata(&full)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
            if exec == (entry.mode == MODE_EXEC) {
                continue;
            }
        }
        // Read what is there: a path differs when its state is not the index entry's.
        let state = workdir_entry(&full)?;
        let indexed = Some(Entry {
            mode: entry.mode,
            id: entry.id.to_string(),
        });
        if state != indexed {
            out.paths.insert(path, state);
        }
    }
    Ok(())
}

/// Whether the file at `full` differs from its index entry in size, mtime, ctime, inode or mode
/// (what git compares when nothing tells it not to).
fn stat_differs(full: &Path, entry: &git2::IndexEntry) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(full) else {
        return true;
    };
    let seconds = |s: i64| s as i32;
    meta.size() as u32 != entry.file_size
        || seconds(meta.mtime()) != entry.mtime.seconds()
        || meta.mtime_nsec() as u32 != entry.mtime.nanoseconds()
        || seconds(meta.ctime()) != entry.ctime.seconds()
        || meta.ctime_nsec() as u32 != entry.ctime.nanoseconds()
        || meta.ino() as u32 != entry.ino
        || (meta.mode() & 0o170000) != (entry.mode & 0o170000)
}
