//! ccache as the launcher: the settings that make it hash names alike in every place, and its
//! counters.
//!
//! qola sets `CCACHE_BASEDIR` to the links' directory (an absolute path there becomes relative)
//! unless the user set it (in the environment or ccache's own configuration), and
//! `CCACHE_NOHASHDIR=1` (the compile's directory is not hashed: it matters with `-g`, and objects
//! name `.`) unless the user set `CCACHE_HASHDIR` or `CCACHE_NOHASHDIR`.
//!
//! Its counters (`ccache --print-stats`, the same cache directory and remote storage the
//! compiles use, through the same environment) are read before and after the compiles; the
//! difference is what this build's compiles got from it. Another build sharing that ccache at the
//! same time would blur the figures; they are a report, never a decision.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::build_script::{Env, EnvError};
use crate::compile::Result;
use crate::compile::launcher::hits::{LauncherHits, RemoteFailures};
use crate::compile::launcher::{self as launcher, Answered, Kind, Logs};

/// ccache, when the program is `ccache*`.
pub(crate) fn detect(env: &Env, words: &[String], links: &Path) -> Result<Option<Box<dyn Kind>>> {
    match launcher::program_name(words).starts_with("ccache") {
        true => Ok(Some(Box::new(Ccache::new(env, words.to_vec(), links)?))),
        false => Ok(None),
    }
}

/// ccache, with the environment its compiles run with.
#[derive(Debug)]
pub(crate) struct Ccache {
    words: Vec<String>,
    env: Vec<(String, String)>,
    logs_remote: bool,
}

impl Ccache {
    /// `words` (ccache and its arguments) for compiles in `links`.
    pub(crate) fn new(env: &Env, words: Vec<String>, links: &Path) -> Result<Ccache, EnvError> {
        let mut added = Vec::new();
        if env.var("CCACHE_BASEDIR")?.is_none() && config(&words[0], "base_dir").is_none() {
            added.push(("CCACHE_BASEDIR".to_string(), links.display().to_string()));
        }
        if env.var("CCACHE_HASHDIR")?.is_none() && env.var("CCACHE_NOHASHDIR")?.is_none() {
            added.push(("CCACHE_NOHASHDIR".to_string(), "1".to_string()));
        }
        // With remote storage, a log of qola's own tells a refusal from no answer; never when
        // the user keeps a log of their own.
        let remote = env.var("CCACHE_REMOTE_STORAGE")?.is_some()
            || config(&words[0], "remote_storage").is_some();
        let own_log =
            env.var("CCACHE_LOGFILE")?.is_some() || config(&words[0], "log_file").is_some();
        Ok(Ccache {
            words,
            env: added,
            logs_remote: remote && !own_log,
        })
    }

    /// Whether qola keeps ccache's log for the build (`CCACHE_LOGFILE`), to say why requests
    /// to its remote storage failed.
    pub(crate) fn logs_remote(&self) -> bool {
        self.logs_remote
    }

    /// Its counters now.
    fn read_counters(&self) -> Option<Counters> {
        let out = Command::new(&self.words[0])
            .arg("--print-stats")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        Some(Counters::parse(&String::from_utf8_lossy(&out.stdout)))
    }
}

impl Kind for Ccache {
    fn words(&self) -> &[String] {
        &self.words
    }

    fn env(&self) -> &[(String, String)] {
        &self.env
    }

    fn counters(&self) -> Option<launcher::Counters> {
        self.read_counters().map(launcher::Counters::new)
    }

    fn answered(&self, before: launcher::Counters, log: Option<&Path>) -> Answered {
        let (Some(before), Some(after)) = (before.of::<Counters>(), self.read_counters()) else {
            return Answered::default();
        };
        let mut hits = before.since(&after);
        if hits.remote_errors > 0
            && let Some(log) = log
            && let Ok(text) = std::fs::read_to_string(log)
        {
            hits.remote_failures = Some(remote_failures(&text));
        }
        Answered {
            hits: Some(hits),
            elsewhere: None,
        }
    }

    /// When ccache answered none of them from its cache.
    fn peaks_count(&self, answered: &Answered) -> bool {
        answered.hits.is_some_and(|h| h.hits == 0)
    }

    fn logs(&self) -> Option<&dyn Logs> {
        Some(self)
    }
}

impl Logs for Ccache {
    /// `CCACHE_LOGFILE`, when qola keeps ccache's log (see [`Ccache::logs_remote`]).
    fn remote_log_var(&self) -> Option<&'static str> {
        self.logs_remote().then_some("CCACHE_LOGFILE")
    }

    fn unit_log_var(&self) -> Option<&'static str> {
        Some("CCACHE_STATSLOG")
    }

    fn unit_answers(&self, log: &Path) -> BTreeMap<String, Answer> {
        std::fs::read_to_string(log)
            .map(|text| stats_log(&text))
            .unwrap_or_default()
    }
}

/// Where ccache answered one compile from, by its stats log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Its local cache.
    Local,
    /// Its remote storage.
    Remote,
    /// Neither: the compiler ran.
    Miss,
}

