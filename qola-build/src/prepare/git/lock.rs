//! The checkout lock: one preparation at a time per checkout, across processes.
//!
//! The lock file lives beside the checkout (`<parent>/.<name>.qola-lock`), not inside it, so it
//! exists before the first clone and never shows in the tree. It is an advisory `flock`: the
//! operating system releases it when the process ends, so a killed build never leaves it held.
//! The root it is keyed by is canonical (see `options::canonical_root`): a symlinked root, a
//! relative one or one spelled with `..` share the lock of the real path, outside the tree.

use std::path::{Path, PathBuf};

use crate::common::io::io_error;
use crate::common::lock::{Held, acquire};
use crate::prepare::report::Result;

/// A held lock; released on drop.
#[derive(Debug)]
pub(crate) struct CheckoutLock {
    _held: Held,
}

/// The lock file of the checkout at `root`.
pub(crate) fn lock_path(root: &Path) -> PathBuf {
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "aiter".to_string());
    root.parent()
        .unwrap_or(Path::new("."))
        .join(format!(".{name}.qola-lock"))
}

/// Takes the lock of the checkout at `root`, calling `waiting` once (with the lock file and who
/// holds it) if another process holds it.
pub(crate) fn lock_checkout(
    root: &Path,
    waiting: impl FnOnce(&Path, &str),
) -> Result<CheckoutLock> {
    let path = lock_path(root);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_error("create the directory", dir))?;
    }
    let held = acquire(&path, |who| waiting(&path, who)).map_err(io_error("lock", &path))?;
    Ok(CheckoutLock { _held: held })
}
