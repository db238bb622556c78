//! The stat snapshot: how a no-op build finds out in milliseconds that nothing changed.
//!
//! Right before a preparation verifies the tree's fingerprint (after writing it, or when the full
//! scan of a no-op runs), qola records for every repository its `HEAD`, a digest of its index's
//! entries (paths, modes, ids, stages; not stat data), and for every tracked path the work-tree
//! file's `lstat`: mtime, ctime, size, inode and mode. It is kept in qola's cache
//! (`<cache>/snapshots/`, one file per checkout), outside the checkout, with the key it belongs
//! to: refreshing it never writes in the source tree. `qola status` only reads it.
//!
//! The next build compares: same key, same `HEAD`s, same index digest, and every path's `lstat`
//! identical means every tracked file still has the content that was verified, so the tree is
//! the prepared state: `up-to-date`, without reading a tree object or hashing a file. Anything
//! else (a touched file, a `git add`, a checkout) sends the decision to the full fingerprint scan,
//! which is exact; the snapshot is a shortcut, never the judge.
//!
//! Why `lstat` suffices: any write to a file changes its ctime, which no tool can set back, and
//! the snapshot is taken only after the clock has moved past every recorded mtime by twice the
//! file system's timestamp granularity, so a write after the snapshot always gets a later time.
//! A `git status` that refreshes the index changes stat data only, not the digest, so it does not
//! defeat the shortcut; a touched file does, once: the full scan that follows confirms the tree
//! and `prepare` records a new snapshot.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use git2::Repository;

use crate::common::io::io_error;
use crate::common::io::write_atomic;
use crate::common::text::join;
use crate::prepare::report::Result;

const MAGIC: &[u8] = b"qola-snapshot-2\n";

/// The `lstat` fields compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: u64,
    ino: u64,
    mode: u32,
}

impl Stat {
    /// A directory's identity only (inode and type): files created in it do not count, a
    /// symlink put in its place does (the files behind it keep their own stat data).
    fn of_dir(path: &Path) -> Option<Stat> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stat {
            mtime: (0, 0),
            ctime: (0, 0),
            size: 0,
            ino: m.ino(),
            mode: m.mode() & 0o170000,
        })
    }

    /// The stat data of a recorded path: a directory's ends with `/`.
    fn of_entry(root: &Path, path: &str) -> Option<Stat> {
        match path.strip_suffix('/') {
            Some(dir) => Stat::of_dir(&root.join(dir)),
            None => Stat::of(&crate::common::tree_path::on_disk(root, path)),
        }
    }

    fn of(path: &Path) -> Option<Stat> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stat {
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            size: m.size(),
            ino: m.ino(),
            mode: m.mode(),
        })
    }
}

/// One repository's part.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RepoPart {
    /// Path in the superproject ("" for the superproject).
    path: String,
    /// `HEAD` (hex).
    head: String,
    /// [`crate::prepare::git::content_digest`] of its index.
    index: [u8; 32],
    /// Tracked files (superproject-relative) and their stat (`None`: missing).
    files: Vec<(String, Option<Stat>)>,
}

/// A snapshot of the prepared tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    key: String,
    repos: Vec<RepoPart>,
}

/// The file system's timestamp granularity as seen in these mtimes: coarse (2 s) when no
/// nanoseconds appear at all, else the kernel's clock tick (at most 10 ms).
fn granularity(files: &[(String, Option<Stat>)]) -> Duration {
    let mtimes: Vec<(i64, i64)> = files
        .iter()
        .filter_map(|(_, s)| s.map(|s| s.mtime))
        .collect();
    if !mtimes.is_empty() && mtimes.iter().all(|m| m.1 == 0) {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(10)
    }
}

