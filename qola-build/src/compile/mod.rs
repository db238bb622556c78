//! Compiling HIP sources incrementally: [`HipBuild`]; the pipeline, step by step, is in
//! `pipeline`.
//!
//! 1. The compiler is found and identified ([`crate::compile::toolchain`]: its `--version` and
//!    its file's content, never its path), the architectures resolved and probed
//!    ([`crate::compile::toolchain::archs`]).
//! 2. The build's **roots** are named (see `roots`): the crate (`crate`), the output directory
//!    (`out`), qola's cache (`cache`) and those a caller names ([`HipBuild::root`]: AITER's tree
//!    as `aiter`, its generated code as `gen`). Every path under a root is given to the compiler
//!    by its name, from a directory of links to the roots, so the command, the cache keys and
//!    the objects are the same wherever the files are.
//! 3. The compile command has `cc`'s form (`-x hip -fPIC -O3 --offload-arch=...`, include
//!    directories, flags, defines, then `CXXFLAGS` as `cc` reads them) plus `-MD -MF` for a
//!    depfile per object. qola runs the commands itself, in parallel within Cargo's jobserver
//!    (the protocol `cc` uses), for what `cc`'s runner cannot give: per-unit time and stderr, a
//!    launcher, only the units that changed; `cc` archives the objects.
//! 4. Each unit is looked up once in the content-addressed object cache (see `cache`,
//!    which writes the model down) and the pure `plan::decide` says what to do with it: reuse
//!    its object (compiled wherever), compile it here, or send it to the compile farm, and why
//!    (`first build`, `flags changed`, `new content: <header>`). Only units the plan compiles
//!    run, in parallel within Cargo's jobserver budget and what the available memory holds at
//!    their measured peak (see `run::memory`), each wrapped by the launcher
//!    (`QOLA_COMPILER_LAUNCHER`: a value decided once, see `launcher`, which supplies what it
//!    needs to hash names alike, its server and its counters). The cache stays within
//!    `QOLA_CACHE_MAX_SIZE`.
//! 5. The objects are linked into a static library exporting only the C API (see `link`), plus
//!    `amdhip64`.
//! 6. Inside a build script: `rerun-if-changed` for every source and every header the depfiles
//!    list (but not those under `OUT_DIR`: generated, not inputs), `rerun-if-env-changed` for
//!    every variable read; the library's log in its output directory (`qola-compile-<name>.log`:
//!    how many compiles ran at once and why, a line per unit with its reason, the summary) and
//!    the summary as one `cargo:warning` when something compiled. A failed compile reports its
//!    exact command and the compiler's stderr, and writes `repro.sh` next to the log.

mod cache;
pub(crate) mod error;
mod launcher;
mod passes;
mod pipeline;
mod report;
mod resolve;
mod run;
mod timings;
pub(crate) mod toolchain;

use std::path::{Path, PathBuf};

pub use cache::{BuildStats, CacheUsage, Cleared, GroupUsage};
pub use error::CompileError;
pub(crate) use error::Result;
pub use launcher::ElsewhereReport;
pub use launcher::{LauncherHits, RemoteFailures};
pub(crate) use passes::read_guard;
pub use report::{CompilePlan, CompileReport, PlannedJob, PlannedUnit, UnitReport};
pub(crate) use resolve::DirectBuild;
pub(crate) use resolve::flag_variables;
pub(crate) use resolve::job_limit;
pub(crate) use timings::{
    where_written as where_timings_are, write_prebuilt as write_prebuilt_timings,
};
pub use toolchain::HipToolchain;
pub(crate) use toolchain::resolve_archs;

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
    file_flags: Vec<(PathBuf, Vec<String>)>,
    file_holds: Vec<(PathBuf, Vec<String>)>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    flags: Vec<String>,
    archs: Vec<String>,
    manifest_archs: Vec<String>,
    compiler: Option<PathBuf>,
    toolchain: Option<HipToolchain>,
    launcher: Option<String>,
    cache_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    exported: Vec<String>,
    roots: Vec<(String, PathBuf)>,
    shared: Option<PathBuf>,
    version_script: Option<PathBuf>,
    link_flags: Vec<String>,
    terminal: Option<bool>,
    jobs: Option<usize>,
    memory_per_job: Option<u64>,
    max_cache_size: Option<u64>,
    host_pch: bool,
    timings: Option<bool>,
    cargo_metadata: bool,
    objects_only: bool,
    /// Whether the build says its summary line (not in the round a waiting build compiles its
    /// own units in: see `pipeline`'s `compile_around`); the log has it either way.
    says_summary: bool,
}

impl Default for HipBuild {
    fn default() -> Self {
        HipBuild::new()
    }
}

