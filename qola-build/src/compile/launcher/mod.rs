//! Compiler launchers: the program that wraps every compile (`QOLA_COMPILER_LAUNCHER`,
//! [`crate::HipBuild::launcher`]), as one value decided once when the build is resolved
//! ([`Launcher::decide`], from the program's name and, for sccache, whether its config has a
//! `[dist]` section). Each kind supplies what the build asks of it:
//!
//! | kind | chosen when | environment qola adds (unless the user set it) | server | counters | compiles' peak memory counts |
//! |---|---|---|---|---|---|
//! | none | no launcher | — | — | — | yes |
//! | ccache (`ccache.rs`) | the program is `ccache*` | `CCACHE_BASEDIR` (the links' directory), `CCACHE_NOHASHDIR=1` | — | `ccache --print-stats` | when ccache answered none |
//! | sccache (`sccache.rs`) | the program is `sccache*` | `SCCACHE_BASEDIRS` (the links' directory) | its own for the build | `sccache --show-stats` | when sccache answered none |
//! | farm (`farm/`) | `sccache*` alone, and its config has `[dist]` | as sccache, plus qola's config | its own for the build | sccache's, with distributed compiles | no: the compiles ran elsewhere (as sccache when the farm is down) |
//! | other | anything else (`distcc`, a script) | — | — | — | no: it may have answered from a cache |
//!
//! The environment makes launchers hash names alike in every place: compiles run in the links'
//! directory of the build's roots (see `roots`) with every path by its name, and these settings
//! keep that directory out of what they hash. sccache reads its settings when its server
//! starts, so each build runs its own server (`farm::Server`), stopped when the build ends.
//!
//! Adding a launcher: a file here with its kind's environment, counters and server, a variant
//! of [`Launcher`] and a line in [`Launcher::decide`]; its tests beside it.

mod ccache;
pub(crate) mod farm;
mod hits;
mod sccache;

use std::path::Path;

use crate::build_script::Env;
use crate::compile::Result;
pub(crate) use ccache::Answer;
pub use farm::FarmReport;
pub(crate) use hits::requests;
pub use hits::{LauncherHits, RemoteFailures};

/// The launcher of a build (see the module docs).
#[derive(Debug)]
pub(crate) enum Launcher {
    /// qola runs the compiler itself.
    None,
    /// ccache.
    Ccache(ccache::Ccache),
    /// sccache, compiling here.
    Sccache(sccache::Sccache),
    /// sccache with a `[dist]` config: the compile farm, or sccache here (`local`) when it is
    /// down.
    Farm {
        dist: Box<farm::Dist>,
        local: sccache::Sccache,
    },
    /// Another program, run as given.
    Other(Vec<String>),
}

/// A launcher's counters before the compiles, to compare with after.
pub(crate) enum Counters {
    /// ccache's.
    Ccache(ccache::Counters),
    /// sccache's (with its distributed compiles).
    Sccache(farm::SccacheStats),
}

/// What the launcher answered for a build's compiles.
#[derive(Debug, Default)]
pub(crate) struct Answered {
    /// Its cache's answers, when it reports them.
    pub hits: Option<LauncherHits>,
    /// What the compile farm did, when the compiles ran on one.
    pub farm: Option<FarmReport>,
}

impl Launcher {
    /// The launcher `words` (program and arguments; empty: none), with what it needs to hash
    /// names alike when compiles run in `links` (the roots' links directory).
    pub(crate) fn decide(env: &Env, words: Vec<String>, links: &Path) -> Result<Launcher> {
        let Some(program) = words.first() else {
            return Ok(Launcher::None);
        };
        let name = Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("ccache") {
            return Ok(Launcher::Ccache(ccache::Ccache::new(env, words, links)?));
        }
        if !name.starts_with("sccache") {
            return Ok(Launcher::Other(words));
        }
        let local = sccache::Sccache::new(env, words, links)?;
        Ok(match local.dist_config(env)? {
            Some(user) => Launcher::Farm {
                dist: Box::new(farm::Dist::new(user)),
                local,
            },
            None => Launcher::Sccache(local),
        })
    }

    /// Asks the compile farm, when the launcher is one (only builds with something to
    /// compile, and `qola plan` for them, ask): when it is up, the build is made ready for it.
    pub(crate) fn ask_farm(&mut self, env: &Env, compile: &farm::Compile) -> Result<()> {
        if let Launcher::Farm { dist, local } = self {
            dist.start(env, compile, &local.program(), local.added_env())?;
        }
        Ok(())
    }

    /// Before the first compile (only builds that compile call this, not `qola plan`):
    /// sccache's server starts, unless the compiles go to the farm.
    pub(crate) fn start(&mut self) {
        match self {
            Launcher::Sccache(sccache) => sccache.start(),
            Launcher::Farm { dist, local } if dist.command().is_none() => local.start(),
            _ => {}
        }
    }

