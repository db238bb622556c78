//! Small helpers every subsystem uses: atomic writes, time, shell quoting, path joining.

use std::io::Write;
use std::path::Path;

use crate::error::{Result, io_error};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io_error("create the directory", dir))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let mut file = std::fs::File::create(&tmp).map_err(io_error("create", &tmp))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io_error("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(io_error("rename into place", path))
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `NotFound`, or a path component that is a file (`NotADirectory`).
pub(crate) fn is_absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Quotes a word for a POSIX shell when it needs it.
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@+,%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `prefix/path`, or `path` for the superproject's empty prefix.
pub(crate) fn join(prefix: &str, path: &str) -> String {
    if prefix.is_empty() {
        path.to_string()
    } else {
        format!("{prefix}/{path}")
    }
}

/// The commit a repository's `HEAD` points at (`None`: unborn or unreadable).
pub(crate) fn head_commit(repo: &git2::Repository) -> Option<git2::Oid> {
    repo.head().ok()?.target()
}

/// The 12-character abbreviation of a commit id used in messages.
pub(crate) fn short_id(id: &str) -> &str {
    &id[..12.min(id.len())]
}
