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
//!   `config`) and a server of its own for the build, stopped when the build ends (`sccache_server`), so
//!   the user's sccache server is left alone and no process outlives the build. As many
//!   compiles run at once as the farm has cores, whatever the local cores or memory: remote
//!   compiles use neither. A farm object's unnamed `__hip_cuid_` is made local
//!   (`localize_empty_cuid`), and a source whose name is too long for sccache's input archive
//!   is compiled through a short hard link (`short_name`). A sandboxed toolchain (`QOLA_FARM_ROOT`, `QOLA_FARM_DRIVER`) is packed
//!   from its root and preprocessed through the command that runs its driver.
//!
//! sccache itself handles the rest: a compile error on a server fails the compile with the
//! compiler's message (qola reports it with the command, `repro.sh` and the compiler's exit
//! status, which sccache misreports: `failed_remotely`); a server
//! that fails the job is an infrastructure error, which sccache retries locally; qola counts
//! those from sccache's statistics and says so once in the summary.

mod archive;
mod config;
mod expand;
mod failed_remotely;
mod sccache;
mod server;
mod status;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build_script::Env;
use crate::compile::launcher::{self as launcher, Answered, Compile, Elsewhere, Kind};
use crate::compile::{CompileError, Result};
pub(crate) use config::UserConfig;
use failed_remotely::compiler_status;
pub(crate) use sccache::{Sccache, detect as detect_sccache};
pub(crate) use server::Server;
pub use status::ElsewhereReport;
pub(crate) use status::{SccacheStats, SchedulerStatus};

