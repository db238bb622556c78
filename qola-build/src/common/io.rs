//! File writes every subsystem shares, and the one I/O error they report: [`IoError`] says what
//! was attempted on which path. Each subsystem's error carries it in its own `Io` variant.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A file-system operation that failed: what was attempted, on which path, and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} {}: {source}", path.display())]
pub struct IoError {
    /// What was attempted ("write", "create the directory").
    pub what: String,
    /// The path concerned.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

/// Shorthand for an [`IoError`] with a path: `.map_err(io_error("read", &path))?`.
pub(crate) fn io_error(
    what: &str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> IoError {
    let what = what.to_string();
    let path = path.into();
    move |source| IoError { what, path, source }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename. The
/// temporary name is this call's own (process id and a counter), so threads and processes
/// writing the same path at once each rename a whole file into place.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io_error("create the directory", dir))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id(),
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let mut file = std::fs::File::create(&tmp).map_err(io_error("create", &tmp))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io_error("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(io_error("rename into place", path))
}

/// Writes `bytes` to `path` (atomically) unless the file already holds exactly them, so an
/// unchanged output keeps its mtime. Returns whether it wrote.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, IoError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    write_atomic(path, bytes)?;
    Ok(true)
}

/// Makes `path` a directory of qola's own (with its missing parents), never following what is
/// there instead: a symlink (qola makes none in its place) is removed, the link only, and a
/// directory made; a file or anything else is refused, naming it (it may be the user's).
pub(crate) fn own_dir(path: &Path) -> Result<(), IoError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::remove_file(path).map_err(io_error("remove the symlink", path))?;
            std::fs::create_dir(path).map_err(io_error("create the directory", path))
        }
        Ok(_) => Err(IoError {
            what: "use as qola's directory (it is not a directory: move it away)".to_string(),
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        }),
        Err(_) => std::fs::create_dir_all(path).map_err(io_error("create the directory", path)),
    }
}

/// `NotFound`, or a path component that is a file (`NotADirectory`).
pub(crate) fn is_absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_writing_one_path_at_once_each_succeed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("dir/answer");
        std::thread::scope(|scope| {
            for i in 0..8u8 {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..50 {
                        write_atomic(path, &[i; 64]).unwrap();
                    }
                });
            }
        });
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() == 64 && bytes.iter().all(|b| *b == bytes[0]));
        let left: Vec<_> = std::fs::read_dir(tmp.path().join("dir")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
    }
}
