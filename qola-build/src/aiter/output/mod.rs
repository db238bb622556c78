//! `qola build`: a QoLA manifest's modules built into QoLA's output directory, so a consumer of
//! QoLA (TransformerEngine's CMake) links qola's libraries unchanged:
//!
//! | path under `--output-dir` | what |
//! |---|---|
//! | `lib/<ns>_<md_name>.so` | one shared library per module; exports `qola::<ns>::*` only |
//! | `include/` | `qola_common.h`, `qola_mha_fwd.h`, `qola_mha_bwd.h`, `qola_config.h` (namespace) |
//! | `configs/` | AITER's tuning tables (`aiter/configs/*.csv`, `model_configs/`) |
//! | `aiter-headers/` | the AITER and composable_kernel headers the public headers include, at their paths in the tree (see `tree_headers`): compile against the libraries without a checkout |
//! | `manifest.json` | per module: `md_name`, `success`, `error`, `so_path`, `duration_s` (and `prebuilt: true` for a module fetched by its key); a summary |
//! | `_qola/` | qola's work: generated code, embedded hsa headers, compile logs, link records |
//!
//! Incremental like the rest of qola: a build with nothing changed compiles nothing and writes no
//! file (every output is written only when its content changes; `manifest.json` only when more
//! than its time stamps and durations would change). A module that fails is recorded in
//! `manifest.json` with its error; the others are still built. Nothing is written into the AITER
//! tree.
//!
//! Which modules: every `[[modules]]` entry, or those of the groups `--group` /
//! `QOLA_BUILD_GROUPS` name; a group whose `QOLA_PREBUILT_DIR_<GROUP>` is set is not built, its
//! libraries are taken from that directory.
//!
//! With a prebuilt store (`--prebuilt`, see [`crate::aiter::prebuilt`]) each module's files are
//! first asked for by its library key; the tree is prepared only when a module must be built
//! here. With `--publish`, each module built here from a tree qola prepared is published.

mod ck_jit;
mod ledger;
mod plan;
mod record;
mod select;
mod shared;
mod stores;

pub use plan::{BuildPlan, GeneratorPlan, ModulePlan};
pub use record::{BuildRecord, ModuleRecord, Summary};
pub use select::check_groups;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::aiter::Refusals;
use crate::aiter::library::{AiterLibrary, Api, library_in};
use crate::aiter::module::AiterModuleSpec;
use crate::aiter::module::CkInstances;
use crate::aiter::output::ck_jit::CkJit;
use crate::aiter::output::ledger::{Ledger, Moment};
use crate::aiter::prebuilt::Arrival;
use crate::aiter::registry::Registry;
use crate::aiter::{AiterError, Result};
use crate::build_script::{Directives, Env};
use crate::common::io::io_error;
use crate::common::io::write_if_changed;
use crate::common::precedence::Setting;
use crate::compile::HipToolchain;
use crate::manifest::ManifestError;
use crate::manifest::{BuildMode, Manifest, Module};
use crate::prepare::{Prepare, Settings};

/// A `qola build` (see the module docs).
#[derive(Debug, Clone)]
pub struct OutputBuild {
    prepare: Prepare,
    output_dir: PathBuf,
    archs: Vec<String>,
    mode: Option<BuildMode>,
    groups: Vec<String>,
    ck_filter: Option<String>,
    skip_checkout: bool,
    verbose: bool,
    timings: Option<bool>,
    require_rocm: bool,
    registry: Option<PathBuf>,
    prebuilt: Option<String>,
    publish: Option<String>,
    verify: bool,
    sign_key: Option<PathBuf>,
    trust: Vec<String>,
}

/// What a build did, beyond the record.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOutcome {
    /// `manifest.json`'s content.
    pub record: BuildRecord,
    /// Whether `manifest.json` was written.
    pub record_written: bool,
    /// Units compiled by this build, over all modules.
    pub compiled: usize,
    /// Units in all, over all modules.
    pub units: usize,
    /// The modules whose files came prebuilt, with the bytes fetched (0: already in place).
    pub prebuilt: Vec<(String, u64)>,
    /// The libraries this build wrote (linked, or copied from a prebuilt group's directory),
    /// relative to the output directory (`lib/module_mha_fwd.so`), in the manifest's order.
    pub libraries_written: Vec<PathBuf>,
}

/// What building one module did.
#[derive(Debug, Default)]
struct Built {
    /// Units compiled (or, under ck-jit, given to its interceptor).
    compiled: usize,
    /// Units in all.
    units: usize,
    /// Whether its library was written.
    written: bool,
}

