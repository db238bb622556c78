//! Opening the managed checkout: the repository at the root, or none yet.

use std::path::Path;

use git2::Repository;

use crate::prepare::report::error::io_error;
use crate::prepare::report::error::{PrepareError, Result};

/// Opens the checkout at `root`; `None` when there is none yet (missing or empty directory).
pub(crate) fn open_checkout(root: &Path) -> Result<Option<Repository>> {
    if std::fs::symlink_metadata(root).is_ok_and(|m| !m.is_dir()) && !root.is_dir() {
        return Err(PrepareError::NotACheckout {
            root: root.to_path_buf(),
            why: "it is a file, not a directory: choose another root (--root, QOLA_AITER_ROOT) or move the file away".to_string(),
        });
    }
    match std::fs::read_dir(root) {
        Err(e) if crate::common::io::is_absent(&e) => return Ok(None),
        Err(e) => return Err(io_error("read the checkout directory", root)(e)),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(None);
            }
        }
    }
    let repo = Repository::open(root).map_err(|e| PrepareError::NotACheckout {
        root: root.to_path_buf(),
        why: e.message().to_string(),
    })?;
    let workdir_matches = repo
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .zip(root.canonicalize().ok())
        .is_some_and(|(w, r)| w == r);
    if !workdir_matches {
        return Err(PrepareError::NotACheckout {
            root: root.to_path_buf(),
            why: "it is inside another repository, not the root of its own".to_string(),
        });
    }
    Ok(Some(repo))
}
