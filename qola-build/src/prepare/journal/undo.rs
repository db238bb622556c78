//! Undoing a journal, last change first: each record put back as it was (idempotent, so a
//! rollback killed midway runs again), and whatever someone changed after qola wrote it saved
//! first into the journal's `rescued/` (see the folder's docs).

use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::{Left, RawPath, Undo, Undone, state_hash};
use crate::common::io::io_error;
use crate::prepare::report::Result;

/// Undoes `undos` (of the journal in `journal`), last first; says how many of them had a
/// change to undo, and what was saved first because someone changed it after qola wrote it.
pub(super) fn undo_all(journal: &Path, undos: &[Undo]) -> Result<Undone> {
    // The journal is `<work tree>/.git/qola/journal` (a submodule's files are under the same
    // work tree); backups go beside it, as a forced preparation's do.
    let qola_dir = journal.parent().unwrap_or(journal);
    let root = qola_dir.parent().and_then(Path::parent);
    let mut rescue = Rescue {
        root,
        dir: qola_dir.join("backups").join(format!(
            "changed-while-preparing-{}",
            crate::common::time::unix_now()
        )),
        undone: Undone::default(),
    };
    for undo in undos.iter().rev() {
        let changed = undo_one(undo, &mut rescue)?;
        rescue.undone.changes += usize::from(changed);
    }
    Ok(rescue.undone)
}

/// Where a rollback saves what someone changed after qola wrote it.
struct Rescue<'a> {
    /// The checkout's work tree (paths are saved relative to it).
    root: Option<&'a Path>,
    /// The backup directory.
    dir: PathBuf,
    undone: Undone,
}

impl Rescue<'_> {
    /// Before an undo replaces `path`: if it is not what qola left (`left`), moves it into the
    /// backup directory.
    fn save_if_changed(&mut self, path: &Path, left: &Left) -> Result<()> {
        let now = match std::fs::symlink_metadata(path) {
            Err(_) => Left::Nothing,
            Ok(meta) if meta.is_dir() => Left::Content("a directory".to_string()),
            Ok(meta) => {
                use std::os::unix::fs::PermissionsExt;
                let symlink = meta.file_type().is_symlink();
                let data = if symlink {
                    std::fs::read_link(path)
                        .map(|t| t.into_os_string().into_vec())
                        .map_err(io_error("read", path))?
                } else {
                    std::fs::read(path).map_err(io_error("read", path))?
                };
                let exec = !symlink && meta.permissions().mode() & 0o111 != 0;
                Left::Content(state_hash(symlink, exec, &data))
            }
        };
        if *left == Left::Unknown || now == *left || now == Left::Nothing {
            return Ok(());
        }
        let relative = match self.root.and_then(|r| path.strip_prefix(r).ok()) {
            Some(rel) => rel.to_path_buf(),
            None => path.strip_prefix("/").unwrap_or(path).to_path_buf(),
        };
        let saved = self.dir.join(&relative);
        if let Some(parent) = saved.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io_error("create the backup directory", parent))?;
        }
        std::fs::rename(path, &saved).map_err(io_error("save a changed file to", &saved))?;
        self.undone
            .rescued
            .push(relative.to_string_lossy().into_owned());
        self.undone.backup = Some(self.dir.clone());
        Ok(())
    }
}

/// Removes what is at `path`; whether there was anything.
fn remove_any(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path)
            .map(|()| true)
            .map_err(|e| io_error("remove", path)(e).into()),
        Ok(_) => std::fs::remove_file(path)
            .map(|()| true)
            .map_err(|e| io_error("remove", path)(e).into()),
        Err(_) => Ok(false),
    }
}

/// Undoes one change; whether there was one (a change never made, or undone already, is none).
/// What someone changed after qola wrote it is saved through `rescue` first.
fn undo_one(undo: &Undo, rescue: &mut Rescue) -> Result<bool> {
    let exists = |p: &RawPath| std::fs::symlink_metadata(&p.0).is_ok();
    match undo {
        Undo::Remove { path, left } => {
            rescue.save_if_changed(&path.0, left)?;
            remove_any(&path.0)
        }
        Undo::Restore { path, saved, left } => {
            if !exists(saved) {
                return Ok(false);
            }
            rescue.save_if_changed(&path.0, left)?;
            remove_any(&path.0)?;
            std::fs::rename(&saved.0, &path.0).map_err(io_error("restore", &path.0))?;
            Ok(true)
        }
        Undo::RemoveDir { path } => Ok(std::fs::remove_dir(&path.0).is_ok()),
        Undo::MakeDir { path } => {
            if exists(path) {
                return Ok(false);
            }
            std::fs::create_dir_all(&path.0).map_err(io_error("make again", &path.0))?;
            Ok(true)
        }
        Undo::Move { from, to } => {
            if !exists(to) || exists(from) {
                return Ok(false);
            }
            std::fs::rename(&to.0, &from.0).map_err(io_error("move back", &to.0))?;
            Ok(true)
        }
        Undo::GitFile { path, saved } => match saved {
            Some(saved) => {
                let bytes = std::fs::read(&saved.0).map_err(io_error("read", &saved.0))?;
                if std::fs::read(&path.0).is_ok_and(|now| now == bytes) {
                    return Ok(false);
                }
                crate::common::io::write_atomic(&path.0, &bytes)?;
                Ok(true)
            }
            None => remove_any(&path.0),
        },
        Undo::Checkout { workdir, existed } => {
            if !*existed {
                return remove_any(&workdir.0);
            }
            let Ok(entries) = std::fs::read_dir(&workdir.0) else {
                return Ok(false);
            };
            let mut changed = false;
            for entry in entries.flatten() {
                if entry.file_name() != ".git" {
                    changed |= remove_any(&entry.path())?;
                }
            }
            Ok(changed)
        }
    }
}