/// A module selected, with where its library goes.
struct Selected {
    module: Module,
    md_name: String,
    so_path: PathBuf,
    prebuilt: Option<PathBuf>,
}

/// Everything resolved before the modules are built; all of it but `root` and the
/// preparation's warnings before the tree is prepared.
struct Inputs {
    /// The preparation these settings are for.
    prepare: Prepare,
    settings: Settings,
    manifest: Manifest,
    /// The compiler, identified once for every module.
    toolchain: HipToolchain,
    root: PathBuf,
    archs: Vec<String>,
    cache: PathBuf,
    namespace: Option<String>,
    variants: crate::manifest::VariantFilters,
    /// What the preparation and the compiler's version warn about.
    warnings: Vec<String>,
    /// qola's registry with the user's over it.
    registry: Registry,
    /// The user's registry, when one is given.
    user_registry: Option<PathBuf>,
    /// The ck-jit run the build is under (see [`ck_jit`]).
    ck_jit: Option<CkJit>,
}

impl OutputBuild {
    /// A build into `output_dir` with the preparation options of `prepare` (manifest, root,
    /// commit, patches, offline...).
    pub fn new(prepare: Prepare, output_dir: impl Into<PathBuf>) -> OutputBuild {
        OutputBuild {
            prepare,
            output_dir: output_dir.into(),
            archs: Vec::new(),
            mode: None,
            groups: Vec::new(),
            ck_filter: None,
            skip_checkout: false,
            verbose: false,
            timings: None,
            require_rocm: false,
            registry: None,
            prebuilt: None,
            publish: None,
            verify: false,
            sign_key: None,
            trust: Vec::new(),
        }
    }

    /// Architectures (`--arch`), over the manifest's and `GPU_ARCHS`.
    pub fn archs(&mut self, archs: &[String]) -> &mut OutputBuild {
        self.archs = archs.to_vec();
        self
    }

    /// The build mode (`--mode`) of modules whose entry has none, over `[build] mode`.
    pub fn mode(&mut self, mode: BuildMode) -> &mut OutputBuild {
        self.mode = Some(mode);
        self
    }

    /// Build only these groups (`--group`, each value a list as QoLA reads it: `"a;b"`), over
    /// `QOLA_BUILD_GROUPS`.
    pub fn groups(&mut self, groups: &[String]) -> &mut OutputBuild {
        self.groups = select::group_list(groups.iter().map(String::as_str));
        self
    }

    /// Narrow CK's instances (CK's `--filter`), for narrow builds; `QOLA_CK_FILTER_<MODULE>`
    /// (for example `QOLA_CK_FILTER_LIBMHA_BWD`) wins for its module.
    pub fn ck_filter(&mut self, filter: &str) -> &mut OutputBuild {
        self.ck_filter = Some(filter.to_string());
        self
    }

    /// Build against the tree as it is (`--skip-checkout`): no preparation.
    pub fn skip_checkout(&mut self, skip: bool) -> &mut OutputBuild {
        self.skip_checkout = skip;
        self
    }

    /// Shows each compile command on the terminal (`-v`).
    pub fn verbose(&mut self, verbose: bool) -> &mut OutputBuild {
        self.verbose = verbose;
        self
    }

    /// Write each compiling library's timings report (`--timings`; see
    /// [`crate::HipBuild::timings`]), over `QOLA_TIMINGS`.
    pub fn timings(&mut self, on: bool) -> &mut OutputBuild {
        self.timings = Some(on);
        self
    }

    /// Makes `[qola] rocm_versions` a requirement (`--require-rocm`): a HIP compiler of another
    /// version is an error ([`AiterError::RocmVersion`]). Without it, as in QoLA, the list is
    /// informational: a mismatch is a warning and the build goes on.
    pub fn require_rocm(&mut self, require: bool) -> &mut OutputBuild {
        self.require_rocm = require;
        self
    }

    /// A registry in QoLA's format (`--registry`) over qola's own, over `QOLA_REGISTRY` and the
    /// manifest's `[qola] registry` (see [`crate::aiter::registry`]).
    pub fn registry(&mut self, path: impl Into<PathBuf>) -> &mut OutputBuild {
        self.registry = Some(path.into());
        self
    }

    /// Fetch each module's files by its library key from `url` before preparing (`--prebuilt`),
    /// over `QOLA_PREBUILT_URL` and the manifest's `[qola] prebuilt`: `file:///<dir>` or
    /// `http(s)://...` (see [`crate::aiter::prebuilt`]).
    pub fn prebuilt(&mut self, url: &str) -> &mut OutputBuild {
        self.prebuilt = Some(url.to_string());
        self
    }

