//! The journal: every write a preparation makes in the checkout, recorded before it is made, so
//! that nothing is ever left half-done.
//!
//! # The model
//!
//! A preparation that writes begins a journal in the checkout's git directory,
//! `.git/qola/journal/`: a log of [`Undo`] records, one per change, each appended (and flushed)
//! before the change, and the old content of every file it replaces or removes (the file itself,
//! renamed into `saved/`, so nothing is copied). Git's own files that libgit2 rewrites (each
//! repository's `index`, `HEAD` and `config`, a submodule's `.git` link) are copied into the
//! journal before the first of them changes. The stamp is the commit point: once it is written
//! for the journal's key, the preparation is complete and the journal is removed.
//!
//! * An error after the first write: the journal is undone, last change first, and the error is
//!   reported with how many changes were undone: the checkout is byte for byte as it was (work
//!   tree, index files, `HEAD`s; refs qola adds to keep commits reachable stay).
//! * A killed run: the next preparation (under the checkout's lock) finds the journal before it
//!   looks at the tree. A first clone's journal is finished (rolled forward: the clone is this
//!   run's own, and checking it out again loses nothing); any other is rolled back, unless its
//!   stamp was already written (then only the journal goes). Either way the report says "finished
//!   an interrupted prepare", and nothing qola itself left is ever taken for a local edit.
//!   `qola status` only says that a journal waits.
//!
//! Undo records are idempotent: undoing a change that never happened, or was undone already,
//! does nothing, so a rollback killed midway is simply run again.
//!
//! Tests reach two hooks (the `test-hooks` feature): fail after the n-th write, and kill the
//! process at a named step (`superproject-clone`, `superproject-checkout`,
//! `submodule-clone:<path>`, `submodule-checkout:<path>`, `patch:<name>`, `stamp`), so that no
//! test depends on how fast the machine is.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::common::hooks::Hooks;
use crate::common::io::io_error;
use crate::common::io::is_absent;
use crate::prepare::git::{FileContent, MODE_EXEC, MODE_SYMLINK};
use crate::prepare::report::{PrepareError, Result};

mod undo;

use undo::undo_all;

/// What a journal is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Kind {
    /// A first clone: finished, not rolled back, when interrupted.
    Clone,
    /// Writing a checkout that was there before: rolled back when interrupted.
    Prepare,
}

/// What qola left at a path it wrote: at undo time, anything else there is someone's change
/// made meanwhile (an editor saving the file), kept in a backup before the undo.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Left {
    /// Not recorded (a journal of an older qola): undone as before.
    #[default]
    Unknown,
    /// Nothing: the path was removed.
    Nothing,
    /// A file or symlink: its [`state_hash`].
    Content(String),
}

/// One change, as what undoes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Undo {
    /// `path` was absent (qola left `left` there): remove what is there.
    Remove {
        path: RawPath,
        #[serde(default)]
        left: Left,
    },
    /// `path` held what is now `saved` (renamed there), and qola left `left`: put it back.
    Restore {
        path: RawPath,
        saved: RawPath,
        #[serde(default)]
        left: Left,
    },
    /// The directory `path` did not exist: remove it (it is empty once later changes are undone).
    RemoveDir { path: RawPath },
    /// The empty directory `path` was removed: make it again.
    MakeDir { path: RawPath },
    /// `from` was moved to `to`: move it back.
    Move { from: RawPath, to: RawPath },
    /// Git's file `path` held `saved` (a copy), or nothing: put that back.
    GitFile {
        path: RawPath,
        saved: Option<RawPath>,
    },
    /// The work tree `workdir` was checked out from scratch (it held nothing but its `.git`, or
    /// did not exist): empty it again.
    Checkout { workdir: RawPath, existed: bool },
}

/// A path as bytes (names need not be UTF-8), written as hex in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawPath(pub PathBuf);

impl Serialize for RawPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let hex: String = self
            .0
            .as_os_str()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        s.serialize_str(&hex)
    }
}

impl<'de> Deserialize<'de> for RawPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let hex = String::deserialize(d)?;
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect();
        let bytes = bytes.ok_or_else(|| serde::de::Error::custom("not a hex path"))?;
        Ok(RawPath(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes))))
    }
}

