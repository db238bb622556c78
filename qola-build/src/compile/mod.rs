//! Compiling HIP sources incrementally: [`HipBuild`].
//!
//! 1. The compiler is found and identified ([`crate::compile::toolchain`]), the architectures resolved
//!    and probed ([`crate::compile::archs`]).
//! 2. The compile command has `cc`'s form (`-x hip -fPIC -O3 --offload-arch=...`, include
//!    directories, flags, defines, then `CXXFLAGS` as `cc` reads them) plus `-MD -MF` for a
//!    depfile per object. qola runs the commands itself, in parallel within Cargo's jobserver
//!    (the protocol `cc` uses), for what `cc`'s runner cannot give: per-unit time and stderr, a
//!    launcher, only the units that changed; `cc` archives the objects.
//! 3. Each translation unit is looked up in the content-addressed object cache (see
//!    `object_cache`); only units whose key changed are compiled, in parallel within Cargo's
//!    jobserver budget and what the available memory holds at their measured peak (see
//!    `memory`), each wrapped by `QOLA_COMPILER_LAUNCHER` (ccache) when set; ccache's own
//!    counters tell how many it answered (see `launcher`).
//! 4. The objects are linked into a static library exporting only the C API (see `link`), plus
//!    `amdhip64`.
//! 5. Inside a build script: `rerun-if-changed` for every source and every header the depfiles
//!    list (but not those under `OUT_DIR`: generated, not inputs), `rerun-if-env-changed` for
//!    every variable read; a log in `OUT_DIR` (`qola-compile.log`: how many compiles ran at
//!    once and why, a line per unit, the summary) and the summary as one `cargo:warning` when
//!    something compiled. A failed compile reports its exact command and the compiler's stderr, and writes
//!    `repro.sh` next to the log.

pub(crate) mod archs;
mod depfile;
pub(crate) mod error;
mod farm;
mod jobs;
mod launcher;
mod link;
mod memory;
mod object_cache;
pub(crate) mod probe;
mod progress;
pub(crate) mod toolchain;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build_script::Directives;
use crate::build_script::Env;
use crate::common::io::write_atomic;
use crate::common::text::shell_quote;
use crate::compile::error::Result;
use crate::compile::error::io_error;
use crate::compile::toolchain::HipToolchain;
pub use error::CompileError;
pub use farm::FarmReport;
pub use launcher::LauncherHits;
use object_cache::{ObjectCache, unit_id};

/// An incremental HIP library build (see the module docs).
///
/// ```no_run
/// // build.rs
/// let report = qola_build::HipBuild::new()
///     .files(["kernels/fwd.hip", "kernels/api.hip"])
///     .include("kernels/include")
///     .flag("-std=c++17")
///     .export("my_api_fn")
///     .try_compile("my_kernels")
///     .unwrap_or_else(|e| panic!("{e}"));
/// println!("cargo:warning={} of {} units compiled", report.compiled(), report.units.len());
/// ```
#[derive(Debug, Clone)]
pub struct HipBuild {
    files: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    flags: Vec<String>,
    archs: Vec<String>,
    manifest_archs: Vec<String>,
    compiler: Option<PathBuf>,
    launcher: Option<String>,
    cache_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    exported: Vec<String>,
    shared: Option<PathBuf>,
    version_script: Option<PathBuf>,
    terminal: Option<bool>,
    jobs: Option<usize>,
    memory_per_job: Option<u64>,
    cargo_metadata: bool,
}

impl Default for HipBuild {
    fn default() -> Self {
        HipBuild::new()
    }
}

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
    /// Time spent compiling it.
    pub elapsed: Duration,
    /// The headers its depfile listed.
    pub headers: Vec<PathBuf>,
    /// Peak memory of its compile in bytes (compiled units, when measured).
    pub peak_memory: Option<u64>,
}