    /// Publish each module built here from a tree qola prepared to `url` (`--publish`), over
    /// `QOLA_PUBLISH_URL`.
    pub fn publish(&mut self, url: &str) -> &mut OutputBuild {
        self.publish = Some(url.to_string());
        self
    }

    /// Sign each archive published with the minisign secret key in `path` (`--sign-key`), over
    /// `QOLA_SIGN_KEY` (see [`crate::aiter::prebuilt`]); a key other users can read is refused.
    pub fn sign_key(&mut self, path: impl Into<PathBuf>) -> &mut OutputBuild {
        self.sign_key = Some(path.into());
        self
    }

    /// Take prebuilt archives signed by these publishers only (`--trust`, each a minisign
    /// public key `RW...` or a `.pub` file), over `QOLA_TRUSTED_KEYS` and the manifest's
    /// `[qola] trusted_keys`.
    pub fn trust(&mut self, keys: &[String]) -> &mut OutputBuild {
        self.trust = keys.to_vec();
        self
    }

    /// With a prebuilt store: build from source anyway and compare the files with the
    /// prebuilt's, byte for byte (`--verify`); a difference fails the module, naming the files.
    pub fn verify(&mut self, verify: bool) -> &mut OutputBuild {
        self.verify = verify;
        self
    }

    /// `[qola] rocm_versions` against the compiler: an error with [`OutputBuild::require_rocm`],
    /// else a warning.
    fn check_rocm(&self, manifest: &Manifest, toolchain: &HipToolchain) -> Result<Option<String>> {
        match crate::aiter::recipe::rocm_versions_mismatch(manifest, toolchain) {
            None => Ok(None),
            Some(mismatch) if self.require_rocm => Err(mismatch),
            Some(mismatch) => Ok(Some(format!(
                "{mismatch}; building with it anyway, as QoLA does (`[qola] rocm_versions` is informational unless --require-rocm)"
            ))),
        }
    }

    /// Resolves the manifest, the settings, the architectures, the compiler and the registry:
    /// everything but the tree, which [`OutputBuild::prepare_tree`] prepares.
    fn inputs(&self, env: &Env) -> Result<Inputs> {
        let mut prepare = self.prepare.clone();
        prepare.cargo_metadata(false);
        if let Some(dir) = env.var_os("QOLA_AITER_SOURCE_DIR") {
            prepare.root(PathBuf::from(dir)).skip(true);
        }
        if self.skip_checkout {
            prepare.skip(true);
        }
        // One resolution of the settings, one read of the manifest, for the whole build.
        let settings = prepare.settings(env)?;
        if settings.manifest_path.is_none() {
            return Err(ManifestError::Missing.into());
        }
        let manifest = settings.manifest.clone();
        let archs = crate::compile::resolve_archs(env, &self.archs, &manifest.build.architectures)?;
        let cache = settings.cache.clone().ok_or(crate::cache_dir::NoCacheDir)?;
        let namespace = manifest.namespace().map(String::from);
        let variants = manifest.variant_filters()?;
        // Under ck-jit, the real compiler: `$ROCM_PATH/bin/hipcc` is its interceptor.
        let ck_jit = CkJit::detect(env)?;
        let toolchain = match &ck_jit {
            Some(ck_jit) => ck_jit.toolchain()?,
            None => HipToolchain::find(env)?,
        };
        let user_registry = Setting::argument(self.registry.clone())
            .environment_path(|| env.var_os("QOLA_REGISTRY").map(PathBuf::from))
            .manifest(|| {
                let dir = manifest.path.parent().unwrap_or(Path::new("."));
                manifest.qola.registry.as_ref().map(|p| dir.join(p))
            })
            .value();
        let registry = Registry::with_user(user_registry.as_deref())?;
        let mut inputs = Inputs {
            root: settings.root.clone(),
            prepare,
            settings,
            manifest,
            toolchain,
            archs,
            cache,
            namespace,
            variants,
            warnings: Vec::new(),
            registry,
            user_registry,
            ck_jit,
        };
        if let Some(warning) = self.check_rocm(&inputs.manifest, &inputs.toolchain)? {
            inputs.warnings.push(warning);
        }
        Ok(inputs)
    }

    /// Prepares the tree (or takes it as it is): its root into `ctx`. Returns the preparation's
    /// warnings, which it has said already (through `env`'s directives).
    fn prepare_tree(&self, env: &Env, ctx: &mut Inputs) -> Result<Vec<String>> {
        let prepared = ctx.prepare.prepare_with(&ctx.settings, env)?;
        ctx.root = prepared.root;
        Ok(prepared.warnings)
    }