impl Snapshot {
    /// Records the repositories at `repo_paths` (superproject first) under `root`. Waits first
    /// until the clock is two granularities past the newest mtime (a few ms after a resync).
    pub(crate) fn take(root: &Path, repo_paths: &[String], key: &str) -> Option<Snapshot> {
        let mut repos = Vec::new();
        for prefix in repo_paths {
            let workdir = root.join(prefix);
            let repo = Repository::open(&workdir).ok()?;
            let (paths, index) =
                crate::prepare::git::file_paths_and_digest(&repo.path().join("index"))?;
            // Every directory on the way to a tracked file too, marked by a trailing `/`.
            let mut dirs = std::collections::BTreeSet::new();
            for rel in &paths {
                let mut at = rel.as_str();
                while let Some((dir, _)) = at.rsplit_once('/') {
                    if !dirs.insert(dir.to_string()) {
                        break;
                    }
                    at = dir;
                }
            }
            let files = paths
                .into_iter()
                .chain(dirs.into_iter().map(|d| format!("{d}/")))
                .map(|rel| (join(prefix, &rel), None))
                .collect();
            repos.push(RepoPart {
                path: prefix.clone(),
                head: crate::prepare::git::head_commit(&repo).map(|id| id.to_string())?,
                index,
                files,
            });
        }
        // Wait out the racy window, then take the stat data again: those are the ones recorded.
        let all: Vec<(String, Option<Stat>)> = repos
            .iter()
            .flat_map(|r| &r.files)
            .filter(|(p, _)| !p.ends_with('/'))
            .map(|(p, _)| {
                (
                    p.clone(),
                    Stat::of(&crate::common::tree_path::on_disk(root, p)),
                )
            })
            .collect();
        let newest = all
            .iter()
            .filter_map(|(_, s)| s.map(|s| s.mtime))
            .max()
            .unwrap_or((0, 0));
        let newest = UNIX_EPOCH + Duration::new(newest.0.max(0) as u64, newest.1.max(0) as u32);
        let safe = newest + granularity(&all) * 2;
        if let Ok(wait) = safe.duration_since(SystemTime::now()) {
            std::thread::sleep(wait);
        }
        for repo in &mut repos {
            for (path, stat) in &mut repo.files {
                *stat = Stat::of_entry(root, path);
            }
        }
        Some(Snapshot {
            key: key.to_string(),
            repos,
        })
    }

    /// Every tracked file the snapshot knows, and the repositories' paths.
    pub(crate) fn tracked(&self) -> (Vec<&str>, Vec<&str>) {
        let files = self
            .repos
            .iter()
            .flat_map(|r| r.files.iter().map(|(p, _)| p.as_str()))
            .filter(|p| !p.ends_with('/'))
            .collect();
        let repos = self.repos.iter().map(|r| r.path.as_str()).collect();
        (files, repos)
    }

    /// Whether the tree under `root` still matches, for the key `key`.
    pub(crate) fn matches(&self, root: &Path, key: &str) -> bool {
        if self.key != key {
            return false;
        }
        let repos_ok = self.repos.iter().all(|part| {
            let Ok(repo) = Repository::open(root.join(&part.path)) else {
                return false;
            };
            crate::prepare::git::head_commit(&repo)
                .map(|id| id.to_string())
                .as_deref()
                == Some(part.head.as_str())
                && crate::prepare::git::content_digest(&repo.path().join("index"))
                    == Some(part.index)
        });
        if !repos_ok {
            return false;
        }
        let files: Vec<&(String, Option<Stat>)> =
            self.repos.iter().flat_map(|r| &r.files).collect();
        let half = files.len() / 2;
        let same = |chunk: &[&(String, Option<Stat>)]| {
            chunk
                .iter()
                .all(|(path, stat)| Stat::of_entry(root, path) == *stat)
        };
        std::thread::scope(|scope| {
            let first = scope.spawn(|| same(&files[..half]));
            let second = same(&files[half..]);
            second && first.join().unwrap_or(false)
        })
    }

    /// Where the snapshot of the checkout at `root` is kept: in qola's cache, outside the
    /// checkout, so that a no-op build may refresh it without writing in the source tree.
    pub(crate) fn file(cache: &Path, root: &Path) -> PathBuf {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let hash = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
        cache
            .join(crate::cache_dir::SNAPSHOTS)
            .join(format!("{}.bin", &hash[..24]))
    }

    /// Reads a kept snapshot; `None` when missing or unreadable.
    pub(crate) fn read(file: &Path) -> Option<Snapshot> {
        decode(&std::fs::read(file).ok()?)
    }

    /// Writes it atomically.
    pub(crate) fn write(&self, file: &Path) -> Result<()> {
        Ok(write_atomic(file, &self.encode())?)
    }

