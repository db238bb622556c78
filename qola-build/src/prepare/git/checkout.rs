//! Opening the managed checkout: the repository at the root, or none yet.

use std::path::Path;

use git2::Repository;

use crate::common::io::io_error;
use crate::prepare::report::{PrepareError, Result};

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
        Err(e) => return Err(io_error("read the checkout directory", root)(e).into()),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(None);
            }
        }
    }
    let repo = Repository::open(root).map_err(|e| match e.code() {
        git2::ErrorCode::Owner => not_owned(root),
        _ => PrepareError::NotACheckout {
            root: root.to_path_buf(),
            why: e.message().to_string(),
        },
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

/// The error for a repository at `path` that git refuses because another user owns it.
pub(crate) fn not_owned(path: &Path) -> PrepareError {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(path).map_or(u32::MAX, |m| m.uid());
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    PrepareError::NotOwned {
        path: path.to_path_buf(),
        owner: user_words(owner),
        user: user_words(user),
    }
}

/// `uid 1000 (alice)`: a user id, with its name when `/etc/passwd` has one.
fn user_words(uid: u32) -> String {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let name = passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
    });
    match name {
        Some(name) => format!("uid {uid} ({name})"),
        None => format!("uid {uid}"),
    }
}
