//! sccache as the launcher, compiling here: the settings that make it hash names alike, its own
//! server for the build, and its counters.
//!
//! qola sets `SCCACHE_BASEDIRS` to the links' directory unless the user set it. sccache 0.15 and
//! newer read it when their server starts, so each build that compiles starts a server of its
//! own (`farm::Server`: a child process on a free port, stopped when the build ends); when it
//! cannot start, sccache's clients start one of their own, as without qola. Its counters
//! (`--show-stats`) are read through that server.

use std::path::{Path, PathBuf};

use super::{FarmLauncher, SccacheStats, Server, UserConfig};
use crate::build_script::{Env, EnvError};
use crate::compile::Result;
use crate::compile::launcher::LauncherHits;
use crate::compile::launcher::{self as launcher, Answered, Kind};

/// When the program is `sccache*`: the compile farm when sccache runs alone and the user's
/// config has a `[dist]` section (sccache here while the farm is down), else sccache here.
pub(crate) fn detect(env: &Env, words: &[String], links: &Path) -> Result<Option<Box<dyn Kind>>> {
    if !launcher::program_name(words).starts_with("sccache") {
        return Ok(None);
    }
    let local = Sccache::new(env, words.to_vec(), links)?;
    Ok(Some(match local.dist_config(env)? {
        Some(user) => Box::new(FarmLauncher::new(user, local)),
        None => Box::new(local),
    }))
}

/// sccache, with the environment its compiles run with and, once started, its server.
#[derive(Debug)]
pub(crate) struct Sccache {
    words: Vec<String>,
    env: Vec<(String, String)>,
    server: Option<Server>,
}

impl Sccache {
    /// `words` (sccache and its arguments) for compiles in `links`.
    pub(crate) fn new(env: &Env, words: Vec<String>, links: &Path) -> Result<Sccache, EnvError> {
        let mut added = Vec::new();
        if env.var("SCCACHE_BASEDIRS")?.is_none() {
            added.push(("SCCACHE_BASEDIRS".to_string(), links.display().to_string()));
        }
        Ok(Sccache {
            words,
            env: added,
            server: None,
        })
    }

    /// The user's sccache config when it has a `[dist]` section and sccache runs alone (no
    /// arguments): the compile farm's.
    pub(crate) fn dist_config(&self, env: &Env) -> Result<Option<UserConfig>> {
        if self.words.len() > 1 {
            return Ok(None);
        }
        UserConfig::read(env)
    }

    /// The program.
    pub(crate) fn program(&self) -> PathBuf {
        PathBuf::from(&self.words[0])
    }

    /// The variables qola adds for it.
    pub(crate) fn added_env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Its counters, through this build's server.
    pub(crate) fn stats(&self) -> Option<SccacheStats> {
        SccacheStats::read(self.server.as_ref()?)
    }
}

impl Kind for Sccache {
    fn words(&self) -> &[String] {
        &self.words
    }

    /// The variables its compiles run with (its server's, once started).
    fn env(&self) -> &[(String, String)] {
        match &self.server {
            Some(server) => server.env(),
            None => &self.env,
        }
    }

    /// Starts this build's server (see the module docs).
    fn start(&mut self) {
        if self.server.is_none() && self.words.len() == 1 {
            self.server = Server::start(&self.program(), None, &self.env).ok();
        }
    }

    fn counters(&self) -> Option<launcher::Counters> {
        self.stats().map(launcher::Counters::new)
    }

    fn answered(&self, before: launcher::Counters, _log: Option<&Path>) -> Answered {
        match (before.of::<SccacheStats>(), self.stats()) {
            (Some(before), Some(after)) => Answered {
                hits: Some(hits_since(&before, &after)),
                elsewhere: None,
            },
            _ => Answered::default(),
        }
    }

    /// When sccache answered none of them from its cache.
    fn peaks_count(&self, answered: &Answered) -> bool {
        answered.hits.is_some_and(|h| h.hits == 0)
    }
}

/// What sccache's cache answered between `before` and `after`.
pub(crate) fn hits_since(before: &SccacheStats, after: &SccacheStats) -> LauncherHits {
    let hits = after.cache_hits.saturating_sub(before.cache_hits);
    LauncherHits {
        launcher: "sccache",
        hits,
        remote_hits: if after.remote { hits } else { 0 },
        misses: after.cache_misses.saturating_sub(before.cache_misses),
        // sccache counts no failed remote requests apart from its other cache errors.
        remote_errors: 0,
        remote_failures: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sccache_counters_give_hits_and_misses_and_a_remote_cache_s_hits_are_remote() {
        let stats = |hits: u64, misses: u64, location: &str| {
            SccacheStats::parse(&format!(
                r#"{{"stats":{{"cache_hits":{{"counts":{{"C/C++":{hits}}}}},"cache_misses":{{"counts":{{"C/C++":{misses}}}}},"compilations":{misses},"dist_compiles":{{}},"dist_errors":0}},"cache_location":"{location}"}}"#
            ))
            .unwrap()
        };
        let local = hits_since(
            &stats(1, 2, "Local disk: /c"),
            &stats(4, 3, "Local disk: /c"),
        );
        assert_eq!((local.hits, local.remote_hits, local.misses), (3, 0, 1));
        let redis = hits_since(&stats(0, 0, "Redis"), &stats(5, 0, "Redis"));
        assert_eq!((redis.hits, redis.remote_hits), (5, 5));
    }
}