    /// What the farm can do for the build (`Off` but for a started farm launcher).
    pub(crate) fn farm(&self) -> &farm::Farm {
        match self {
            Launcher::Farm { dist, .. } => dist.state(),
            _ => &farm::Farm::Off,
        }
    }

    /// Whether compiles go to the farm.
    pub(crate) fn distributes(&self) -> bool {
        matches!(self, Launcher::Farm { dist, .. } if dist.command().is_some())
    }

    /// The command that runs `compiler` (the compiler and its arguments) through the launcher.
    pub(crate) fn wrap(&self, compiler: Vec<String>) -> Vec<String> {
        let prefix: &[String] = match self {
            Launcher::None => &[],
            Launcher::Ccache(ccache) => ccache.words(),
            Launcher::Sccache(sccache) => sccache.words(),
            Launcher::Farm { dist, local } => match dist.command() {
                Some(command) => {
                    return command
                        .launcher
                        .iter()
                        .chain(&command.args)
                        .cloned()
                        .collect();
                }
                None => local.words(),
            },
            Launcher::Other(words) => words,
        };
        prefix.iter().cloned().chain(compiler).collect()
    }

    /// The variables every compile runs with.
    pub(crate) fn env(&self) -> &[(String, String)] {
        match self {
            Launcher::None | Launcher::Other(_) => &[],
            Launcher::Ccache(ccache) => ccache.env(),
            Launcher::Sccache(sccache) => sccache.env(),
            Launcher::Farm { dist, local } => match dist.command() {
                Some(command) => command.server.env(),
                None => local.env(),
            },
        }
    }

    /// The launcher's counters now, when it keeps any.
    pub(crate) fn counters(&self) -> Option<Counters> {
        match self {
            Launcher::Ccache(ccache) => ccache.counters().map(Counters::Ccache),
            Launcher::Sccache(sccache) => sccache.stats().map(Counters::Sccache),
            Launcher::Farm { dist, local } => match dist.command() {
                Some(command) => farm::SccacheStats::read(&command.server),
                None => local.stats(),
            }
            .map(Counters::Sccache),
            Launcher::None | Launcher::Other(_) => None,
        }
    }

    /// What it answered since `before`; `log`: the log its [`Launcher::remote_log_var`] named.
    pub(crate) fn answered(&self, before: Option<Counters>, log: Option<&Path>) -> Answered {
        let now = self.counters();
        match (before, now) {
            (Some(Counters::Ccache(before)), Some(Counters::Ccache(after))) => {
                let mut hits = before.since(&after);
                if hits.remote_errors > 0
                    && let Some(log) = log
                    && let Ok(text) = std::fs::read_to_string(log)
                {
                    hits.remote_failures = Some(ccache::remote_failures(&text));
                }
                Answered {
                    hits: Some(hits),
                    farm: None,
                }
            }
            // A farm's report says what sccache's cache answered too.
            (Some(Counters::Sccache(before)), Some(Counters::Sccache(after))) => {
                match self.distributes() {
                    true => Answered {
                        hits: None,
                        farm: Some(before.since(&after)),
                    },
                    false => Answered {
                        hits: Some(sccache::hits_since(&before, &after)),
                        farm: None,
                    },
                }
            }
            _ => Answered::default(),
        }
    }

    /// The variable that makes the launcher keep a log that says why requests to its remote
    /// storage failed (ccache's `CCACHE_LOGFILE`), when qola keeps one (see
    /// `ccache::Ccache::logs_remote`).
    pub(crate) fn remote_log_var(&self) -> Option<&'static str> {
        matches!(self, Launcher::Ccache(c) if c.logs_remote()).then_some("CCACHE_LOGFILE")
    }

    /// The variable that makes the launcher log, per compile, where it answered from (ccache's
    /// `CCACHE_STATSLOG`), when it can.
    pub(crate) fn unit_log_var(&self) -> Option<&'static str> {
        matches!(self, Launcher::Ccache(_)).then_some("CCACHE_STATSLOG")
    }

    /// Per source (as the compiles named it), where the launcher answered from, read from the
    /// log its [`Launcher::unit_log_var`] named.
    pub(crate) fn unit_answers(&self, log: &Path) -> std::collections::BTreeMap<String, Answer> {
        match (self, std::fs::read_to_string(log)) {
            (Launcher::Ccache(_), Ok(text)) => ccache::stats_log(&text),
            _ => Default::default(),
        }
    }

    /// Whether the peak memory measured around its compiles is the compiler's: with no
    /// launcher, or one that compiled every unit here itself.
    pub(crate) fn peaks_count(&self, answered: &Answered) -> bool {
        match self {
            Launcher::None => true,
            Launcher::Ccache(_) | Launcher::Sccache(_) => {
                answered.hits.is_some_and(|h| h.hits == 0)
            }
            Launcher::Farm { dist, .. } => {
                dist.command().is_none() && answered.hits.is_some_and(|h| h.hits == 0)
            }
            Launcher::Other(_) => false,
        }
    }
}
