//! The stamp: what the last successful preparation produced, kept in the checkout's git
//! directory (`.git/qola/stamp.json`) where `git reset`, `git clean` and `git checkout` never
//! reach. Beside it: `journal/` while a preparation writes (see `prepare::journal`), `backups/`
//! (local edits saved before a forced preparation, what a resync moved out of its way), and the
//! `preparing` marker an older qola wrote instead of a journal, which is still recognized.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::common::io::io_error;
use crate::common::io::write_atomic;
use crate::prepare::git::PathState;
use crate::prepare::record::key::{KeyComponents, SCHEMA};
use crate::prepare::report::Result;

/// The prepared state as the stamp records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Stamp {
    /// Layout version ([`SCHEMA`]); another value counts as no stamp.
    pub schema: u32,
    /// The key the tree was prepared for.
    pub key: String,
    /// The key's components, to name what changed.
    pub components: KeyComponents,
    /// The tree's fingerprint right after preparation.
    pub fingerprint: String,
    /// Each repository's `HEAD` in the prepared state.
    pub heads: BTreeMap<String, Option<String>>,
    /// Every path whose prepared content differs from the pinned commit, with that content.
    pub paths: BTreeMap<String, PathState>,
    /// When it was written (seconds since the Unix epoch).
    pub prepared_at: u64,
    /// The action that wrote it.
    pub action: String,
}

/// qola's files inside the checkout's git directory.
#[derive(Debug, Clone)]
pub(crate) struct QolaDir {
    dir: PathBuf,
}

impl QolaDir {
    /// The area for the repository whose git directory is `git_dir`.
    pub(crate) fn new(git_dir: &Path) -> QolaDir {
        QolaDir {
            dir: git_dir.join("qola"),
        }
    }

    fn stamp_path(&self) -> PathBuf {
        self.dir.join("stamp.json")
    }

    fn marker_path(&self) -> PathBuf {
        self.dir.join("preparing")
    }

    /// The stamp, or `None` when missing, corrupt or of another schema.
    pub(crate) fn read_stamp(&self) -> Option<Stamp> {
        let bytes = std::fs::read(self.stamp_path()).ok()?;
        let stamp: Stamp = serde_json::from_slice(&bytes).ok()?;
        (stamp.schema == SCHEMA).then_some(stamp)
    }

    /// Whether a stamp file exists at all (to tell "corrupt" from "absent" in reasons).
    pub(crate) fn stamp_exists(&self) -> bool {
        self.stamp_path().exists()
    }

    /// Writes the stamp atomically (temporary file, fsync, rename).
    pub(crate) fn write_stamp(&self, stamp: &Stamp) -> Result<()> {
        let json = serde_json::to_vec_pretty(stamp).expect("the stamp always serializes");
        Ok(write_atomic(&self.stamp_path(), &json)?)
    }

    /// Whether an interrupted preparation of an older qola left its marker (qola now keeps a
    /// journal instead, see `prepare::journal`).
    pub(crate) fn marker_present(&self) -> bool {
        self.marker_path().exists()
    }

    /// Removes an older qola's marker (its preparation is finished).
    pub(crate) fn clear_marker(&self) -> Result<()> {
        match std::fs::remove_file(self.marker_path()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error("remove the marker", self.marker_path())(e).into())
            }
            _ => Ok(()),
        }
    }

    /// A new file name for a backup of local edits.
    pub(crate) fn backup_path(&self, unix_seconds: u64) -> PathBuf {
        self.new_backup(&format!("local-edits-{unix_seconds}"), ".patch")
    }

    /// A new directory name for what a preparation found in its way (moved there, not lost).
    pub(crate) fn backup_dir(&self, unix_seconds: u64) -> PathBuf {
        self.new_backup(&format!("in-the-way-{unix_seconds}"), "")
    }

    fn new_backup(&self, stem: &str, extension: &str) -> PathBuf {
        let dir = self.dir.join("backups");
        let mut n = 0;
        loop {
            let name = if n == 0 {
                format!("{stem}{extension}")
            } else {
                format!("{stem}-{n}{extension}")
            };
            let path = dir.join(name);
            if !path.exists() {
                return path;
            }
            n += 1;
        }
    }
}