impl From<&Path> for RawPath {
    fn from(path: &Path) -> RawPath {
        RawPath(path.to_path_buf())
    }
}

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Record {
    /// The first line: what the journal is for, and the key it prepares.
    Begin { kind: Kind, key: String },
    /// A change about to be made.
    Undo(Undo),
}

/// A journal being written (see the module docs).
pub(crate) struct Journal {
    dir: PathBuf,
    log: File,
    undos: Vec<Undo>,
    saved: usize,
    writes: usize,
    hooks: Hooks,
}

/// The journal's directory in the checkout whose git directory is `git_dir`.
pub(crate) fn dir_of(git_dir: &Path) -> PathBuf {
    git_dir.join("qola").join("journal")
}

impl Journal {
    /// Begins the journal of a preparation (`kind`) to `key`, in the git directory `git_dir`.
    pub(crate) fn begin(git_dir: &Path, kind: Kind, key: &str, hooks: Hooks) -> Result<Journal> {
        let dir = dir_of(git_dir);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("saved")).map_err(io_error("create", &dir))?;
        let path = dir.join("log");
        let log = File::create(&path).map_err(io_error("create the journal", &path))?;
        let mut journal = Journal {
            dir,
            log,
            undos: Vec::new(),
            saved: 0,
            writes: 0,
            hooks,
        };
        journal.append(&Record::Begin {
            kind,
            key: key.to_string(),
        })?;
        journal
            .log
            .sync_all()
            .map_err(io_error("write the journal", &path))?;
        Ok(journal)
    }

    /// Resumes the journal a first clone began in `git_dir` (before its rename into place).
    pub(crate) fn resume(git_dir: &Path, hooks: Hooks) -> Result<Journal> {
        let dir = dir_of(git_dir);
        let path = dir.join("log");
        let (_, _, undos) = read(&dir).ok_or_else(|| PrepareError::Journal {
            journal: dir.clone(),
            why: "its log cannot be read".to_string(),
        })?;
        let log = File::options()
            .append(true)
            .open(&path)
            .map_err(io_error("open the journal", &path))?;
        let saved = std::fs::read_dir(dir.join("saved")).map_or(0, |e| e.count());
        Ok(Journal {
            dir,
            log,
            undos,
            saved,
            writes: 0,
            hooks,
        })
    }

    fn append(&mut self, record: &Record) -> Result<()> {
        let mut line = serde_json::to_vec(record).expect("a journal record serializes");
        line.push(b'\n');
        let path = self.dir.join("log");
        self.log
            .write_all(&line)
            .map_err(|e| io_error("write the journal", &path)(e).into())
    }

    /// Records `undo` before the change it undoes; counts the write (and fails it, when a test
    /// asked).
    fn record(&mut self, undo: Undo) -> Result<()> {
        self.git_write()?;
        self.keep(undo)
    }

    /// Records `undo` (a copy, not a write yet).
    fn keep(&mut self, undo: Undo) -> Result<()> {
        self.append(&Record::Undo(undo.clone()))?;
        self.undos.push(undo);
        Ok(())
    }

    /// A named step of the preparation (test hook: a kill there).
    pub(crate) fn step(&self, name: &str) {
        self.hooks.step(name);
    }

    /// How many changes are recorded.
    #[cfg(test)]
    pub(crate) fn changes(&self) -> usize {
        self.undos.len()
    }

    /// The journal's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn next_saved(&mut self) -> PathBuf {
        self.saved += 1;
        self.dir.join("saved").join(self.saved.to_string())
    }

    /// Moves what is at `path` (a file or symlink) into the journal, recording how to put it
    /// back and what qola leaves there (`left`); records its absence when there is none.
    fn set_aside(&mut self, path: &Path, left: Left) -> Result<()> {
        match std::fs::symlink_metadata(path) {
            Err(e) if is_absent(&e) => self.record(Undo::Remove {
                path: path.into(),
                left,
            }),
            Err(e) => Err(io_error("inspect", path)(e).into()),
            Ok(meta) if meta.is_dir() => Err(PrepareError::Journal {
                journal: self.dir.clone(),
                why: format!("{} is a directory where a file is written", path.display()),
            }),
            Ok(_) => {
                let saved = self.next_saved();
                self.record(Undo::Restore {
                    path: path.into(),
                    saved: saved.as_path().into(),
                    left,
                })?;
                std::fs::rename(path, &saved)
                    .map_err(|e| io_error("move into the journal", path)(e).into())
            }
        }
    }

    /// Writes `content` at `path` (a file or a symlink), through a temporary file and a rename.
    pub(crate) fn write_file(&mut self, path: &Path, content: &FileContent) -> Result<()> {
        let dir = path.parent().expect("a tree path has a parent");
        self.create_dir_all(dir)?;
        let exec = content.mode == MODE_EXEC;
        let left = Left::Content(state_hash(
            content.mode == MODE_SYMLINK,
            exec,
            &content.data,
        ));
        self.set_aside(path, left)?;
        if content.mode == MODE_SYMLINK {
            let target = std::ffi::OsStr::from_bytes(&content.data);
            return std::os::unix::fs::symlink(target, path)
                .map_err(|e| io_error("create the symlink", path)(e).into());
        }
        let tmp = dir.join(format!(
            ".{}.qola-tmp",
            path.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        std::fs::write(&tmp, &content.data).map_err(io_error("write", &tmp))?;
        let mode = if content.mode == MODE_EXEC {
            0o755
        } else {
            0o644
        };
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
            .map_err(io_error("set the mode of", &tmp))?;
        std::fs::rename(&tmp, path).map_err(|e| io_error("rename into place", path)(e).into())
    }

    /// Removes the file or symlink at `path` (kept in the journal).
    pub(crate) fn remove_file(&mut self, path: &Path) -> Result<()> {
        self.set_aside(path, Left::Nothing)
    }

    /// Removes the empty directory `path`; `false` when it is not empty (left as it is).
    pub(crate) fn remove_empty_dir(&mut self, path: &Path) -> Result<bool> {
        let empty = std::fs::read_dir(path).is_ok_and(|mut e| e.next().is_none());
        if !empty {
            return Ok(false);
        }
        self.record(Undo::MakeDir { path: path.into() })?;
        std::fs::remove_dir(path).map_err(io_error("remove the directory", path))?;
        Ok(true)
    }

    /// Makes `dir` and its missing parents, each recorded.
    pub(crate) fn create_dir_all(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| std::fs::symlink_metadata(d).is_err()) {
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        for d in missing.iter().rev() {
            self.record(Undo::RemoveDir {
                path: d.as_path().into(),
            })?;
            std::fs::create_dir(d).map_err(io_error("create the directory", d))?;
        }
        Ok(())
    }

    /// Moves `from` to `to` (out of the way, into a backup), making `to`'s parents.
    pub(crate) fn move_path(&mut self, from: &Path, to: &Path) -> Result<()> {
        if let Some(parent) = to.parent() {
            self.create_dir_all(parent)?;
        }
        self.record(Undo::Move {
            from: from.into(),
            to: to.into(),
        })?;
        std::fs::rename(from, to)
            .map_err(|e| io_error("move aside (into the backup)", from)(e).into())
    }

    /// Copies git's file `path` into the journal before libgit2 rewrites it (once per path).
    pub(crate) fn save_git_file(&mut self, path: &Path) -> Result<()> {
        let already = self
            .undos
            .iter()
            .any(|u| matches!(u, Undo::GitFile { path: p, .. } if p.0 == path));
        if already {
            return Ok(());
        }
        let saved = match std::fs::read(path) {
            Ok(bytes) => {
                let saved = self.next_saved();
                std::fs::write(&saved, bytes).map_err(io_error("copy into the journal", path))?;
                Some(RawPath(saved))
            }
            Err(e) if is_absent(&e) => None,
            Err(e) => return Err(io_error("read", path)(e).into()),
        };
        self.keep(Undo::GitFile {
            path: path.into(),
            saved,
        })
    }

    /// Counts one write libgit2 is about to make (its files were saved before): a test's
    /// failure may be injected here too.
    pub(crate) fn git_write(&mut self) -> Result<()> {
        if self
            .hooks
            .fail_after_writes
            .is_some_and(|n| self.writes >= n)
        {
            return Err(PrepareError::Journal {
                journal: self.dir.clone(),
                why: format!(
                    "a failure injected after {} writes (test hook)",
                    self.writes
                ),
            });
        }
        self.writes += 1;
        Ok(())
    }

    /// Records that `workdir` is about to be checked out from scratch.
    pub(crate) fn fresh_checkout(&mut self, workdir: &Path) -> Result<()> {
        let existed = workdir.is_dir();
        self.record(Undo::Checkout {
            workdir: workdir.into(),
            existed,
        })
    }

    /// The preparation is complete (its stamp is written): the journal goes.
    pub(crate) fn commit(self) -> Result<()> {
        std::fs::remove_dir_all(&self.dir)
            .map_err(|e| io_error("remove the journal", &self.dir)(e).into())
    }

    /// Undoes every change, last first, and removes the journal; says how many changes there
    /// were to undo, and what someone changed meanwhile (saved first).
    pub(crate) fn roll_back(self) -> Result<Undone> {
        let undone = undo_all(&self.dir, &self.undos)?;
        std::fs::remove_dir_all(&self.dir).map_err(io_error("remove the journal", &self.dir))?;
        Ok(undone)
    }
}

/// Reads the journal in `dir`: its kind, key and changes (`None`: none, or unreadable).
fn read(dir: &Path) -> Option<(Kind, String, Vec<Undo>)> {
    let text = std::fs::read_to_string(dir.join("log")).ok()?;
    let mut lines = text.lines();
    let Record::Begin { kind, key } = serde_json::from_str(lines.next()?).ok()? else {
        return None;
    };
    // A last line cut by a kill was never acted on (records come before their changes).
    let undos = lines
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(Record::Undo(u)) => Some(u),
            _ => None,
        })
        .collect();
    Some((kind, key, undos))
}

