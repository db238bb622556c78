//! What a build did ([`CompileReport`], a [`UnitReport`] per unit, the summary line) and what it
//! would do ([`CompilePlan`], a [`PlannedUnit`] per unit).

use std::path::PathBuf;
use std::time::Duration;

use crate::compile::launcher::ElsewhereReport;
use crate::compile::launcher::LauncherHits;
use crate::compile::toolchain::HipToolchain;

/// One translation unit of a finished build.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UnitReport {
    /// The source file.
    pub source: PathBuf,
    /// Its object in the cache.
    pub object: PathBuf,
    /// Compiled by this build (`false`: taken from the cache).
    pub compiled: bool,
    /// Why it was compiled, or where the object it reused was compiled.
    pub reason: String,
    /// Time spent compiling it.
    pub elapsed: Duration,
    /// The headers its depfile listed.
    pub headers: Vec<PathBuf>,
    /// Peak memory of its compile in bytes (compiled units, when measured).
    pub peak_memory: Option<u64>,
    /// CPU time (user and system) of its compile, all its passes.
    pub cpu: Duration,
    /// How it was compiled: `one call`, or its passes (`device gfx942, empty device gfx950,
    /// host with a shared precompiled header`); empty for a reused unit.
    pub passes: String,
}

/// What [`HipBuild::try_compile`](super::HipBuild::try_compile) did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompileReport {
    /// Every unit, in the order the files were given.
    pub units: Vec<UnitReport>,
    /// The library (static, or shared with [`HipBuild::shared`](super::HipBuild::shared)).
    pub library: PathBuf,
    /// Whether the library file was written (`false`: its inputs were unchanged).
    pub library_written: bool,
    /// The architectures compiled for.
    pub archs: Vec<String>,
    /// The compiler.
    pub toolchain: HipToolchain,
    /// The per-unit log.
    pub log: PathBuf,
    /// Wall time of the whole build.
    pub elapsed: Duration,
    /// How many compiles ran at once.
    pub jobs: usize,
    /// Why that many (the job limit, or the memory cap and its estimate).
    pub jobs_reason: String,
    /// What the launcher's cache answered, when the launcher reports it (ccache).
    pub launcher_hits: Option<LauncherHits>,
    /// What the launcher that sends compiles elsewhere did (the compile farm), when it sent
    /// them (see [`ElsewhereReport`]).
    pub elsewhere: Option<ElsewhereReport>,
    /// Objects evicted from qola's cache after this build stored its own
    /// (`QOLA_CACHE_MAX_SIZE`).
    pub evicted: usize,
    /// Why compiles the launcher could send elsewhere stayed here, in its words (`the compile
    /// farm is not used (...)`): compiled locally.
    pub stayed_here: Option<String>,
}

impl CompileReport {
    /// How many units this build compiled.
    pub fn compiled(&self) -> usize {
        self.units.iter().filter(|u| u.compiled).count()
    }

    /// The one-line summary: units compiled, reused from qola's cache and (when the launcher
    /// reports it) answered by the launcher's cache, wall time, parallelism.
    pub fn summary(&self) -> String {
        let compiled = self.compiled();
        let launcher = match self.launcher_hits {
            Some(h) if compiled > 0 => format!(
                "; {} answered {} of the {compiled} compiles ({} from remote storage)",
                h.launcher, h.hits, h.remote_hits
            ),
            _ => String::new(),
        };
        let elsewhere = match (&self.elsewhere, &self.stayed_here) {
            (Some(f), _) if compiled > 0 => {
                let retried = if f.infrastructure_errors > 0 {
                    format!(
                        " ({} failed on a server and ran locally)",
                        f.infrastructure_errors
                    )
                } else {
                    String::new()
                };
                let answered = if f.cache_hits > 0 {
                    format!(", {} answered by sccache's cache", f.cache_hits)
                } else {
                    String::new()
                };
                format!(
                    "; {} distributed to {} servers, {} local{retried}{answered}",
                    f.distributed, f.servers, f.local
                )
            }
            (_, Some(why)) => {
                format!("; {why}: compiled locally")
            }
            _ => String::new(),
        };
        format!(
            "qola compiled {compiled} of {} HIP units for {} in {:.1}s: {} reused from qola's cache{launcher}{elsewhere}; {} at once ({}; log: {})",
            self.units.len(),
            self.archs.join(","),
            self.elapsed.as_secs_f64(),
            self.units.len() - compiled,
            self.jobs,
            self.toolchain.version(),
            self.log.display()
        )
    }
}

/// One unit of a [`CompilePlan`].
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct PlannedUnit {
    /// The source.
    pub source: PathBuf,
    /// The compile command.
    pub command: Vec<String>,
    /// The unit's id (compiler identity, arguments and source, by name).
    pub unit_id: String,
    /// The cache key of its object, when it is cached.
    pub key: Option<String>,
    /// Whether a build would take it from the cache.
    pub cached: bool,
    /// `reuse`, `compile` or `distribute` (on the compile farm).
    pub decision: &'static str,
    /// Why: where a reused object was compiled, or why the unit compiles (`first build`,
    /// `flags changed: ...`, `new content: <header>`).
    pub reason: String,
    /// How it compiles, in words (`one call` and why, or its passes); empty when reused.
    pub how: String,
    /// The jobs a build runs for it, in order (none when reused): the names the timings
    /// report and its trace give them.
    pub jobs: Vec<PlannedJob>,
}

/// One job of a build as [`HipBuild::try_plan`](super::HipBuild::try_plan) plans it.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct PlannedJob {
    /// What it is: `one call`, `device <arch>`, `empty device <arch>`, `bundle`, `host`,
    /// `precompiled header`.
    pub job: String,
    /// Why it is as it is, where that is not plain from its name.
    pub why: String,
    /// Its command; the bundle is `(bundle) <fat binary>`: qola writes it itself.
    pub command: Vec<String>,
}

/// What [`HipBuild::try_plan`](super::HipBuild::try_plan) found.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct CompilePlan {
    /// Every unit, in file order.
    pub units: Vec<PlannedUnit>,
    /// Jobs several units share (a precompiled header for their host passes), run first.
    pub shared_jobs: Vec<PlannedJob>,
    /// The link commands, in order.
    pub link: Vec<String>,
    /// The library they produce.
    pub library: PathBuf,
    /// The architectures.
    pub archs: Vec<String>,
    /// How many compiles would run at once (jobs, capped by memory).
    pub jobs: usize,
    /// Why that many.
    pub jobs_reason: String,
    /// The compiler: its path, versions, identity (what the unit ids hash) and environment.
    pub toolchain: HipToolchain,
}
