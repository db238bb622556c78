//! [`OutputBuild`]: a `qola build` (and `qola plan`), the options it is given and its steps,
//! each a call: resolve the inputs, select the modules, open the prebuilt stores and ask them,
//! prepare the tree when a module must be built here, build each module, write the record; the
//! ledger around it puts back the mtimes of files written again with the content they had.

use std::path::PathBuf;
use std::time::Instant;

use super::ck_jit::CkJit;
use super::inputs::{BuildOptions, Inputs};
use super::ledger::{Ledger, Moment};
use super::plan::{BuildPlan, GeneratorPlan, ModulePlan};
use super::record::{self, BuildRecord, ModuleRecord, Summary};
use super::select::{Selected, group_list, select};
use super::shared::write_shared;
use crate::aiter::library::{AiterLibrary, Api, library_in};
use crate::aiter::module::{AiterModuleSpec, CkInstances, ck_filter_in};
use crate::aiter::prebuilt::{Arrival, StoreOptions, Stores};
use crate::aiter::{AiterError, Refusals, Result};
use crate::build_script::{Directives, Env};
use crate::common::io::{io_error, write_if_changed};
use crate::common::precedence::Setting;
use crate::manifest::BuildMode;
use crate::prepare::Prepare;

/// `qola build`: a QoLA manifest's modules built into QoLA's output directory, so a consumer of
/// QoLA (TransformerEngine's CMake) links qola's libraries unchanged:
///
/// | path under `--output-dir` | what |
/// |---|---|
/// | `lib/<ns>_<md_name>.so` | one shared library per module; exports `qola::<ns>::*` only |
/// | `include/` | `qola_common.h`, `qola_mha_fwd.h`, `qola_mha_bwd.h`, `qola_config.h` (namespace) |
/// | `configs/` | AITER's tuning tables (`aiter/configs/*.csv`, `model_configs/`) |
/// | `aiter-headers/` | the AITER and composable_kernel headers the public headers include, at their paths in the tree (see `tree_headers`): compile against the libraries without a checkout |
/// | `manifest.json` | per module: `md_name`, `success`, `error`, `so_path`, `duration_s` (and `prebuilt: true` for a module fetched by its key); a summary |
/// | `_qola/` | qola's work: generated code, embedded hsa headers, compile logs, link records |
///
/// Incremental like the rest of qola: a build with nothing changed compiles nothing and writes no
/// file (every output is written only when its content changes; `manifest.json` only when more
/// than its time stamps and durations would change). A module that fails is recorded in
/// `manifest.json` with its error; the others are still built. Nothing is written into the AITER
/// tree.
///
/// Which modules: every `[[modules]]` entry, or those of the groups `--group` /
/// `QOLA_BUILD_GROUPS` name; a group whose `QOLA_PREBUILT_DIR_<GROUP>` is set is not built, its
/// libraries are taken from that directory.
///
/// With a prebuilt store (`--prebuilt`, see [`crate::aiter::prebuilt`] and
/// [`OutputBuild::prebuilt_stores`]) each module's files are
/// first asked for by its library key; the tree is prepared only when a module must be built
/// here. With `--publish`, each module built here from a tree qola prepared is published.
#[derive(Debug, Clone)]
pub struct OutputBuild {
    prepare: Prepare,
    output_dir: PathBuf,
    options: BuildOptions,
    stores: StoreOptions,
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

impl OutputBuild {
    /// A build into `output_dir` with the preparation options of `prepare` (manifest, root,
    /// commit, patches, offline...).
    pub fn new(prepare: Prepare, output_dir: impl Into<PathBuf>) -> OutputBuild {
        OutputBuild {
            prepare,
            output_dir: output_dir.into(),
            options: BuildOptions::default(),
            stores: StoreOptions::default(),
        }
    }

    /// Architectures (`--arch`), over the manifest's and `GPU_ARCHS`.
    pub fn archs(&mut self, archs: &[String]) -> &mut OutputBuild {
        self.options.archs = archs.to_vec();
        self
    }

    /// The build mode (`--mode`) of modules whose entry has none, over `[build] mode`.
    pub fn mode(&mut self, mode: BuildMode) -> &mut OutputBuild {
        self.options.mode = Some(mode);
        self
    }