/// What a rollback did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Undone {
    /// Changes undone.
    pub changes: usize,
    /// Paths someone changed after qola wrote them (an editor), each saved before it was put
    /// back; relative to the checkout.
    pub rescued: Vec<String>,
    /// Where they were saved.
    pub backup: Option<PathBuf>,
}

/// What an interrupted preparation left, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// A first clone, to be finished.
    Clone,
    /// A preparation rolled back: the checkout is as it was before it.
    RolledBack(Undone),
    /// A preparation whose stamp was written: complete; only its journal was left.
    Completed,
}

/// At the start of a preparation (under the checkout's lock): deals with a journal an
/// interrupted run left in `git_dir` (see the module docs). `stamp_key`: the key of the stamp
/// now in the checkout.
pub(crate) fn recover(git_dir: &Path, stamp_key: Option<&str>) -> Result<Option<Interrupted>> {
    let dir = dir_of(git_dir);
    if !dir.exists() {
        return Ok(None);
    }
    let Some((kind, key, undos)) = read(&dir) else {
        // Killed before its first line: no change was made.
        std::fs::remove_dir_all(&dir).map_err(io_error("remove the journal", &dir))?;
        return Ok(Some(Interrupted::RolledBack(Undone::default())));
    };
    let what = match kind {
        Kind::Clone => Interrupted::Clone,
        Kind::Prepare if stamp_key == Some(key.as_str()) => Interrupted::Completed,
        Kind::Prepare => Interrupted::RolledBack(undo_all(&dir, &undos)?),
    };
    std::fs::remove_dir_all(&dir).map_err(io_error("remove the journal", &dir))?;
    Ok(Some(what))
}

/// What `qola status` says of a journal left in `git_dir` (it writes nothing): its kind and how
/// many changes a prepare would roll back.
pub(crate) fn pending(git_dir: &Path) -> Option<(Kind, usize)> {
    let dir = dir_of(git_dir);
    if !dir.exists() {
        return None;
    }
    Some(read(&dir).map_or((Kind::Prepare, 0), |(kind, _, undos)| (kind, undos.len())))
}

/// What a file or symlink is, as a hash: its kind, exec bit and bytes.
fn state_hash(symlink: bool, exec: bool, data: &[u8]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(if symlink {
        b"l"
    } else if exec {
        b"x"
    } else {
        b"f"
    });
    hasher.update(data);
    hasher.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests;