    /// A selected module assembled as a library ([`library`]): QoLA's C++ API, the output
    /// directory's layout, qola's cache. A `pybind` module is an error (it needs PyTorch).
    fn assemble(
        &self,
        env: &Env,
        ctx: &Inputs,
        s: &Selected,
        refusals: Refusals,
    ) -> Result<AiterLibrary> {
        let mode = s.module.mode.or(self.mode).or(ctx.manifest.build.mode);
        if mode == Some(BuildMode::Pybind) {
            return Err(AiterError::InvalidOption {
                option: format!("module {} mode = \"pybind\"", s.module.name),
                problem: "a pybind module is a Python extension linked against PyTorch, which qola does not build; use mode = \"cpp_itfs\"".to_string(),
            });
        }
        let work = self.output_dir.join("_qola");
        let filter = self.ck_filter_of(env, &s.module)?;
        // Under ck-jit, CK's instances in `blob/` directories of a generated tree of their own.
        let (gen_dir, ck_instances) = match ctx.ck_jit.is_some() && CkJit::takes(&s.so_path) {
            true => (work.join("ck-jit").join("gen"), CkInstances::InBlobDir),
            false => (work.join("gen"), CkInstances::InGeneratorDir),
        };
        let spec = AiterModuleSpec {
            root: &ctx.root,
            module: &s.module,
            archs: &ctx.archs,
            gen_dir: &gen_dir,
            cache: &ctx.cache,
            ck_filter: filter.as_deref(),
            variants: &ctx.variants,
            compiler: None,
            toolchain: Some(&ctx.toolchain),
            cargo_metadata: false,
            registry: Some(&ctx.registry),
        };
        let api = Api::Cpp {
            namespace: ctx.namespace.clone(),
            include: self.output_dir.join("include"),
        };
        let mut lib = library_in(&spec, &api, env, ck_instances, refusals)?;
        lib.build
            .cache_dir(&ctx.cache)
            // The public headers are under the output directory: by name, the same for `-o A`
            // and `-o B`.
            .root("output", &self.output_dir)
            .out_dir(work.join("build").join(&s.md_name))
            .cargo_metadata(false)
            .shared(&s.so_path);
        Ok(lib)
    }

