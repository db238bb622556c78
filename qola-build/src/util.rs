//! Small helpers every subsystem uses: atomic writes, time, shell quoting, path joining.

use std::io::Write;
use std::path::Path;

use crate::error::{Result, io_error};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename. The
/// temporary name is this call's own (process id and a counter), so threads and processes
/// writing the same path at once each rename a whole file into place.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
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
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    write_atomic(path, bytes)?;
    Ok(true)
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `secs` since the Unix epoch as an RFC 3339 UTC time stamp (`2026-12-03T01:39:33Z`).
pub(crate) fn utc_timestamp(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm, proleptic Gregorian calendar).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
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

    #[test]
    fn time_stamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_796_261_973), "2026-12-03T01:39:33Z");
    }
}