/// ccache's stats log (`CCACHE_STATSLOG`): a `# <source>` line per compile, then the counters
/// that compile changed. Per source as the compile named it, the last answer.
pub(crate) fn stats_log(text: &str) -> BTreeMap<String, Answer> {
    let mut answers = BTreeMap::new();
    let mut current: Option<(String, Answer)> = None;
    for line in text.lines() {
        if let Some(source) = line.strip_prefix("# ") {
            answers.extend(current.take());
            current = Some((source.trim().to_string(), Answer::Miss));
            continue;
        }
        if let Some((_, answer)) = &mut current {
            match line.trim() {
                "remote_storage_hit" => *answer = Answer::Remote,
                "direct_cache_hit" | "preprocessed_cache_hit" if *answer == Answer::Miss => {
                    *answer = Answer::Local
                }
                _ => {}
            }
        }
    }
    answers.extend(current);
    answers
}

/// Why ccache's requests to its remote storage failed, from its log (`CCACHE_LOGFILE`): each
/// failed request is one line (ccache 4.7 to 4.10 words them so), e.g.
/// `Failed to put /c/e3/5e0n... to http storage: status code: 403`,
/// `Failed to get /c/64/336d... from http storage: Connection (2)`,
/// `Failed to construct backend for redis://...: Redis connection error: Connection refused`.
pub(crate) fn remote_failures(log: &str) -> RemoteFailures {
    let mut failures = RemoteFailures::default();
    for line in log.lines() {
        let failure = line.contains("] Failed to ") || line.contains("] Redis ");
        if !failure || !(line.contains("storage") || line.contains("Redis")) {
            continue;
        }
        let status = line
            .split_once("status code: ")
            .and_then(|(_, code)| code.trim().parse::<u16>().ok());
        let lower = line.to_ascii_lowercase();
        match status {
            Some(401 | 403 | 405 | 407) => {
                failures.refused += 1;
                failures.refused_status = status;
            }
            Some(_) => {
                failures.failed += 1;
                failures.failed_status = status;
            }
            None if lower.contains("auth") || lower.contains("wrongpass") => failures.refused += 1,
            None => failures.unanswered += 1,
        }
    }
    failures
}

/// A setting of ccache's own configuration files (`ccache -k NAME`), when set.
fn config(ccache: &str, name: &str) -> Option<String> {
    let out = Command::new(ccache).args(["-k", name]).output().ok()?;
    let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !value.is_empty()).then_some(value)
}

/// ccache's counters.
#[derive(Debug, Clone)]
pub(crate) struct Counters(BTreeMap<String, u64>);

impl Counters {
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
            launcher: "ccache",
            hits: delta("direct_cache_hit") + delta("preprocessed_cache_hit"),
            remote_hits: delta("remote_storage_hit"),
            misses: delta("cache_miss"),
            remote_errors: delta("remote_storage_error") + delta("remote_storage_timeout"),
            remote_failures: None,
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
            "cache_miss\t4\ndirect_cache_hit\t5\npreprocessed_cache_hit\t2\nremote_storage_hit\t6\nremote_storage_error\t2\nremote_storage_timeout\t1\n",
        );
        assert_eq!(
            before.since(&after),
            LauncherHits {
                launcher: "ccache",
                hits: 6,
                remote_hits: 6,
                misses: 1,
                remote_errors: 3,
                remote_failures: None,
            }
        );
    }

    #[test]
    fn ccaches_log_tells_a_refusal_from_an_error_and_from_no_answer() {
        // What ccache 4.7 logs: nginx refusing a PUT, nginx failing, nothing listening, Redis
        // down, Redis refusing the password; other lines are not failures.
        let log = "\
[2026-12-05T08:18:38.759152 15857] No 64336d in http://127.0.0.1:18089/c (0.39 ms)
[2026-12-05T08:18:38.803715 15857] Failed to put /c/e3/5e0n to http storage: status code: 403
[2026-12-05T08:18:38.803913 15857] Not putting in http://127.0.0.1:18089/c since it failed earlier
[2026-12-05T08:18:38.803715 15858] Failed to put /c/e3/5e0n to http storage: status code: 500
[2026-12-05T08:18:38.809689 15865] Failed to get /c/64/336d from http storage: Connection (2)
[2026-12-05T08:18:38.838742 15873] Failed to construct backend for redis://127.0.0.1:18091: Redis connection error: Connection refused
[2026-12-05T08:18:38.838742 15874] Failed to construct backend for redis://127.0.0.1:6379: Redis authentication error: WRONGPASS
[2026-12-05T08:18:38.803934 15857] Result: remote_storage_error
";
        assert_eq!(
            remote_failures(log),
            RemoteFailures {
                refused: 2,
                failed: 1,
                unanswered: 2,
                refused_status: Some(403),
                failed_status: Some(500),
            }
        );
        let words = remote_failures(log).words("ccache");
        assert_eq!(words.len(), 3);
        assert!(
            words[0]
                .starts_with("ccache's remote storage refused 2 requests (HTTP 403): it answered")
        );
    }

    #[test]
    fn the_stats_log_says_per_compile_where_ccache_answered_from() {
        // What ccache 4.7 writes: a miss, a local hit, a remote hit.
        let log = "# a.hip\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\n# b.hip\ndirect_cache_hit\nlocal_storage_hit\n# c.hip\ndirect_cache_hit\nlocal_storage_miss\nremote_storage_hit\nremote_storage_read_hit\n";
        let answers = stats_log(log);
        assert_eq!(answers["a.hip"], Answer::Miss);
        assert_eq!(answers["b.hip"], Answer::Local);
        assert_eq!(answers["c.hip"], Answer::Remote);
        assert_eq!(answers.len(), 3);
    }
}
