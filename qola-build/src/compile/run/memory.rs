//! How many compiles run at once: the smaller of the job limit (`.jobs()`, else `MAX_JOBS`, else
//! `NUM_JOBS`, else the CPU count; Cargo's jobserver then hands out the tokens) and what the
//! available memory holds. A composable_kernel unit needs close to a gigabyte, so on a machine with many cores and
//! little memory the jobserver alone would start more compilers than fit and the OOM killer would
//! end the build.
//!
//! The memory a unit needs is estimated, in this order: `QOLA_JOB_MEMORY_MB`; the peak measured
//! when the units about to compile were last compiled (kept in qola's object cache, see
//! `cache`), raised to the build's default for units never measured; the build's default
//! ([`crate::HipBuild::memory_per_job`]). The cap is `MemAvailable` (from `/proc/meminfo`, read
//! once per build) divided by that estimate, never below one. The build log's first line says
//! how many ran at once and why.

/// Where a per-unit memory estimate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Estimate {
    /// `QOLA_JOB_MEMORY_MB`.
    Env(u64),
    /// The largest peak measured for the units to compile.
    Measured(u64),
    /// The build's default, for units never measured.
    Default(u64),
}

impl Estimate {
    fn bytes(self) -> u64 {
        match self {
            Estimate::Env(b) | Estimate::Measured(b) | Estimate::Default(b) => b,
        }
    }

    fn source(self) -> &'static str {
        match self {
            Estimate::Env(_) => "QOLA_JOB_MEMORY_MB",
            Estimate::Measured(_) => "measured",
            Estimate::Default(_) => "the build's default",
        }
    }

    /// The estimate for units whose measured peaks are `measured` (`None`: never measured).
    pub(crate) fn choose(
        env: Option<u64>,
        measured: &[Option<u64>],
        default: Option<u64>,
    ) -> Option<Estimate> {
        if let Some(bytes) = env {
            return Some(Estimate::Env(bytes));
        }
        let largest = measured.iter().flatten().copied().max();
        let unmeasured = measured.iter().any(Option::is_none);
        match (largest, default) {
            (Some(m), Some(d)) if unmeasured && d > m => Some(Estimate::Default(d)),
            (Some(m), _) => Some(Estimate::Measured(m)),
            (None, Some(d)) => Some(Estimate::Default(d)),
            (None, None) => None,
        }
    }
}

/// How many compiles run at once, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parallelism {
    /// Compiles at once.
    pub jobs: usize,
    /// Why, in words, for the build log.
    pub reason: String,
    /// The memory the cap divided (`MemAvailable` when the build started), when there was a
    /// cap: the line the timings report draws the memory in use against.
    pub memory: Option<u64>,
}

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

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Decides the parallelism: `limit` compiles (described by `limit_source`), capped by what
/// `available` bytes hold at `estimate` each.
pub(crate) fn decide(
    limit: usize,
    limit_source: &str,
    estimate: Option<Estimate>,
    available: Option<u64>,
) -> Parallelism {
    let limit = limit.max(1);
    let (Some(estimate), Some(available)) = (estimate.filter(|e| e.bytes() > 0), available) else {
        return Parallelism {
            jobs: limit,
            reason: format!(
                "{limit} at once: the job limit ({limit_source}, within Cargo's jobserver); no memory cap ({})",
                if estimate.is_none() {
                    "no per-unit memory estimate"
                } else {
                    "available memory unknown"
                }
            ),
            memory: None,
        };
    };
    let fit = usize::try_from(available / estimate.bytes())
        .unwrap_or(usize::MAX)
        .max(1);
    let memory = format!(
        "{} available / {} per unit ({})",
        gib(available),
        gib(estimate.bytes()),
        estimate.source()
    );
    if fit < limit {
        Parallelism {
            jobs: fit,
            reason: format!(
                "{fit} at once: memory holds {fit} ({memory}); the job limit was {limit} ({limit_source})"
            ),
            memory: Some(available),
        }
    } else {
        Parallelism {
            jobs: limit,
            reason: format!(
                "{limit} at once: the job limit ({limit_source}, within Cargo's jobserver); memory would hold {fit} ({memory})"
            ),
            memory: Some(available),
        }
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
    fn memory_caps_jobs_but_never_below_one_and_says_why() {
        let measured = Some(Estimate::Measured(GIB));
        let p = decide(16, "NUM_JOBS=16", measured, Some(6 * GIB + 5));
        assert_eq!(p.jobs, 6);
        assert_eq!(
            p.reason,
            "6 at once: memory holds 6 (6.00 GiB available / 1.00 GiB per unit (measured)); the job limit was 16 (NUM_JOBS=16)"
        );
        assert_eq!(decide(2, "NUM_JOBS=2", measured, Some(6 * GIB)).jobs, 2);
        assert_eq!(decide(16, "16 CPUs", measured, Some(GIB / 2)).jobs, 1);
        let unknown = decide(16, "16 CPUs", measured, None);
        assert_eq!(unknown.jobs, 16);
        assert!(unknown.reason.contains("available memory unknown"));
        assert_eq!(decide(4, "4 CPUs", None, Some(GIB)).jobs, 4);
    }

    #[test]
    fn the_estimate_prefers_the_environment_then_measured_peaks_then_the_default() {
        let mb = 1 << 20;
        assert_eq!(
            Estimate::choose(Some(5 * mb), &[Some(GIB)], Some(GIB)),
            Some(Estimate::Env(5 * mb))
        );
        assert_eq!(
            Estimate::choose(None, &[Some(300 * mb), Some(800 * mb)], Some(GIB)),
            Some(Estimate::Measured(800 * mb))
        );
        // A unit never measured counts at the default when that is larger.
        assert_eq!(
            Estimate::choose(None, &[Some(300 * mb), None], Some(GIB)),
            Some(Estimate::Default(GIB))
        );
        assert_eq!(
            Estimate::choose(None, &[Some(2 * GIB), None], Some(GIB)),
            Some(Estimate::Measured(2 * GIB))
        );
        assert_eq!(Estimate::choose(None, &[None], None), None);
    }
}