impl HipBuild {
    /// An empty build; Cargo directives on.
    pub fn new() -> HipBuild {
        HipBuild {
            files: Vec::new(),
            file_flags: Vec::new(),
            file_holds: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            flags: Vec::new(),
            archs: Vec::new(),
            manifest_archs: Vec::new(),
            compiler: None,
            toolchain: None,
            launcher: None,
            cache_dir: None,
            out_dir: None,
            exported: Vec::new(),
            roots: Vec::new(),
            shared: None,
            version_script: None,
            link_flags: Vec::new(),
            terminal: None,
            jobs: None,
            memory_per_job: None,
            max_cache_size: None,
            host_pch: false,
            timings: None,
            cargo_metadata: true,
            objects_only: false,
            says_summary: true,
        }
    }

    /// Adds a source file.
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut HipBuild {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Puts `with` where the source `file` was (each with `file`'s own flags): a batch of
    /// composable_kernel instances compiled again as its members.
    pub(crate) fn replace_file(&mut self, file: &Path, with: &[PathBuf]) -> &mut HipBuild {
        self.files.retain(|f| f != file);
        self.files.extend(with.iter().cloned());
        let flags: Vec<Vec<String>> = self
            .file_flags
            .iter()
            .filter(|(f, _)| f == file)
            .map(|(_, flags)| flags.clone())
            .collect();
        self.file_flags.retain(|(f, _)| f != file);
        self.file_holds.retain(|(f, _)| f != file);
        for flags in flags {
            for member in with {
                self.file_flags.push((member.clone(), flags.clone()));
            }
        }
        self
    }

    /// Adds source files.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut HipBuild {
        for path in paths {
            self.file(path);
        }
        self
    }

    /// Flags for the source `path` alone (AITER's `flags_extra_hip_per_source`), after the
    /// build's: they are part of that unit's id, and the unit compiles in one call.
    pub fn file_flags(&mut self, path: impl AsRef<Path>, flags: &[String]) -> &mut HipBuild {
        self.file_flags
            .push((path.as_ref().to_path_buf(), flags.to_vec()));
        self
    }

    /// What the source `path` compiles besides itself, by name (the composable_kernel
    /// instances a batch includes): the timings report lists them under the unit. Changes no
    /// key and no command.
    pub fn file_holds(&mut self, path: impl AsRef<Path>, names: &[String]) -> &mut HipBuild {
        self.file_holds
            .push((path.as_ref().to_path_buf(), names.to_vec()));
        self
    }

    /// Adds the include directory `dir` for the source `path` alone (see
    /// [`HipBuild::file_flags`]): a directory only that source reads, so no other unit's command
    /// carries it. Named in full, as [`HipBuild::include`]'s are: a directory given relative to
    /// where the build runs names nothing where the compiler runs.
    pub(crate) fn file_include(&mut self, path: &Path, dir: &Path) -> &mut HipBuild {
        let dir = resolve::full_path(dir).unwrap_or_else(|_| dir.to_path_buf());
        self.file_flags(path, &[format!("-I{}", dir.display())])
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

    /// Adds a flag to the shared library's link (after the objects; AITER's `extra_ldflags`).
    /// A static library has no link of its own: a build with link flags must be
    /// [`HipBuild::shared`].
    pub fn link_flag(&mut self, flag: &str) -> &mut HipBuild {
        self.link_flags.push(flag.to_string());
        self
    }

    /// Compiles (or reuses) the objects and links nothing: the report's units hold the objects
    /// (in qola's cache: copy them before another build may evict them), its `library` is
    /// empty. For a caller that links the objects itself, with others (see `aiter::ck_jit`).
    pub(crate) fn objects_only(&mut self, on: bool) -> &mut HipBuild {
        self.objects_only = on;
        self
    }

    /// Takes the sources `pred` picks out of the build, each with its own flags
    /// ([`HipBuild::file_flags`]), in the build's order.
    pub(crate) fn take_files(
        &mut self,
        pred: impl Fn(&Path) -> bool,
    ) -> Vec<(PathBuf, Vec<String>)> {
        let (taken, kept): (Vec<PathBuf>, Vec<PathBuf>) = std::mem::take(&mut self.files)
            .into_iter()
            .partition(|f| pred(f));
        self.files = kept;
        taken
            .into_iter()
            .map(|file| {
                let flags = self
                    .file_flags
                    .iter()
                    .find(|(f, _)| *f == file)
                    .map(|(_, flags)| flags.clone())
                    .unwrap_or_default();
                (file, flags)
            })
            .collect()
    }

    /// Whether the build has sources left to compile.
    pub(crate) fn has_files(&self) -> bool {
        !self.files.is_empty()
    }

    /// The shared library this build links, its version script and link flags.
    pub(crate) fn shared_library(&self) -> Option<pipeline::SharedLink<'_>> {
        self.shared.as_deref().map(|path| self.shared_link(path))
    }

    /// The shared library at `path` as this build links it.
    fn shared_link<'a>(&'a self, path: &'a Path) -> pipeline::SharedLink<'a> {
        pipeline::SharedLink {
            library: path,
            version_script: self.version_script.as_deref(),
            flags: &self.link_flags,
        }
    }

    /// Shows progress on standard error (a command line's terminal): where the log is, a line
    /// per finished unit with done/total and the time left; `verbose`: each compile command too.
    /// Outside build scripts only (there, `cargo build -vv` shows it).
    pub fn progress_on_terminal(&mut self, verbose: bool) -> &mut HipBuild {
        self.terminal = Some(verbose);
        self
    }

    /// At most this many compiles at once (over `MAX_JOBS`, `NUM_JOBS` and the CPU count).
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

    /// The object cache's size limit in bytes (over `QOLA_CACHE_MAX_SIZE` and the default):
    /// after a build stores objects, the least recently used ones no running build holds are
    /// evicted until the cache fits.
    pub fn max_cache_size(&mut self, bytes: u64) -> &mut HipBuild {
        self.max_cache_size = Some(bytes);
        self
    }

    /// Names the directory `dir` `name` in compile commands and cache keys (see the module
    /// docs): sources and headers under it are known as `name/...`, so the same content there
    /// compiles once, wherever `dir` is. The crate's directory (`crate`, in a build script), the
    /// output directory (`out`) and qola's cache (`cache`) are named already; a root given here
    /// with one of their names replaces it. `name` is one word of letters, digits, `-` or `_`.
    pub fn root(&mut self, name: &str, dir: impl AsRef<Path>) -> &mut HipBuild {
        self.roots
            .push((name.to_string(), dir.as_ref().to_path_buf()));
        self
    }

    /// Units whose includes before their code are the same text (a module's generated
    /// instances) share a precompiled header of them for their host passes, built once per
    /// build: the host side is parsed once (see `passes`; the objects are the same bytes).
    /// Off by default; AITER's modules turn it on.
    pub fn precompile_shared_includes(&mut self, on: bool) -> &mut HipBuild {
        self.host_pch = on;
        self
    }

    /// A compiler already identified ([`HipToolchain::identify`], `HipToolchain::find`): used
    /// as it is, not asked again (over [`HipBuild::compiler`] and `HIPCC`). An entry point
    /// that builds several libraries identifies its compiler once and hands it to each.
    pub fn toolchain(&mut self, toolchain: HipToolchain) -> &mut HipBuild {
        self.toolchain = Some(toolchain);
        self
    }

    /// Write the timings report of a build that compiles (see `timings`): an HTML page and a
    /// Chrome trace next to the log, their path said at the end of the build. Over
    /// `QOLA_TIMINGS=1`; off by default.
    pub fn timings(&mut self, on: bool) -> &mut HipBuild {
        self.timings = Some(on);
        self
    }

    /// Print Cargo directives (on by default, for build scripts).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut HipBuild {
        self.cargo_metadata = on;
        self
    }