/// The build's error for `words`: what went wrong preparing the farm, and what to do.
pub(crate) fn problem(words: String) -> CompileError {
    CompileError::Launcher {
        launcher: "compile farm (QOLA_COMPILER_LAUNCHER=sccache with a [dist] config)".to_string(),
        problem: words,
    }
}

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
    /// Compiles the farm holds at once: one per server core. (A server accepts a few more,
    /// `cores + 1 + cores / 8`, but the scheduler counts a job until its result is back, and
    /// one it cannot place runs locally; measured on loopback.)
    pub(crate) fn capacity(&self) -> Option<usize> {
        match self {
            Farm::Up { cpus, .. } => Some((*cpus).max(1) as usize),
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
/// arguments (the clang driver and hipcc's expanded flags first), and the build's own sccache
/// server (stopped when this is dropped).
#[derive(Debug)]
pub(crate) struct FarmCommand {
    pub launcher: Vec<String>,
    pub args: Vec<String>,
    pub server: Server,
}

/// The farm of a build: sccache with the user's `[dist]` config, compiling through the farm once
/// asked and found up, and with sccache here (`local`) otherwise.
#[derive(Debug)]
pub(crate) struct FarmLauncher {
    user: UserConfig,
    state: Farm,
    command: Option<FarmCommand>,
    local: Sccache,
}

impl FarmLauncher {
    /// The farm of `user`'s `[dist]` config, with `local` compiling here until it is asked
    /// and found up (see `sccache::detect`).
    pub(crate) fn new(user: UserConfig, local: Sccache) -> FarmLauncher {
        FarmLauncher {
            user,
            state: Farm::Off,
            command: None,
            local,
        }
    }
}

impl Kind for FarmLauncher {
    fn words(&self) -> &[String] {
        self.local.words()
    }

    /// Through the farm: qola's sccache server and the clang driver with hipcc's flags expanded,
    /// in place of the compiler's command.
    fn wrap(&self, compiler: Vec<String>) -> Vec<String> {
        match &self.command {
            Some(command) => command
                .launcher
                .iter()
                .chain(&command.args)
                .cloned()
                .collect(),
            None => self.local.wrap(compiler),
        }
    }

    fn env(&self) -> &[(String, String)] {
        match &self.command {
            Some(command) => command.server.env(),
            None => self.local.env(),
        }
    }

    fn start(&mut self) {
        if self.command.is_none() {
            self.local.start();
        }
    }

    fn counters(&self) -> Option<launcher::Counters> {
        match &self.command {
            Some(command) => SccacheStats::read(&command.server),
            None => self.local.stats(),
        }
        .map(launcher::Counters::new)
    }

    /// A farm's report says what sccache's cache answered too.
    fn answered(&self, before: launcher::Counters, log: Option<&Path>) -> Answered {
        let Some(command) = &self.command else {
            return self.local.answered(before, log);
        };
        match (
            before.of::<SccacheStats>(),
            SccacheStats::read(&command.server),
        ) {
            (Some(before), Some(after)) => Answered {
                hits: None,
                elsewhere: Some(before.since(&after)),
            },
            _ => Answered::default(),
        }
    }

    /// No when the compiles ran elsewhere; as sccache's when the farm is down.
    fn peaks_count(&self, answered: &Answered) -> bool {
        self.command.is_none() && self.local.peaks_count(answered)
    }

    fn elsewhere(&self) -> Option<&dyn Elsewhere> {
        Some(self)
    }

    fn elsewhere_mut(&mut self) -> Option<&mut dyn Elsewhere> {
        Some(self)
    }
}

impl Elsewhere for FarmLauncher {
    /// Asks the farm through `sccache` and, when it is up, prepares the command (expanded
    /// flags, toolchain archive, qola's sccache config, a server of qola's own).
    fn ask(&mut self, env: &Env, compile: &Compile) -> Result<()> {
        let (state, command) = prepare(
            env,
            &self.user,
            &self.local.program(),
            self.local.added_env(),
            compile,
        )?;
        self.state = state;
        self.command = command;
        Ok(())
    }

    fn distributes(&self) -> bool {
        self.command.is_some()
    }

    fn capacity(&self) -> Option<(usize, String)> {
        let (Some(capacity), Farm::Up { servers, cpus }) = (self.state.capacity(), &self.state)
        else {
            return None;
        };
        Some((
            capacity,
            format!(
                "{capacity} at once: the compile farm's capacity ({servers} build servers, {cpus} CPUs; sccache --dist-status)"
            ),
        ))
    }

    fn stays_here(&self) -> Option<String> {
        match &self.state {
            Farm::Down { why } => Some(format!("the compile farm is not used ({why})")),
            _ => None,
        }
    }

    fn source_alias(&self, source: &Path, out_dir: &Path) -> Option<(PathBuf, PathBuf)> {
        self.command.as_ref()?;
        short_name(source, out_dir)
    }

    fn is_alias(&self, path: &Path) -> bool {
        is_short_name(path)
    }

    fn finish_object(&self, object: &Path) -> Result<()> {
        match self.command {
            Some(_) => localize_empty_cuid(object),
            None => Ok(()),
        }
    }

    fn failure(&self, code: Option<i32>, stderr: &str) -> (Option<i32>, String) {
        match self.command {
            Some(_) => compiler_status(code, stderr),
            None => (code, stderr.to_string()),
        }
    }
}

/// Asks the farm and, when it is up, prepares its command.
fn prepare(
    env: &Env,
    user: &UserConfig,
    sccache: &Path,
    sccache_env: &[(String, String)],
    compile: &Compile,
) -> Result<(Farm, Option<FarmCommand>)> {
    // Asked through a server of its own, stopped at once (the user's may run another config).
    let farm = decide(Some(
        Server::start(sccache, Some(&user.path), &[]).and_then(|server| status::ask(&server)),
    ));
    if !matches!(farm, Farm::Up { .. }) {
        return Ok((farm, None));
    }
    let mut expanded =
        expand::expand(compile.command, compile.env, compile.is_clang, compile.work)?;
    // A sandboxed toolchain (its driver is not on this machine) goes to the farm when qola is
    // told its root and a command here that runs its driver.
    let root = env.var_os("QOLA_FARM_ROOT").map(PathBuf::from);
    let driver = env.var_os("QOLA_FARM_DRIVER").map(PathBuf::from);
    let (root, run) = match (expanded.clang.exists(), root, driver) {
        (true, _, _) => (PathBuf::from("/"), expanded.clang.clone()),
        (false, Some(root), Some(driver))
            if root
                .join(expanded.clang.strip_prefix("/").unwrap_or(&expanded.clang))
                .exists() =>
        {
            (root, driver)
        }
        (false, ..) => {
            return Ok((
                Farm::Down {
                    why: format!(
                        "hipcc's clang driver {} is not on this machine (the compiler runs in a sandbox), so sccache can neither run nor pack it; QOLA_FARM_ROOT and QOLA_FARM_DRIVER name its root and a command that runs it",
                        expanded.clang.display()
                    ),
                },
                None,
            ));
        }
    };
    let archive = archive::build(
        &archive::Toolchain {
            root: archive::Root(root),
            clang: &expanded.clang,
            run: &run,
            args: &expanded.args,
        },
        compile.cache,
    )?;
    let config_path = config::write(user, &run, &expanded.clang, &archive, compile.cache)?;
    expanded.args[0] = run.to_string_lossy().into_owned();
    // Compiles run in the links' directory with every path by its name: sccache strips that
    // directory from what it hashes (`SCCACHE_BASEDIRS`, read when the server starts).
    let server = match Server::start(sccache, Some(&config_path), sccache_env) {
        Ok(server) => server,
        Err(why) => return Ok((Farm::Down { why }, None)),
    };
    // Starts qola's sccache server and its connection to the scheduler before the first compile
    // (a server still connecting compiles locally); up to 30 s of tries while it connects.
    let mut farm = farm;
    // (A new server connects after it has read the toolchain archive: seconds for ~100 MB.)
    for _ in 0..60 {
        farm = decide(Some(status::ask(&server)));
        if matches!(farm, Farm::Up { .. }) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    if !matches!(farm, Farm::Up { .. }) {
        return Ok((farm, None));
    }
    // sccache sends a compile's environment to the build server with it: this machine's
    // TMPDIR (a directory of its own, /dev/shm, ...) is no place there, where the compiler's
    // sandbox has a /tmp of its own.
    let mut full = ["env", "-u", "TMPDIR"].map(String::from).to_vec();
    full.extend(server.env().iter().map(|(k, v)| format!("{k}={v}")));
    full.push(sccache.to_string_lossy().into_owned());
    Ok((
        farm,
        Some(FarmCommand {
            launcher: full,
            args: expanded.args,
            server,
        }),
    ))
}

/// After a farm compile: a remote compile reads a preprocessed source, for which clang derives no
/// compilation unit id, so clang 21 names every such object's `__hip_cuid_` variable the same,
/// and a library's units would collide at link ("multiple definition of `__hip_cuid_`"). Passing
/// `-cuid=` does not help (sccache drops it from a distributed compile; `-Xclang -cuid=` makes
/// sccache compile locally; measured). Without relocatable device code nothing reads that
/// variable, so it is made local to its object.
fn localize_empty_cuid(object: &Path) -> Result<()> {
    let nm = Command::new("nm").arg(object).output();
    let has = nm.is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l.split_whitespace().last() == Some("__hip_cuid_"))
    });
    if !has {
        return Ok(());
    }
    let out = Command::new("objcopy")
        .arg("--localize-symbol=__hip_cuid_")
        .arg(object)
        .output()
        .map_err(|e| problem(format!("cannot run objcopy on {}: {e}", object.display())))?;
    if !out.status.success() {
        return Err(problem(format!(
            "objcopy --localize-symbol=__hip_cuid_ {}: {}",
            object.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

fn digest16(source: &Path) -> String {
    blake3::hash(source.as_os_str().as_encoded_bytes()).to_hex()[..16].to_string()
}

/// The directory of the short names below, under the build's output directory.
const SHORT_NAMES: &str = "qola-farm-sources";

/// For a source whose file name is too long for sccache's input archive (its tar headers hold
/// 100 bytes; CK's generated instances are named with ~170), a hard link (or copy) with a short
/// name, made now, under the output directory, and the source's directory for `-iquote` (its
/// `#include "..."` still find their neighbours). `None` when the name fits.
fn short_name(source: &Path, out_dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let name = source.file_name()?.to_string_lossy();
    if name.len() <= 90 {
        return None;
    }
    let dir = out_dir.join(SHORT_NAMES);
    crate::common::io::own_dir(&dir).ok()?;
    let extension = source
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    let link = dir.join(format!("{}.{extension}", digest16(source)));
    // Made anew each time: a generator that rewrote the source gave it a new file.
    let _ = std::fs::remove_file(&link);
    if std::fs::hard_link(source, &link).is_err() {
        std::fs::copy(source, &link).ok()?;
    }
    Some((link, source.parent()?.to_path_buf()))
}

/// Whether `path` is one of [`short_name`]'s links (not a header of the unit).
fn is_short_name(path: &Path) -> bool {
    path.parent()
        .and_then(|d| d.file_name())
        .is_some_and(|d| d == SHORT_NAMES)
}

#[cfg(test)]
mod tests;