/// What [`HipBuild::try_compile`] did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompileReport {
    /// Every unit, in the order the files were given.
    pub units: Vec<UnitReport>,
    /// The library (static, or shared with [`HipBuild::shared`]).
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
    /// What the compile farm did, when the build ran on one (see [`FarmReport`]).
    pub farm: Option<FarmReport>,
    /// Why the configured compile farm was not used (it did not answer): compiled locally.
    pub farm_down: Option<String>,
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
                "; ccache answered {} of the {compiled} compiles ({} from remote storage)",
                h.hits, h.remote_hits
            ),
            _ => String::new(),
        };
        let farm = match (&self.farm, &self.farm_down) {
            (Some(f), _) if compiled > 0 => {
                let retried = if f.infrastructure_errors > 0 {
                    format!(
                        " ({} failed on a server and ran locally)",
                        f.infrastructure_errors
                    )
                } else {
                    String::new()
                };
                format!(
                    "; {} distributed to {} servers, {} local{retried}",
                    f.distributed, f.servers, f.local
                )
            }
            (_, Some(why)) => {
                format!("; the compile farm is not used ({why}): compiled locally")
            }
            _ => String::new(),
        };
        format!(
            "qola compiled {compiled} of {} HIP units for {} in {:.1}s: {} reused from qola's cache{launcher}{farm}; {} at once ({}; log: {})",
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

impl HipBuild {
    /// An empty build; Cargo directives on.
    pub fn new() -> HipBuild {
        HipBuild {
            files: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            archs: Vec::new(),
            manifest_archs: Vec::new(),
            compiler: None,
            launcher: None,
            cache_dir: None,
            out_dir: None,
            exported: Vec::new(),
            shared: None,
            version_script: None,
            terminal: None,
            jobs: None,
            memory_per_job: None,
            cargo_metadata: true,
        }
    }

    /// Adds a source file.
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut HipBuild {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds source files.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut HipBuild {
        for path in paths {
            self.file(path);
        }
        self
    }

    /// Adds an include directory.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut HipBuild {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Adds `-D name[=value]`.
    pub fn define(&mut self, name: &str, value: Option<&str>) -> &mut HipBuild {
        self.defines
            .push((name.to_string(), value.map(String::from)));
        self
    }

    /// Adds a compiler flag.
    pub fn flag(&mut self, flag: &str) -> &mut HipBuild {
        self.flags.push(flag.to_string());
        self
    }

    /// Adds a GPU architecture (over `QOLA_GPU_ARCHS`, `GPU_ARCHS` and the manifest).
    pub fn arch(&mut self, arch: &str) -> &mut HipBuild {
        self.archs.push(arch.to_string());
        self
    }

    /// The manifest's `[build] architectures` (used after explicit ones, before `native`).
    pub fn manifest_archs(&mut self, archs: &[String]) -> &mut HipBuild {
        self.manifest_archs = archs.to_vec();
        self
    }

    /// The HIP compiler (over `HIPCC` and the search).
    pub fn compiler(&mut self, path: impl AsRef<Path>) -> &mut HipBuild {
        self.compiler = Some(path.as_ref().to_path_buf());
        self
    }

    /// A compiler launcher such as `ccache` (over `QOLA_COMPILER_LAUNCHER`).
    pub fn launcher(&mut self, launcher: &str) -> &mut HipBuild {
        self.launcher = Some(launcher.to_string());
        self
    }

    /// qola's cache directory (over `QOLA_CACHE_DIR`); objects live in `<cache>/hip`.
    pub fn cache_dir(&mut self, dir: impl AsRef<Path>) -> &mut HipBuild {
        self.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where the library and the log go (over `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut HipBuild {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// A symbol the library exports; once one is named, every other symbol is made local.
    pub fn export(&mut self, symbol: &str) -> &mut HipBuild {
        self.exported.push(symbol.to_string());
        self
    }

    /// Links a shared library at `path` (its full file name, for example
    /// `out/lib/te_libmha_fwd.so`) instead of the static `lib<name>.a`; the HIP compiler links it
    /// and adds the HIP runtime. Link records stay in the output directory.
    pub fn shared(&mut self, path: impl AsRef<Path>) -> &mut HipBuild {
        self.shared = Some(path.as_ref().to_path_buf());
        self
    }

    /// The linker version script of the shared library (what it exports).
    pub fn version_script(&mut self, path: impl AsRef<Path>) -> &mut HipBuild {
        self.version_script = Some(path.as_ref().to_path_buf());
        self
    }

    /// Shows progress on standard error (a command line's terminal): where the log is, a line
    /// per finished unit with done/total and the time left; `verbose`: each compile command too.
    /// Outside build scripts only (there, `cargo build -vv` shows it).
    pub fn progress_on_terminal(&mut self, verbose: bool) -> &mut HipBuild {
        self.terminal = Some(verbose);
        self
    }

    /// At most this many compiles at once (over `NUM_JOBS` and the CPU count).
    pub fn jobs(&mut self, jobs: usize) -> &mut HipBuild {
        self.jobs = Some(jobs);
        self
    }

    /// The memory a compile is assumed to need until its peak has been measured: no more
    /// compiles run at once than the available memory holds (at least one). Measured peaks
    /// (kept in the object cache) take over; `QOLA_JOB_MEMORY_MB` overrides both.
    pub fn memory_per_job(&mut self, bytes: u64) -> &mut HipBuild {
        self.memory_per_job = Some(bytes);
        self
    }

    /// Print Cargo directives (on by default, for build scripts).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut HipBuild {
        self.cargo_metadata = on;
        self
    }

    /// Resolves the output directory, cache, compiler, architectures (probed), arguments,
    /// launcher and parallelism.
    fn resolve(&self, env: &Env) -> Result<Resolved> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => env
                .var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(CompileError::NoOutDir)?,
        };
        std::fs::create_dir_all(&out_dir).map_err(io_error("create", &out_dir))?;
        // Canonical like the sources and headers, so those under OUT_DIR are recognized.
        let out_dir = full_path(&out_dir)?;
        let cache = match &self.cache_dir {
            Some(dir) => dir.clone(),
            None => crate::cache::dir(env)?,
        };
        let toolchain = match &self.compiler {
            Some(path) => HipToolchain::identify(path)?,
            None => HipToolchain::find(env)?,
        };
        let target = host_triple();
        let common = self.base_args(env, &toolchain, &target)?;
        let archs = archs::resolve(env, &self.archs, &self.manifest_archs)?;
        archs::validate(
            &toolchain,
            &common,
            &archs,
            Some(&cache),
            &out_dir.join("qola-probe"),
        )?;
        let mut args = common;
        args.extend(archs.iter().map(|a| format!("--offload-arch={a}")));
        let launcher: Vec<String> = match &self.launcher {
            Some(l) => l.split_whitespace().map(String::from).collect(),
            None => env
                .var("QOLA_COMPILER_LAUNCHER")?
                .map(|l| l.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
        };
        let num_jobs: Option<usize> = env
            .var("NUM_JOBS")
            .ok()
            .flatten()
            .and_then(|n| n.parse().ok());
        let (limit, limit_source) = match (self.jobs, num_jobs) {
            (Some(n), _) => (n, format!(".jobs({n})")),
            (None, Some(n)) => (n, format!("NUM_JOBS={n}")),
            (None, None) => {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                (n, format!("{n} CPUs"))
            }
        };
        let env_memory = match env.var("QOLA_JOB_MEMORY_MB")? {
            Some(mb) => Some(
                mb.trim()
                    .parse::<u64>()
                    .map_err(|_| crate::build_script::EnvError {
                        name: "QOLA_JOB_MEMORY_MB".to_string(),
                        value: mb.clone(),
                        expected: "a whole number of megabytes, e.g. 1024".to_string(),
                    })?
                    << 20,
            ),
            None => None,
        };
        Ok(Resolved {
            out_dir,
            cache,
            toolchain,
            archs,
            args,
            launcher,
            farm: farm::Farm::Off,
            farm_command: None,
            limit,
            limit_source,
            env_memory,
            target,
        })
    }

    /// How many of the units whose ids are `to_compile` run at once, and why.
    fn parallelism(
        &self,
        r: &Resolved,
        objects: &ObjectCache,
        to_compile: &[&str],
    ) -> memory::Parallelism {
        if let (Some(capacity), farm::Farm::Up { servers, cpus }) = (r.farm.capacity(), &r.farm) {
            // Remote compiles use neither the local cores nor the local memory.
            return memory::Parallelism {
                jobs: capacity,
                reason: format!(
                    "{capacity} at once: the compile farm's capacity ({servers} build servers, {cpus} CPUs; sccache --dist-status)"
                ),
            };
        }
        let measured: Vec<Option<u64>> = to_compile.iter().map(|id| objects.peak(id)).collect();
        let estimate = memory::Estimate::choose(r.env_memory, &measured, self.memory_per_job);
        memory::decide(r.limit, &r.limit_source, estimate, memory::available())
    }

    /// Every command [`HipBuild::try_compile`] would run for `lib<name>.a`, with each unit's
    /// cache key and whether it is cached, without compiling anything.
    pub fn try_plan(&self, name: &str) -> Result<CompilePlan> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let mut r = self.resolve(&env)?;
        let mut objects = ObjectCache::new(r.cache.join(crate::cache::OBJECTS));
        let mut units: Vec<PlannedUnit> = Vec::new();
        let any_to_compile = self.files.iter().any(|file| {
            full_path(file).is_ok_and(|source| {
                let id = unit_id(&r.toolchain.identity, &r.args, &source);
                objects.lookup(&id, &source).is_none()
            })
        });
        if any_to_compile {
            r.join_farm(&env)?;
        }
        for file in &self.files {
            let source = full_path(file)?;
            let id = unit_id(&r.toolchain.identity, &r.args, &source);
            let found = objects.lookup(&id, &source);
            let object = match &found {
                Some((key, _)) => objects.object_path(key),
                None => objects.scratch(&id, "o")?,
            };
            let depfile = object.with_extension("d");
            units.push(PlannedUnit {
                command: r.compile_command(&source, &object, &depfile),
                cached: found.is_some(),
                key: found.map(|(key, _)| key),
                unit_id: id,
                source,
            });
        }
        let to_compile: Vec<&str> = units
            .iter()
            .filter(|u| !u.cached)
            .map(|u| u.unit_id.as_str())
            .collect();
        let parallelism = self.parallelism(&r, &objects, &to_compile);
        let (library, link) = match &self.shared {
            Some(path) => (
                path.clone(),
                vec![link::shared_command(
                    &r.toolchain.path,
                    path,
                    self.version_script.as_deref(),
                )],
            ),
            None => (
                r.out_dir.join(format!("lib{name}.a")),
                link::commands(name, &self.exported, &r.out_dir),
            ),
        };
        Ok(CompilePlan {
            library,
            link,
            units,
            archs: r.archs,
            jobs: parallelism.jobs,
            jobs_reason: parallelism.reason,
            toolchain: r.toolchain,
        })
    }

    /// Compiles what changed and links `lib<name>.a` (see the module docs).
    pub fn try_compile(&self, name: &str) -> Result<CompileReport> {
        let start = Instant::now();
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let mut resolved = self.resolve(&env)?;
        let (out_dir, cache, args) = (
            resolved.out_dir.clone(),
            resolved.cache.clone(),
            resolved.args.clone(),
        );
        let mut objects = ObjectCache::new(cache.join(crate::cache::OBJECTS));
        let mut units = Vec::new();
        let mut jobs_to_run = Vec::new();
        let mut scratch = Vec::new();
        for (index, file) in self.files.iter().enumerate() {
            let source = full_path(file)?;
            let id = unit_id(&resolved.toolchain.identity, &args, &source);
            match objects.lookup(&id, &source) {
                Some((key, headers)) => units.push(UnitReport {
                    object: objects.object_path(&key),
                    source,
                    compiled: false,
                    elapsed: Duration::ZERO,
                    headers,
                    peak_memory: None,
                }),
                None => {
                    let object = objects.scratch(&id, "o")?;
                    let depfile = objects.scratch(&id, "d")?;
                    scratch.push((index, id, object, depfile));
                    units.push(UnitReport {
                        object: PathBuf::new(),
                        source,
                        compiled: true,
                        elapsed: Duration::ZERO,
                        headers: Vec::new(),
                        peak_memory: None,
                    });
                }
            }
        }
        if !scratch.is_empty() {
            resolved.join_farm(&env)?;
        }
        for (index, _, object, depfile) in &scratch {
            let argv = resolved.compile_command(&units[*index].source, object, depfile);
            jobs_to_run.push(jobs::Job { unit: *index, argv });
        }
        let argv_of: Vec<(usize, Vec<String>)> = jobs_to_run
            .iter()
            .map(|j| (j.unit, j.argv.clone()))
            .collect();
        let to_compile: Vec<&str> = scratch.iter().map(|(_, id, ..)| id.as_str()).collect();
        let parallelism = self.parallelism(&resolved, &objects, &to_compile);
        let counters_before = (!jobs_to_run.is_empty())
            .then(|| launcher::Counters::read(&resolved.launcher))
            .flatten();
        let farm_before = match (&resolved.farm_command, jobs_to_run.is_empty()) {
            (Some(f), false) => farm::DistStats::read(&f.sccache, &f.env),
            _ => None,
        };
        let log = out_dir.join("qola-compile.log");
        // A build that compiles nothing writes nothing, not even its log.
        let progress = if jobs_to_run.is_empty() {
            None
        } else {
            Some(progress::Progress::start(
                &log,
                &parallelism.reason,
                units.iter().map(|u| u.source.clone()).collect(),
                jobs_to_run.len(),
                parallelism.jobs,
                progress::Echo::choose(self.cargo_metadata, self.terminal),
            )?)
        };
        let outcomes = match &progress {
            Some(p) => jobs::run_all(
                jobs_to_run,
                parallelism.jobs,
                resolved.farm_command.is_none(),
                &|j| p.started(j),
                &|o| p.ended(o),
            ),
            None => Vec::new(),
        };
        let launcher_hits = counters_before.and_then(|before| {
            launcher::Counters::read(&resolved.launcher).map(|after| before.since(&after))
        });
        let farm_report = match (&resolved.farm_command, farm_before) {
            (Some(f), Some(before)) => {
                farm::DistStats::read(&f.sccache, &f.env).map(|after| before.since(&after))
            }
            _ => None,
        };
        let farm_down = match &resolved.farm {
            farm::Farm::Down { why } => Some(why.clone()),
            _ => None,
        };
        // A launcher's cache answer is not a compile: its peak says nothing about the unit's.
        let record_peaks =
            resolved.launcher.is_empty() || launcher_hits.is_some_and(|h| h.hits == 0);
        if let Some(failed) = outcomes.iter().find(|o| o.failure.is_some()) {
            for (_, _, object, depfile) in &scratch {
                let _ = std::fs::remove_file(object);
                let _ = std::fs::remove_file(depfile);
            }
            let (code, stderr) = failed.failure.clone().expect("a failure");
            let argv = &argv_of
                .iter()
                .find(|(u, _)| *u == failed.unit)
                .expect("the failed job's command")
                .1;
            let command = argv
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" ");
            let cwd = std::env::current_dir().unwrap_or_default();
            let repro = out_dir.join("repro.sh");
            write_atomic(
                &repro,
                format!(
                    "#!/bin/sh\n# qola: the compile that failed ({}).\ncd {} && {}\n",
                    units[failed.unit].source.display(),
                    shell_quote(&cwd.to_string_lossy()),
                    command
                )
                .as_bytes(),
            )?;
            return Err(CompileError::Compile {
                source_file: units[failed.unit].source.clone(),
                command,
                status: code,
                stderr: stderr.trim().to_string(),
                repro,
            });
        }
        for outcome in &outcomes {
            let (_, id, object, depfile) = scratch
                .iter()
                .find(|(u, ..)| *u == outcome.unit)
                .expect("a scratch entry per job");
            let unit = &mut units[outcome.unit];
            let deps =
                std::fs::read_to_string(depfile).map_err(io_error("read the depfile", depfile))?;
            let _ = std::fs::remove_file(depfile);
            // Paths relative to the compile's directory (ccache's base_dir rewrites them) are
            // made absolute. A header that does not exist here belongs to a sandboxed toolchain
            // (its root is not this machine's): the compiler identity stands for it.
            let cwd = std::env::current_dir().map_err(io_error("locate", Path::new(".")))?;
            let headers: Vec<PathBuf> = depfile::prerequisites(&deps)
                .into_iter()
                .map(|p| depfile::absolute(&p, &cwd))
                .filter(|p| *p != unit.source && !farm::is_short_name(p) && p.exists())
                .collect();
            if resolved.farm_command.is_some() {
                farm::localize_empty_cuid(object)?;
            }
            let peak = outcome.peak_memory.filter(|_| record_peaks);
            let key = objects.install(id, &unit.source, headers.clone(), object, peak)?;
            unit.object = objects.object_path(&key);
            unit.headers = headers;
            unit.elapsed = outcome.elapsed;
            unit.peak_memory = outcome.peak_memory;
        }

        let object_paths: Vec<PathBuf> = units.iter().map(|u| u.object.clone()).collect();
        let keys: Vec<String> = object_paths
            .iter()
            .map(|p| {
                p.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let linked = match &self.shared {
            Some(path) => link::link_shared(
                &resolved.toolchain,
                path,
                &object_paths,
                &keys,
                self.version_script.as_deref(),
                &out_dir,
            )?,
            None => link::link(
                name,
                &object_paths,
                &keys,
                &self.exported,
                &out_dir,
                &resolved.target,
                self.cargo_metadata,
            )?,
        };
        if self.cargo_metadata {
            if let Some(dir) = &resolved.toolchain.lib_dir {
                println!("cargo:rustc-link-search=native={}", dir.display());
            }
            println!("cargo:rustc-link-lib=dylib=amdhip64");
        }
        // Inputs only: sources and headers this build script generated (under OUT_DIR) are
        // outputs, and watching them would rerun the script after every build.
        for unit in &units {
            for path in std::iter::once(&unit.source).chain(&unit.headers) {
                if !path.starts_with(&out_dir) {
                    directives.rerun_if_changed(path);
                }
            }
        }
        let report = CompileReport {
            units,
            library: linked.library,
            library_written: linked.written,
            archs: resolved.archs,
            toolchain: resolved.toolchain,
            log,
            elapsed: start.elapsed(),
            jobs: parallelism.jobs,
            jobs_reason: parallelism.reason,
            launcher_hits,
            farm: farm_report,
            farm_down,
        };
        if let Some(progress) = progress {
            let summary = report.summary();
            let cached: Vec<&Path> = report
                .units
                .iter()
                .filter(|u| !u.compiled)
                .map(|u| u.source.as_path())
                .collect();
            progress.finish(&cached, &summary)?;
            if !self.cargo_metadata && self.terminal.is_some() {
                eprintln!("qola: {summary}");
            } else {
                directives.warning(&summary);
            }
        }
        Ok(report)
    }

    /// The compile command's program and arguments, without architectures, output and source:
    /// in the form `cc` gives (compiler, flags, `-I`, `-D`, then `CXXFLAGS`), built here because
    /// `cc` runs the compiler to detect its family on every build (close to a second with hipcc).
    fn base_args(&self, env: &Env, toolchain: &HipToolchain, target: &str) -> Result<Vec<String>> {
        let mut args = vec![toolchain.path.to_string_lossy().into_owned()];
        args.extend(["-x", "hip", "-fPIC", "-O3"].map(String::from));
        for dir in &self.includes {
            let dir = full_path(dir)?;
            args.push("-I".to_string());
            args.push(dir.to_string_lossy().into_owned());
        }
        args.extend(self.flags.iter().cloned());
        for (name, value) in &self.defines {
            args.push(match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        }
        args.extend(cxxflags(env, target)?);
        Ok(args)
    }
}

/// Everything a build resolved before looking at its units.
struct Resolved {
    out_dir: PathBuf,
    cache: PathBuf,
    toolchain: HipToolchain,
    archs: Vec<String>,
    args: Vec<String>,
    launcher: Vec<String>,
    /// What the compile farm can do (see `farm`), and its command when it is up.
    farm: farm::Farm,
    farm_command: Option<farm::FarmCommand>,
    limit: usize,
    limit_source: String,
    env_memory: Option<u64>,
    target: String,
}

impl Resolved {
    /// Asks the compile farm, when the launcher is a distributed one (see `farm`). Only builds
    /// with something to compile ask: a no-op build runs nothing and writes nothing.
    fn join_farm(&mut self, env: &Env) -> Result<()> {
        let (farm, command) = farm::prepare(
            env,
            &self.launcher,
            &self.toolchain,
            &self.args,
            &self.cache,
            &self.out_dir.join("qola-farm"),
        )?;
        self.farm = farm;
        self.farm_command = command;
        Ok(())
    }

    /// The full command compiling `source` to `object` with its depfile: through the farm
    /// (sccache and the clang driver with hipcc's expanded flags) when it is up.
    fn compile_command(&self, source: &Path, object: &Path, depfile: &Path) -> Vec<String> {
        let mut argv = match &self.farm_command {
            Some(f) => f.launcher.iter().chain(&f.args).cloned().collect(),
            None => self
                .launcher
                .iter()
                .chain(&self.args)
                .cloned()
                .collect::<Vec<_>>(),
        };
        let mut compiled = source.to_path_buf();
        if self.farm_command.is_some()
            && let Some((link, dir)) = farm::short_name(source, &self.out_dir)
        {
            argv.extend(["-iquote".to_string(), dir.to_string_lossy().into_owned()]);
            compiled = link;
        }
        argv.extend(["-MD".to_string(), "-MF".to_string()]);
        argv.push(depfile.to_string_lossy().into_owned());
        argv.extend(["-o".to_string(), object.to_string_lossy().into_owned()]);
        argv.extend(["-c".to_string(), compiled.to_string_lossy().into_owned()]);
        argv
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
    /// The unit's id (compiler identity, arguments, source path).
    pub unit_id: String,
    /// The cache key of its object, when it is cached.
    pub key: Option<String>,
    /// Whether a build would take it from the cache.
    pub cached: bool,
}

/// What [`HipBuild::try_plan`] found.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct CompilePlan {
    /// Every unit, in file order.
    pub units: Vec<PlannedUnit>,
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
    /// The compiler.
    #[serde(skip)]
    pub toolchain: HipToolchain,
}

/// `path` as the compiler is given it: canonical when it exists (no `..`, no symlink, which is
/// also how ccache normalizes its `base_dir`, so its relative-path rewriting applies), else
/// made absolute lexically.
fn full_path(path: &Path) -> Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(canonical) => Ok(canonical),
        Err(_) => {
            let cwd = std::env::current_dir().map_err(io_error("locate", path))?;
            Ok(depfile::absolute(path, &cwd))
        }
    }
}

/// The flags of `CXXFLAGS` and its variants, read and combined as `cc` 1.11 does: every one
/// that is set, least specific first (`CXXFLAGS`, `HOST_CXXFLAGS` or `TARGET_CXXFLAGS` when
/// cross-compiling, `CXXFLAGS_<target with _>`, `CXXFLAGS_<target>`), split at whitespace, or
/// as a shell would when `CC_SHELL_ESCAPED_FLAGS` is set. `TARGET` and `HOST` come from Cargo
/// (in a build script), else `this_machine`.
fn cxxflags(env: &Env, this_machine: &str) -> Result<Vec<String>> {
    let host = env.var("HOST")?.unwrap_or_else(|| this_machine.to_string());
    let target = env.var("TARGET")?.unwrap_or_else(|| host.clone());
    let kind = if target == host { "HOST" } else { "TARGET" };
    let names = [
        "CXXFLAGS".to_string(),
        format!("{kind}_CXXFLAGS"),
        format!("CXXFLAGS_{}", target.replace(['-', '.'], "_")),
        format!("CXXFLAGS_{target}"),
    ];
    let shell = env
        .var("CC_SHELL_ESCAPED_FLAGS")?
        .is_some_and(|v| v != "0" && v != "false");
    let mut flags = Vec::new();
    for name in names {
        if let Some(value) = env.var(&name)? {
            if shell {
                flags.extend(shlex::Shlex::new(&value));
            } else {
                flags.extend(value.split_ascii_whitespace().map(String::from));
            }
        }
    }
    Ok(flags)
}

/// The triple `cc`'s archiver is told about: this machine (HIP host code runs where the GPU is).
fn host_triple() -> String {
    format!(
        "{}-unknown-{}-gnu",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}
