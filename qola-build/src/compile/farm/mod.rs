//! Compile farms: HIP compiles distributed by sccache-dist.
//!
//! The model. With `QOLA_COMPILER_LAUNCHER=sccache` and a `[dist]` section in sccache's config
//! (`SCCACHE_CONF`, else `~/.config/sccache/config`), qola asks the scheduler for its capacity
//! (`sccache --dist-status`) before a build, and [`decide`]s from the answer alone:
//!
//! * [`Farm::Off`]: no dist config (or not sccache): the launcher wraps `hipcc` as any other.
//! * [`Farm::Down`]: a dist config, but no scheduler or no server answers: the build runs
//!   locally through `hipcc` and says so once.
//! * [`Farm::Up`]: sccache distributes only a plain clang driver it can package, not the `hipcc`
//!   script, so each unit runs `sccache <clang++> <hipcc's expanded flags> <the unit's flags>`
//!   (`expand`: hipcc's own `HIPCC_VERBOSE` expansion, once per build). sccache-dist needs the
//!   compiler as an archive with the device bitcode libraries, which its automatic packaging
//!   leaves out: qola builds it once, content-addressed in its cache (`archive`), and hands
//!   sccache a config of its own (the user's, plus a `path_override` toolchain for that clang;
//!   `config`) and a server port of its own, so the user's sccache server is left alone. As many
//!   compiles run at once as the farm holds (a server takes `cores + 1 + cores / 8` jobs),
//!   whatever the local cores or memory: remote compiles use neither.
//!
//! sccache itself handles the rest: a compile error on a server fails the compile with the
//! compiler's message (qola reports it with the command and `repro.sh` as always); a server
//! that fails the job is an infrastructure error, which sccache retries locally; qola counts
//! those from sccache's statistics and says so once in the summary.

mod archive;
mod config;
mod expand;
mod status;

use std::path::{Path, PathBuf};

use crate::build_script::Env;
use crate::compile::toolchain::HipToolchain;
use crate::error::Result;
pub use status::FarmReport;
pub(crate) use status::{DistStats, SchedulerStatus};

/// What the farm can do for a build: the decision, computed by [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Farm {
    /// No distributed launcher.
    Off,
    /// A dist config, but the farm does not answer (or cannot run this compiler): compile
    /// locally.
    Down { why: String },
    /// The farm answers with at least one server.
    Up { servers: u64, cpus: u64 },
}

impl Farm {
    /// Compiles the farm holds at once: each server takes `cores + 1 + cores / 8` jobs.
    pub(crate) fn capacity(&self) -> Option<usize> {
        match self {
            Farm::Up { servers, cpus } => Some((cpus + servers + cpus / 8).max(1) as usize),
            _ => None,
        }
    }
}

/// The decision from what `sccache --dist-status` said (`None`: no dist config).
pub(crate) fn decide(answer: Option<std::result::Result<SchedulerStatus, String>>) -> Farm {
    match answer {
        None => Farm::Off,
        Some(Err(why)) => Farm::Down { why },
        Some(Ok(s)) if s.servers == 0 => Farm::Down {
            why: format!("the scheduler at {} has no build server", s.url),
        },
        Some(Ok(s)) => Farm::Up {
            servers: s.servers,
            cpus: s.cpus,
        },
    }
}

/// What a farm build runs: the launcher (with qola's sccache environment) and the compile
/// arguments (the clang driver and hipcc's expanded flags first).
#[derive(Debug, Clone)]
pub(crate) struct FarmCommand {
    pub launcher: Vec<String>,
    pub args: Vec<String>,
    /// The sccache server's environment, for its statistics.
    pub env: Vec<(String, String)>,
    pub sccache: PathBuf,
}

/// Asks the farm and, when it is up, prepares the command (expanded flags, toolchain archive,
/// qola's sccache config). `launcher` is the user's launcher (`sccache`, maybe with a path).
pub(crate) fn prepare(
    env: &Env,
    launcher: &[String],
    toolchain: &HipToolchain,
    args: &[String],
    cache: &Path,
    work: &Path,
) -> Result<(Farm, Option<FarmCommand>)> {
    let Some(program) = launcher.first() else {
        return Ok((Farm::Off, None));
    };
    if !Path::new(program)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("sccache"))
        || launcher.len() > 1
    {
        return Ok((Farm::Off, None));
    }
    let Some(user) = config::UserConfig::read(env)? else {
        return Ok((Farm::Off, None));
    };
    let sccache = PathBuf::from(program);
    let farm = decide(Some(status::ask(&sccache, &user.path, user.status_port())));
    if !matches!(farm, Farm::Up { .. }) {
        return Ok((farm, None));
    }
    let expanded = expand::expand(toolchain, args, work)?;
    if !expanded.clang.exists() {
        // A sandboxed hipcc (the sid toolchain's): its driver is not on this machine.
        return Ok((
            Farm::Down {
                why: format!(
                    "hipcc's clang driver {} is not on this machine (the compiler runs in a sandbox), so sccache can neither run nor pack it",
                    expanded.clang.display()
                ),
            },
            None,
        ));
    }
    let archive = archive::build(&expanded, cache)?;
    let (config_path, port) = config::write(&user, &expanded.clang, &archive, cache)?;
    let env_pairs = vec![
        (
            "SCCACHE_CONF".to_string(),
            config_path.display().to_string(),
        ),
        ("SCCACHE_SERVER_PORT".to_string(), port.to_string()),
    ];
    let mut full = vec!["env".to_string()];
    full.extend(env_pairs.iter().map(|(k, v)| format!("{k}={v}")));
    full.push(program.clone());
    Ok((
        farm,
        Some(FarmCommand {
            launcher: full,
            args: expanded.args,
            env: env_pairs,
            sccache,
        }),
    ))
}

#[cfg(test)]
mod tests;
