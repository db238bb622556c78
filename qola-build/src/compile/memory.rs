//! Capping parallel compiles by memory: a composable_kernel unit needs close to a gigabyte, so
//! on a machine with many cores and little memory the jobserver alone would start more compilers
//! than fit and the kernel's OOM killer would end the build.
//!
//! The cap is `MemAvailable` (from `/proc/meminfo`, read once per build) divided by the memory a
//! unit needs, never below one job. Where the available memory cannot be read (not Linux), only
//! the job limit applies.

/// The available memory in bytes, from `/proc/meminfo`.
pub(crate) fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// At most `limit` jobs, and no more than `available` bytes hold at `per_job` bytes each (at
/// least one).
pub(crate) fn cap(limit: usize, per_job: u64, available: Option<u64>) -> usize {
    match available {
        Some(bytes) if per_job > 0 => {
            let fit = usize::try_from(bytes / per_job).unwrap_or(usize::MAX);
            limit.min(fit).max(1)
        }
        _ => limit.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2097152 kB\n";
        assert_eq!(mem_available(text), Some(2 * GIB));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn memory_caps_jobs_but_never_below_one() {
        assert_eq!(cap(16, GIB, Some(6 * GIB + 5)), 6);
        assert_eq!(cap(2, GIB, Some(6 * GIB)), 2);
        assert_eq!(cap(16, GIB, Some(GIB / 2)), 1);
        assert_eq!(cap(16, GIB, None), 16);
        assert_eq!(cap(16, 0, Some(GIB)), 16);
    }
}