    /// Removes a kept snapshot (before the tree is written, so a stale one never survives).
    pub(crate) fn remove(file: &Path) -> Result<()> {
        match std::fs::remove_file(file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error("remove", file)(e).into())
            }
            _ => Ok(()),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        put_bytes(&mut out, self.key.as_bytes());
        out.extend_from_slice(&(self.repos.len() as u32).to_le_bytes());
        for repo in &self.repos {
            put_bytes(&mut out, repo.path.as_bytes());
            put_bytes(&mut out, repo.head.as_bytes());
            out.extend_from_slice(&repo.index);
            out.extend_from_slice(&(repo.files.len() as u32).to_le_bytes());
            for (path, stat) in &repo.files {
                put_bytes(&mut out, path.as_bytes());
                let Some(s) = stat else {
                    out.push(0);
                    continue;
                };
                out.push(1);
                for v in [s.mtime.0, s.mtime.1, s.ctime.0, s.ctime.1] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&s.size.to_le_bytes());
                out.extend_from_slice(&s.ino.to_le_bytes());
                out.extend_from_slice(&s.mode.to_le_bytes());
            }
        }
        out
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// A cursor over the encoded bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

fn decode(bytes: &[u8]) -> Option<Snapshot> {
    let mut r = Reader(bytes.strip_prefix(MAGIC)?);
    let key = r.string()?;
    let count = r.u32()?;
    let mut repos = Vec::new();
    for _ in 0..count {
        let path = r.string()?;
        let head = r.string()?;
        let index: [u8; 32] = r.take(32)?.try_into().ok()?;
        let n = r.u32()? as usize;
        let mut files = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let file = r.string()?;
            let stat = match r.take(1)? {
                [0] => None,
                [1] => Some(Stat {
                    mtime: (r.i64()?, r.i64()?),
                    ctime: (r.i64()?, r.i64()?),
                    size: r.u64()?,
                    ino: r.u64()?,
                    mode: r.u32()?,
                }),
                _ => return None,
            };
            files.push((file, stat));
        }
        repos.push(RepoPart {
            path,
            head,
            index,
            files,
        });
    }
    r.0.is_empty().then_some(Snapshot { key, repos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_truncation_is_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        let snap = Snapshot::take(&demo.aiter, &[String::new()], "k").unwrap();
        assert!(!snap.repos[0].files.is_empty());
        let bytes = snap.encode();
        assert_eq!(decode(&bytes), Some(snap.clone()));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        assert!(snap.matches(&demo.aiter, "k"));
        assert!(!snap.matches(&demo.aiter, "other key"));
    }

    #[test]
    fn any_write_defeats_the_snapshot_even_with_the_old_mtime() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        let snap = Snapshot::take(&demo.aiter, &[String::new()], "k").unwrap();
        let file = demo.aiter.join("README.md");
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::fs::write(&file, "# AITER (qola dem0)\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert!(
            !snap.matches(&demo.aiter, "k"),
            "same size and mtime, new ctime"
        );
    }

    #[test]
    fn a_directory_moved_away_behind_a_symlink_defeats_the_snapshot() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        let snap = Snapshot::take(&demo.aiter, &[String::new()], "k").unwrap();
        std::fs::write(demo.aiter.join("scripts/untracked.txt"), "x").unwrap();
        assert!(snap.matches(&demo.aiter, "k"), "a new file in a directory");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::rename(demo.aiter.join("scripts"), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, demo.aiter.join("scripts")).unwrap();
        assert!(!snap.matches(&demo.aiter, "k"));
    }

    #[test]
    fn a_staged_change_defeats_the_snapshot_but_a_refresh_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        qola_tests::git(&demo.aiter, &["status", "--porcelain"]);
        let snap = Snapshot::take(&demo.aiter, &[String::new()], "k").unwrap();
        qola_tests::git(&demo.aiter, &["status", "--porcelain"]);
        assert!(snap.matches(&demo.aiter, "k"));
        qola_tests::git(&demo.aiter, &["rm", "-q", "--cached", "README.md"]);
        assert!(!snap.matches(&demo.aiter, "k"));
    }
}