    /// Build only these groups (`--group`, each value a list as QoLA reads it: `"a;b"`), over
    /// `QOLA_BUILD_GROUPS`.
    pub fn groups(&mut self, groups: &[String]) -> &mut OutputBuild {
        self.options.groups = group_list(groups.iter().map(String::as_str));
        self
    }

    /// Narrow CK's instances (CK's `--filter`), for narrow builds; `QOLA_CK_FILTER_<MODULE>`
    /// (for example `QOLA_CK_FILTER_LIBMHA_BWD`) wins for its module.
    pub fn ck_filter(&mut self, filter: &str) -> &mut OutputBuild {
        self.options.ck_filter = Some(filter.to_string());
        self
    }

    /// Build against the tree as it is (`--skip-checkout`): no preparation.
    pub fn skip_checkout(&mut self, skip: bool) -> &mut OutputBuild {
        self.options.skip_checkout = skip;
        self
    }

    /// Shows each compile command on the terminal (`-v`).
    pub fn verbose(&mut self, verbose: bool) -> &mut OutputBuild {
        self.options.verbose = verbose;
        self
    }

    /// Write each compiling library's timings report (`--timings`; see
    /// [`crate::HipBuild::timings`]), over `QOLA_TIMINGS`.
    pub fn timings(&mut self, on: bool) -> &mut OutputBuild {
        self.options.timings = Some(on);
        self
    }

    /// Makes `[qola] rocm_versions` a requirement (`--require-rocm`): a HIP compiler of another
    /// version is an error ([`AiterError::RocmVersion`]). Without it, as in QoLA, the list is
    /// informational: a mismatch is a warning and the build goes on.
    pub fn require_rocm(&mut self, require: bool) -> &mut OutputBuild {
        self.options.require_rocm = require;
        self
    }

    /// A registry in QoLA's format (`--registry`) over qola's own, over `QOLA_REGISTRY` and the
    /// manifest's `[qola] registry` (see [`crate::aiter::registry`]).
    pub fn registry(&mut self, path: impl Into<PathBuf>) -> &mut OutputBuild {
        self.options.registry = Some(path.into());
        self
    }

    /// The prebuilt stores (`--prebuilt`, `--publish`, `--trust`, `--sign-key`, `--verify`; see
    /// [`crate::aiter::prebuilt`]): each module's files are first asked for by its library key;
    /// the tree is prepared only when a module must be built here.
    pub fn prebuilt_stores(&mut self, stores: StoreOptions) -> &mut OutputBuild {
        self.stores = stores;
        self
    }