    /// Builds (see the module docs). `Err` only for what stops every module (manifest, checkout,
    /// toolchain); a module's own failure is in the record, and [`BuildOutcome`]'s summary counts it.
    pub fn try_build(&self) -> Result<BuildOutcome> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let mut ctx = self.inputs(&env)?;
        let selected = self.select(&env, &ctx)?;
        let mut stores = self.stores(&env, &ctx.manifest)?;
        if let Some(ck_jit) = &ctx.ck_jit {
            eprintln!("{}", ck_jit.notice());
            if stores.take().is_some() {
                eprintln!(
                    "qola build: under ck-jit the prebuilt store is neither asked nor published to: a ck-jit library compiles its kernels on first use, it is not the ahead-of-time library its key names"
                );
            }
        }
        let keys = match &stores {
            Some(_) => self.keys(&env, &ctx, &selected)?,
            None => Vec::new(),
        };
        std::fs::create_dir_all(&self.output_dir).map_err(io_error("create", &self.output_dir))?;
        // What is there before anything is written (see `ledger`).
        let mut ledger = Ledger::open(&ctx.cache, &self.output_dir)?;
        ledger.settle(Moment::Before)?;
        // Before any checkout: each module's files by its key, when a store has them.
        let (arrivals, fetch_seconds): (Vec<Option<Arrival>>, Vec<f64>) = match &stores {
            Some(stores) => self.arrivals(stores, &selected, &keys),
            None => selected.iter().map(|_| (None, 0.0)).unzip(),
        };
        let fetched = |a: &Option<Arrival>| matches!(a, Some(Arrival::Fetched(_)));
        let needs_tree = selected
            .iter()
            .zip(&arrivals)
            .any(|(s, a)| s.prebuilt.is_none() && !fetched(a));
        let shared_files = match needs_tree {
            true => {
                self.prepare_tree(&env, &mut ctx)?;
                // A ROCm too old for the tree stops the build before anything is written.
                let arch = crate::aiter::recipe::aiter_gfx(&ctx.archs);
                let paths = crate::aiter::AiterPaths::new(&ctx.root, arch, &env)?;
                crate::aiter::recipe::check_rocm_needs(
                    &paths.meta,
                    &ctx.toolchain,
                    arch,
                    &ctx.cache,
                    &ctx.cache.join(crate::cache_dir::PROBES).join("scratch"),
                )?;
                self.write_shared(&env, &ctx)?
            }
            false => Vec::new(),
        };
        // The preparation said its own warnings; these are the compiler's.
        for warning in &ctx.warnings {
            eprintln!("qola: warning: {warning}");
        }
        let mut modules = Vec::new();
        let (mut compiled, mut units, mut libraries_written) = (0, 0, Vec::new());
        let mut prebuilt = Vec::new();
        for (i, s) in selected.iter().enumerate() {
            let start = Instant::now();
            let built = match &arrivals[i] {
                Some(Arrival::Fetched(bytes)) => {
                    prebuilt.push((s.md_name.clone(), *bytes));
                    self.say_prebuilt(
                        &env,
                        s,
                        &keys[i],
                        stores.as_ref(),
                        *bytes,
                        fetch_seconds[i],
                    )?;
                    Ok(Built::default())
                }
                arrival => self.build_module(&env, &ctx, s).and_then(|counts| {
                    if let (Some(stores), Some(key)) = (&stores, keys.get(i)) {
                        self.settle(stores, s, key, arrival.as_ref(), &shared_files)?;
                    }
                    Ok(counts)
                }),
            };
            let duration_s = (start.elapsed().as_secs_f64() * 100.0).round() / 100.0;
            let (success, error) = match built {
                Ok(built) => {
                    compiled += built.compiled;
                    units += built.units;
                    if built.written {
                        libraries_written.push(
                            s.so_path
                                .strip_prefix(&self.output_dir)
                                .unwrap_or(&s.so_path)
                                .to_path_buf(),
                        );
                    }
                    (true, String::new())
                }
                Err(e) => {
                    eprintln!("qola build: {}: error: {e}", s.md_name);
                    (false, e.to_string())
                }
            };
            modules.push(ModuleRecord {
                md_name: s.md_name.clone(),
                success,
                error,
                so_path: success.then(|| s.so_path.clone()),
                duration_s,
                prebuilt: fetched(&arrivals[i]),
            });
        }
        let failed = modules.iter().filter(|m| !m.success).count();
        let record = BuildRecord {
            generated_at: crate::common::time::utc_timestamp(crate::common::time::unix_now()),
            aiter_root: ctx.root.clone(),
            manifest_src: ctx.manifest.path.clone(),
            gpu_archs: ctx.archs.join(";"),
            summary: Summary {
                total: modules.len(),
                success: modules.len() - failed,
                failed,
            },
            modules,
        };
        let record_written = record::write_record(
            &self.output_dir.join("manifest.json"),
            &record,
            ledger.manifest_json(),
        )?;
        if let Some(notice) = ledger.settle(Moment::After)?.notice() {
            eprintln!("{notice}");
        }
        Ok(BuildOutcome {
            record,
            record_written,
            compiled,
            units,
            prebuilt,
            libraries_written,
        })
    }

    /// Builds one module's library.
    fn build_module(&self, env: &Env, ctx: &Inputs, s: &Selected) -> Result<Built> {
        if let Some(dir) = &s.prebuilt {
            let from = dir.join(format!("{}.so", s.md_name));
            let bytes =
                std::fs::read(&from).map_err(io_error("read the prebuilt library", &from))?;
            let written = write_if_changed(&s.so_path, &bytes)?;
            return Ok(Built {
                written,
                ..Built::default()
            });
        }
        let mut lib = self.assemble(env, ctx, s, Refusals::Stop)?;
        for warning in &lib.module.warnings {
            eprintln!("qola: warning: {}: {warning}", s.md_name);
        }
        if !lib.wrapped {
            eprintln!(
                "qola build: {}: qola has no C++ API wrapper for {}; the library exports AITER's own default-visibility symbols",
                s.md_name, s.module.name
            );
        }
        if let Some(on) = self.timings {
            lib.build.timings(on);
        }
        let verbose = self.verbose || lib.module.recipe.verbose;
        if let Some(ck_jit) = ctx.ck_jit.as_ref().filter(|_| CkJit::takes(&s.so_path)) {
            let work_dir = self.output_dir.join("_qola").join("build").join(&s.md_name);
            let (compiled, units) = ck_jit.build(lib, &s.md_name, &work_dir, env, verbose)?;
            // ck-jit relinks the library on every run.
            return Ok(Built {
                compiled,
                units,
                written: true,
            });
        }
        lib.build.progress_on_terminal(verbose);
        let report = lib.compile_in(&s.md_name, env)?;
        Ok(Built {
            compiled: report.compiled(),
            units: report.units.len(),
            written: report.library_written,
        })
    }
}
