//! What a compiler launcher says about its own cache, for the build's summary line.
//!
//! Only `ccache` reports in a form qola reads: its counters (`ccache --print-stats`, the same
//! cache directory and remote storage the compiles use, through the same environment) before
//! and after the compiles; the difference is what this build's compiles got from it. Another
//! build sharing that ccache at the same time would blur the figures; they are a report, never
//! a decision. Other launchers (sccache, distcc) report nothing here.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// What the launcher's cache answered for a build's compiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LauncherHits {
    /// Compiles answered from the launcher's cache (local or remote).
    pub hits: u64,
    /// Of those, answered from remote storage (ccache's `remote_storage`, e.g. Redis).
    pub remote_hits: u64,
    /// Compiles the launcher had to run.
    pub misses: u64,
}

/// ccache's counters, when the launcher is ccache.
#[derive(Debug, Clone)]
pub(crate) struct Counters(BTreeMap<String, u64>);

impl Counters {
    /// Reads the counters of `launcher` (its program and arguments) if it is ccache.
    pub(crate) fn read(launcher: &[String]) -> Option<Counters> {
        let program = launcher.first()?;
        let name = Path::new(program).file_name()?.to_string_lossy();
        if !name.starts_with("ccache") {
            return None;
        }
        let out = Command::new(program).arg("--print-stats").output().ok()?;
        if !out.status.success() {
            return None;
        }
        Some(Counters::parse(&String::from_utf8_lossy(&out.stdout)))
    }

    /// `name<TAB>value` lines.
    fn parse(text: &str) -> Counters {
        Counters(
            text.lines()
                .filter_map(|l| {
                    let (name, value) = l.split_once('\t')?;
                    Some((name.to_string(), value.trim().parse().ok()?))
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// What happened between `self` and `later`.
    pub(crate) fn since(&self, later: &Counters) -> LauncherHits {
        let delta = |name: &str| later.get(name).saturating_sub(self.get(name));
        LauncherHits {
            hits: delta("direct_cache_hit") + delta("preprocessed_cache_hit"),
            remote_hits: delta("remote_storage_hit"),
            misses: delta("cache_miss"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ccache_counters_give_hits_remote_hits_and_misses() {
        let before =
            Counters::parse("cache_miss\t3\ndirect_cache_hit\t1\nstats_updated_timestamp\t17\n");
        let after = Counters::parse(
            "cache_miss\t4\ndirect_cache_hit\t5\npreprocessed_cache_hit\t2\nremote_storage_hit\t6\n",
        );
        assert_eq!(
            before.since(&after),
            LauncherHits {
                hits: 6,
                remote_hits: 6,
                misses: 1
            }
        );
    }

    #[test]
    fn only_ccache_is_asked() {
        assert!(Counters::read(&["sccache".to_string()]).is_none());
        assert!(Counters::read(&[]).is_none());
    }
}