    /// Builds (see [`OutputBuild`]). `Err` only for what stops every module (manifest,
    /// checkout, toolchain); a module's own failure is in the record, and [`BuildOutcome`]'s
    /// summary counts it.
    pub fn try_build(&self) -> Result<BuildOutcome> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let (mut ctx, selected) = resolved_and_selected(self, &env)?;
        let stores = stores_beside_ck_jit(self.stores.open(&env, &ctx.manifest)?, &ctx);
        let keys = match &stores {
            Some(_) => ctx.library_keys(&env, &selected, &self.options)?,
            None => Vec::new(),
        };
        std::fs::create_dir_all(&self.output_dir).map_err(io_error("create", &self.output_dir))?;
        // What is there before anything is written (see `ledger`).
        let mut ledger = Ledger::open(&ctx.cache, &self.output_dir)?;
        ledger.settle(Moment::Before)?;
        // Before any checkout: each module's files by its key, when a store has them.
        let arrivals: Vec<(Option<Arrival>, f64)> = match &stores {
            Some(stores) => selected
                .iter()
                .zip(&keys)
                .map(|(s, key)| match &s.prebuilt {
                    Some(_) => (None, 0.0),
                    None => stores.ask(&self.output_dir, &s.md_name, key),
                })
                .collect(),
            None => selected.iter().map(|_| (None, 0.0)).collect(),
        };
        let needs_tree = selected
            .iter()
            .zip(&arrivals)
            .any(|(s, (a, _))| s.prebuilt.is_none() && !fetched(a));
        let shared_files = match needs_tree {
            true => {
                ctx.prepare_tree(&env)?;
                ctx.check_rocm_needs(&env)?;
                write_shared(&env, &ctx, &self.output_dir)?
            }
            false => Vec::new(),
        };
        // The preparation said its own warnings; these are the compiler's.
        for warning in &ctx.warnings {
            eprintln!("qola: warning: {warning}");
        }
        let mut tally = Tally::default();
        for (i, s) in selected.iter().enumerate() {
            let start = Instant::now();
            let (arrival, seconds) = &arrivals[i];
            let built = match (arrival, &stores) {
                (Some(Arrival::Fetched(bytes)), Some(stores)) => {
                    let timings = Setting::argument(self.options.timings)
                        .environment(|| env.flag("QOLA_TIMINGS").map(Some))?
                        .value()
                        .unwrap_or(false);
                    let dir = self.output_dir.join("_qola").join("build").join(&s.md_name);
                    stores.say_fetched(
                        &s.md_name,
                        &keys[i],
                        (*bytes, *seconds),
                        timings.then_some(dir),
                    );
                    Ok(Built::default())
                }
                _ => self.build_module(&env, &ctx, s).and_then(|counts| {
                    if let (Some(stores), Some(key)) = (&stores, keys.get(i)) {
                        stores.settle(
                            &self.output_dir,
                            &s.md_name,
                            key,
                            arrival.as_ref(),
                            &shared_files,
                        )?;
                    }
                    Ok(counts)
                }),
            };
            tally.add(s, built, start, arrival.as_ref(), &self.output_dir);
        }
        let record = tally.record(&ctx);
        let record_written = record::write_record(
            &self.output_dir.join("manifest.json"),
            &record,
            ledger.manifest_json(),
        )?;
        if let Some(notice) = ledger.settle(Moment::After)?.notice() {
            eprintln!("{notice}");
        }
        Ok(tally.outcome(record, record_written))
    }