    /// Whether this build prints Cargo's directives.
    pub(crate) fn cargo_metadata_on(&self) -> bool {
        self.cargo_metadata
    }
}

/// The object cache's size limit by the one precedence (`common::precedence`): `argument`
/// ([`HipBuild::max_cache_size`]), else `QOLA_CACHE_MAX_SIZE`, else 20 GiB or a quarter of the
/// file system holding `cache`, whichever is smaller.
pub(crate) fn max_cache_size(
    env: &crate::build_script::Env,
    cache: &Path,
    argument: Option<u64>,
) -> error::Result<u64> {
    let from_env = || -> error::Result<Option<u64>> {
        let Some(size) = env.var("QOLA_CACHE_MAX_SIZE")? else {
            return Ok(None);
        };
        let bytes = cache::parse_size(&size).ok_or_else(|| crate::build_script::EnvError {
            name: "QOLA_CACHE_MAX_SIZE".to_string(),
            value: size.clone(),
            expected: "a size such as 20G, 500M or 1073741824".to_string(),
        })?;
        Ok(Some(bytes))
    };
    Ok(crate::common::precedence::Setting::argument(argument)
        .environment(from_env)?
        .or(|| cache::default_max_size(cache)))
}

/// What qola's object cache under `cache` holds (`qola cache`).
pub(crate) fn cache_usage(
    env: &crate::build_script::Env,
    cache: &Path,
) -> error::Result<CacheUsage> {
    let max = max_cache_size(env, cache, None)?;
    Ok(cache::usage_of(&cache.join(crate::cache_dir::OBJECTS), max))
}

/// Empties qola's object cache under `cache` but for what running builds hold (`qola cache
/// --clear`, see [`cache::ObjectCache::clear`]), telling the user through `directives` what
/// it waits for.
pub(crate) fn clear_cache(
    cache: &Path,
    directives: &crate::build_script::Directives,
) -> error::Result<Cleared> {
    let objects = cache::ObjectCache::open(
        cache.join(crate::cache_dir::OBJECTS),
        None,
        crate::common::hooks::Hooks::default(),
        directives,
    );
    objects.clear()
}