    /// What [`OutputBuild::try_build`] would run for each module (code generation runs; nothing
    /// compiles or links), and what it would warn about.
    pub fn try_plan(&self) -> Result<BuildPlan> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let (mut ctx, selected) = resolved_and_selected(self, &env)?;
        let keys = ctx.library_keys(&env, &selected, &self.options)?;
        let mut warnings = ctx.prepare_tree(&env)?;
        warnings.extend(ctx.warnings.iter().cloned());
        if let Some(ck_jit) = &ctx.ck_jit {
            warnings.push(format!(
                "{}; the plans below are qola's own: at build time the CK units of {} go to ck-jit's interceptor, one call each, and ck-jit links",
                ck_jit.notice(),
                selected
                    .iter()
                    .filter(|s| CkJit::takes(&s.so_path))
                    .map(|s| s.md_name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut plans = Vec::new();
        let refused = std::cell::RefCell::new(Vec::new());
        for (s, library_key) in selected.into_iter().zip(keys) {
            let lib = self.assemble(&env, &ctx, &s, Refusals::Note(&refused))?;
            let compile = match lib.build.plan_in(&s.md_name, &env) {
                Ok(compile) => Some(compile),
                // The compiler the build would refuse cannot plan the compiles either: the plan
                // shows the rest.
                Err(e) if !refused.borrow().is_empty() => {
                    warnings.push(format!(
                        "{}: no compile plan with this compiler: {e}",
                        s.md_name
                    ));
                    None
                }
                Err(e) => return Err(e.into()),
            };
            warnings.extend(
                lib.module
                    .warnings
                    .iter()
                    .map(|w| format!("{}: {w}", s.md_name)),
            );
            plans.push(ModulePlan {
                md_name: s.md_name.clone(),
                group: s.module.group.clone(),
                verbose: self.options.verbose || lib.module.recipe.verbose,
                generators: lib.module.generated.iter().map(GeneratorPlan::of).collect(),
                dropped_flags: lib.module.dropped_flags.clone(),
                core_flags: lib.module.core_flags.clone(),
                hsa_blobs: lib.hsa.blobs,
                batches: lib.module.batches.clone(),
                compile,
                library_key,
            });
        }
        Ok(BuildPlan {
            modules: plans,
            warnings,
            refused: refused.into_inner(),
        })
    }

    /// A selected module assembled as a library ([`library_in`]): QoLA's C++ API, the output
    /// directory's layout, qola's cache. A `pybind` module is an error (it needs PyTorch).
    fn assemble(
        &self,
        env: &Env,
        ctx: &Inputs,
        s: &Selected,
        refusals: Refusals,
    ) -> Result<AiterLibrary> {
        let mode = s
            .module
            .mode
            .or(self.options.mode)
            .or(ctx.manifest.build.mode);
        if mode == Some(BuildMode::Pybind) {
            return Err(AiterError::InvalidOption {
                option: format!("module {} mode = \"pybind\"", s.module.name),
                problem: "a pybind module is a Python extension linked against PyTorch, which qola does not build; use mode = \"cpp_itfs\"".to_string(),
            });
        }
        let work = self.output_dir.join("_qola");
        let filter = ck_filter_in(env, &s.module.name, self.options.ck_filter.clone())?;
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
        if let Some(on) = self.options.timings {
            lib.build.timings(on);
        }
        let verbose = self.options.verbose || lib.module.recipe.verbose;
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

/// What a build or a plan starts from: its inputs resolved (all but the tree) and its modules
/// selected.
fn resolved_and_selected(build: &OutputBuild, env: &Env) -> Result<(Inputs, Vec<Selected>)> {
    let ctx = Inputs::resolve(env, &build.prepare, &build.options)?;
    let selected = select(
        env,
        &ctx.manifest,
        ctx.namespace.as_deref(),
        &build.options.groups,
        &build.output_dir,
    )?;
    Ok((ctx, selected))
}

/// Whether a store's answer put the module's files in place.
fn fetched(arrival: &Option<Arrival>) -> bool {
    matches!(arrival, Some(Arrival::Fetched(_)))
}

/// The stores a build asks: none under ck-jit (said, with ck-jit's notice).
fn stores_beside_ck_jit(stores: Option<Stores>, ctx: &Inputs) -> Option<Stores> {
    let Some(ck_jit) = &ctx.ck_jit else {
        return stores;
    };
    eprintln!("{}", ck_jit.notice());
    if stores.is_some() {
        eprintln!(
            "qola build: under ck-jit the prebuilt store is neither asked nor published to: a ck-jit library compiles its kernels on first use, it is not the ahead-of-time library its key names"
        );
    }
    None
}

/// What the modules of a build did, module after module: their records and the totals.
#[derive(Default)]
struct Tally {
    modules: Vec<ModuleRecord>,
    compiled: usize,
    units: usize,
    prebuilt: Vec<(String, u64)>,
    libraries_written: Vec<PathBuf>,
}

impl Tally {
    /// One module's result, `start` being when it began; a failure is said.
    fn add(
        &mut self,
        s: &Selected,
        built: Result<Built>,
        start: Instant,
        arrival: Option<&Arrival>,
        output_dir: &std::path::Path,
    ) {
        let duration_s = (start.elapsed().as_secs_f64() * 100.0).round() / 100.0;
        if let Some(Arrival::Fetched(bytes)) = arrival {
            self.prebuilt.push((s.md_name.clone(), *bytes));
        }
        let (success, error) = match built {
            Ok(built) => {
                self.compiled += built.compiled;
                self.units += built.units;
                if built.written {
                    self.libraries_written.push(
                        s.so_path
                            .strip_prefix(output_dir)
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
        self.modules.push(ModuleRecord {
            md_name: s.md_name.clone(),
            success,
            error,
            so_path: success.then(|| s.so_path.clone()),
            duration_s,
            prebuilt: matches!(arrival, Some(Arrival::Fetched(_))),
        });
    }

    /// `manifest.json`'s content.
    fn record(&self, ctx: &Inputs) -> BuildRecord {
        let modules = self.modules.clone();
        let failed = modules.iter().filter(|m| !m.success).count();
        BuildRecord {
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
        }
    }

    fn outcome(self, record: BuildRecord, record_written: bool) -> BuildOutcome {
        BuildOutcome {
            record,
            record_written,
            compiled: self.compiled,
            units: self.units,
            prebuilt: self.prebuilt,
            libraries_written: self.libraries_written,
        }
    }
}
