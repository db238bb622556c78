//! One module of the prepared tree, ready to compile (see the folder's docs for the flags and
//! the one decision that differs from AITER): its recipe with the manifest's overrides, its
//! generated code, its includes in AITER's order and AITER's flags for this compiler.

mod batches;
mod codegen;
mod flags;
mod hsa;
mod needs;
mod third_party;
mod tree_headers;

pub use batches::Batch;
pub(crate) use codegen::CkInstances;
pub use codegen::Generated;
pub use hsa::{EmbeddedHsa, embed_hsa};
pub(crate) use hsa::{HsaForm, absent as absent_hsa, embed_hsa_map};
pub(crate) use tree_headers::copy as copy_tree_headers;

use flags::{flags_for, includes_of, per_source_flags};

use std::path::{Path, PathBuf};

use crate::aiter::AiterError;
use crate::aiter::Result;
use crate::aiter::recipe::{self, AiterPaths, ModuleRecipe};
use crate::aiter::registry::{Context, Registry};
use crate::build_script::Env;
use crate::common::precedence::Setting;
use crate::compile::HipToolchain;
use crate::manifest::Module;

/// The oldest HIP whose clang compiles composable_kernel's tile code.
const MIN_CK_HIP: (u32, u32) = (6, 0);

/// Fails with one clear line when the compiler is too old for composable_kernel.
pub fn check_ck_toolchain(toolchain: &HipToolchain) -> Result<()> {
    let found = toolchain.hip_release();
    match found {
        Some((major, minor, _)) if (major, minor) >= MIN_CK_HIP => Ok(()),
        _ => Err(AiterError::ToolchainTooOld {
            needed: format!("{}.{}", MIN_CK_HIP.0, MIN_CK_HIP.1),
            found: found.map_or("an unknown HIP version".to_string(), |(a, b, _)| {
                format!("{a}.{b}")
            }),
            compiler: toolchain.path.clone(),
        }),
    }
}

/// A module of the prepared tree, ready to compile: its generated and listed sources, include
/// directories in AITER's order and AITER's flags.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AiterModule {
    /// The recipe after the manifest's overrides.
    pub recipe: ModuleRecipe,
    /// What each generator produced.
    pub generated: Vec<Generated>,
    /// Every source to compile, sorted (listed sources, then generated `.cpp`/`.cu`/`.hip`),
    /// composable_kernel's instances in batches (see `batches`).
    pub sources: Vec<PathBuf>,
    /// The batches among `sources`, each with the instances it compiles.
    pub batches: Vec<Batch>,
    /// Include directories in AITER's order.
    pub includes: Vec<PathBuf>,
    /// Compile flags, one argument each, without architectures and includes.
    pub flags: Vec<String>,
    /// Flags dropped because the compiler does not know them.
    pub dropped_flags: Vec<String>,
    /// The lists the tree's own `core.py` gives the module, before qola adds `cpp_extension`'s
    /// flags and probes the `-mllvm` ones (see `recipe::core_flags`).
    pub core_flags: crate::aiter::CoreFlags,
    /// Flags of single sources (the recipe's `flags_extra_hip_per_source`), one argument each.
    pub file_flags: Vec<(PathBuf, Vec<String>)>,
    /// The compiler the flags were chosen (and probed) for.
    pub toolchain: HipToolchain,
    /// What the manifest's entry asks that selects nothing in this tree (see
    /// `recipe::apply_overrides`).
    pub warnings: Vec<String>,
    /// The AITER tree it was prepared from (the build's root `aiter`).
    pub root: PathBuf,
    /// Where its sources, generators and hsa code objects are (`AITER_META_DIR`: the tree,
    /// or the environment's; the build's root `aiter-meta` when it differs).
    pub meta: PathBuf,
    /// Where its code was generated (the build's root `gen`).
    pub gen_dir: PathBuf,
}

impl AiterModule {
    /// A [`crate::compile::HipBuild`] of this module's sources with AITER's includes and flags;
    /// the AITER tree and the generated code are its roots `aiter` and `gen`, so the units
    /// compile once wherever the tree and the output directory are.
    pub fn hip_build(&self) -> crate::compile::HipBuild {
        let mut build = crate::compile::HipBuild::new();
        build
            .toolchain(self.toolchain.clone())
            .files(&self.sources)
            .root("aiter", &self.root)
            .root("gen", &self.gen_dir)
            .memory_per_job(CK_UNIT_MEMORY)
            .precompile_shared_includes(true);
        if self.meta != self.root {
            build.root("aiter-meta", &self.meta);
        }
        for dir in &self.includes {
            build.include(dir);
        }
        for flag in &self.flags {
            build.flag(flag);
        }
        for (file, flags) in &self.file_flags {
            build.file_flags(file, flags);
        }
        for batch in &self.batches {
            let names: Vec<String> = batch
                .members
                .iter()
                .map(|m| {
                    m.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            build.file_holds(&batch.file, &names);
        }
        build
    }
}

/// The memory one composable_kernel unit needs to compile, with headroom: 0.4–1.2 GB measured
/// for gfx942 fmha instances with clang 21 (BENCHMARKS.md).
pub const CK_UNIT_MEMORY: u64 = 1 << 30;

/// What to build a module from.
#[derive(Debug, Clone)]
pub struct AiterModuleSpec<'a> {
    /// The prepared checkout.
    pub root: &'a Path,
    /// The manifest's entry.
    pub module: &'a Module,
    /// Architectures to generate and compile for.
    pub archs: &'a [String],
    /// Where generated code goes (under `OUT_DIR`).
    pub gen_dir: &'a Path,
    /// qola's cache (flag probes).
    pub cache: &'a Path,
    /// A CK instance filter (`--filter` of CK's generator), for narrow builds: appended to CK's
    /// fmha `generate.py`, and replacing the filter of a generator that has its own (AITER's
    /// backward pre/post kernels). A narrowed backward is not link-complete: AITER's asm v3
    /// backward API calls ~40 pre/post kernels whatever the filter keeps.
    pub ck_filter: Option<&'a str>,
    /// The CK filters of the manifest's attention variants, used for CK's `-d fwd` and
    /// `-d bwd` generators when `ck_filter` is not given. The backward's filter narrows CK's
    /// instances only, not AITER's pre/post kernels, so the library stays link-complete.
    pub variants: &'a crate::manifest::VariantFilters,
    /// The HIP compiler (default: found as [`crate::compile::HipBuild`] finds it).
    pub compiler: Option<&'a Path>,
    /// The HIP compiler, already identified (over `compiler`): an entry point building several
    /// modules identifies it once.
    pub toolchain: Option<&'a HipToolchain>,
    /// Print Cargo directives (inside a build script).
    pub cargo_metadata: bool,
    /// The registry (`None`: qola's own, see [`crate::aiter::registry`]).
    pub registry: Option<&'a Registry>,
}

impl AiterModuleSpec<'_> {
    /// The registry the module is built with.
    pub fn registry(&self) -> &Registry {
        self.registry.unwrap_or(Registry::shipped())
    }
}

/// What becomes of the compiler's refusals (too old for composable_kernel, older than the ROCm
/// the tree's sources need): an error before anything is generated, or, for a plan, a note (the
/// plan is made as far as it can be, and says the build would be refused and why).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refusals<'a> {
    /// An error.
    Stop,
    /// Noted here; preparing goes on.
    Note(&'a std::cell::RefCell<Vec<String>>),
}

impl Refusals<'_> {
    /// `refused`, stopped or noted.
    fn deal(self, refused: Result<()>) -> Result<()> {
        match (self, refused) {
            (Refusals::Note(notes), Err(e)) => {
                let why = e.to_string();
                let mut notes = notes.borrow_mut();
                if !notes.contains(&why) {
                    notes.push(why);
                }
                Ok(())
            }
            (_, refused) => refused,
        }
    }
}

/// Prepares a module: checks the compiler is new enough for composable_kernel, evaluates the
/// recipe with the manifest's overrides and CK filters (`recipe_of`), runs (or reuses) the
/// code generators into `gen_dir` (`generate`), and chooses AITER's includes and flags for
/// this compiler (`includes_of`, `flags_for`).
pub fn prepare_module(spec: &AiterModuleSpec) -> Result<AiterModule> {
    let directives = crate::build_script::Directives::new(spec.cargo_metadata);
    prepare_module_in(
        spec,
        &Env::new(&directives),
        CkInstances::InGeneratorDir,
        Refusals::Stop,
    )
}

/// The composable_kernel filter of `module` (CK's `--filter`) in a build script:
/// `QOLA_CK_FILTER_<MODULE>` (the module's own: CK's forward and backward filters differ in
/// form), else `QOLA_CK_FILTER` (every module's). Each read is tracked.
pub fn ck_filter(module: &str) -> Result<Option<String>> {
    let directives = crate::build_script::Directives::new(true);
    ck_filter_in(&Env::new(&directives), module, None)
}

/// The filter of `module` in the context `env`, `argument` as the build's (`qola build
/// --filter`): the module's own setting first, then the build's, by the one precedence
/// (argument > environment).
pub(crate) fn ck_filter_in(
    env: &Env,
    module: &str,
    argument: Option<String>,
) -> Result<Option<String>> {
    let own = env.var(&format!("QOLA_CK_FILTER_{}", module.to_ascii_uppercase()))?;
    if own.is_some() {
        return Ok(own);
    }
    Ok(Setting::argument(argument)
        .environment(|| env.var("QOLA_CK_FILTER"))?
        .value())
}

/// How many composable_kernel instances a batch holds: `QOLA_BATCH` (a positive number; `1`
/// compiles one unit per instance), else [`batches::DEFAULT_SIZE`]. The read is tracked.
pub(crate) fn batch_size(env: &Env) -> Result<usize> {
    match env.var("QOLA_BATCH")? {
        None => Ok(batches::DEFAULT_SIZE),
        Some(value) => match value.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(AiterError::InvalidOption {
                option: format!("QOLA_BATCH={value}"),
                problem: "it must be a positive number: how many composable_kernel instances one translation unit compiles (1: one unit per instance)".to_string(),
            }),
        },
    }
}

/// [`prepare_module`] in the context `env` of the build that asks, CK's instances generated
/// where `ck_instances` says.
pub(crate) fn prepare_module_in(
    spec: &AiterModuleSpec,
    env: &Env,
    ck_instances: CkInstances,
    refusals: Refusals,
) -> Result<AiterModule> {
    let toolchain = HipToolchain::resolve(env, spec.toolchain, spec.compiler)?;
    if let Some(entry) = spec.registry().entry(&spec.module.name)
        && let Some(supported) = &entry.architectures
        && let Some(arch) = spec.archs.iter().find(|a| !supported.contains(a))
    {
        return Err(AiterError::NoKernelsForArch {
            module: spec.module.name.clone(),
            arch: arch.clone(),
            supported: supported.clone(),
            registry: entry.file.clone(),
        });
    }
    let paths = AiterPaths::new(spec.root, recipe::aiter_gfx(spec.archs), env)?
        .merging_tables_in(spec.cache);
    let (mut recipe, mut warnings, ck_enabled) = recipe_of(spec, &paths, env)?;
    if paths.meta != paths.root {
        warnings.push(format!(
            "AITER_META_DIR={}: the module's sources, generators and hsa code objects are read from there, not from the prepared tree {} (as QoLA reads them)",
            paths.meta.display(),
            paths.root.display()
        ));
    }
    // The module's own clang (`hip_clang_path`), as AITER sets HIP_CLANG_PATH for its build.
    let toolchain = match &recipe.hip_clang_path {
        None => toolchain,
        Some(dir) => toolchain.with_clang_dir(dir).map_err(|e| {
            key_error(
                spec,
                "hip_clang_path",
                &dir.display().to_string(),
                &e.to_string(),
            )
        })?,
    };
    refusals.deal(check_ck_toolchain(&toolchain))?;
    refusals.deal(recipe::check_rocm_needs(
        &paths.meta,
        &toolchain,
        recipe::aiter_gfx(spec.archs),
        spec.cache,
        &spec.gen_dir.join("qola-flag-probe"),
    ))?;
    let third_party =
        third_party::includes(spec.root, &recipe.third_party, env).map_err(|why| {
            key_error(
                spec,
                "third_party",
                &format!("{:?}", recipe.third_party),
                &why,
            )
        })?;
    recipe.extra_include.extend(third_party);
    if ck_enabled {
        check_ck_present(spec, &paths, env)?;
    }
    // What the generators (and core.py, which the flags are read from) need of the Python,
    // checked before the first of them runs.
    let scripts: Vec<PathBuf> = recipe
        .blob_gen_cmd
        .iter()
        .filter_map(|cmd| recipe::generator_argv(cmd, spec.gen_dir).into_iter().next())
        .map(PathBuf::from)
        .collect();
    let core_py = [paths.root.join("aiter/jit/core.py")];
    let python = recipe::CheckedPython::new(
        recipe::generator_python(env)?,
        recipe::python_needs(&paths.meta, &scripts, &core_py),
    );
    let generated = generate(spec, &recipe, env, &python, ck_instances)?;
    let mut sources: Vec<PathBuf> = recipe.srcs.clone();
    for g in &generated {
        sources.extend(
            g.files
                .iter()
                .filter(|f| {
                    f.extension()
                        .is_some_and(|x| x == "cpp" || x == "cu" || x == "hip")
                })
                .cloned(),
        );
    }
    sources.sort();
    let file_flags = per_source_flags(spec, &recipe, &sources, &mut warnings)?;
    let includes = includes_of(spec.root, &generated, &recipe);
    // ck-jit compiles CK's instances itself, one by one.
    let size = match ck_instances {
        CkInstances::InGeneratorDir => batch_size(env)?,
        CkInstances::InBlobDir => 1,
    };
    let batch_dir = spec.gen_dir.join(&recipe.name).join(batches::DIR);
    let batches::Batched {
        sources,
        batches,
        file_flags,
    } = batches::batch_sources(&sources, &file_flags, &includes, size, &batch_dir)?;
    let (flags, dropped_flags, core_flags) = flags_for(spec, &paths, &recipe, &toolchain, env)?;
    Ok(AiterModule {
        recipe,
        generated,
        sources,
        batches,
        includes,
        flags,
        dropped_flags,
        core_flags,
        file_flags,
        toolchain,
        warnings,
        root: spec.root.to_path_buf(),
        meta: paths.meta.clone(),
        gen_dir: spec.gen_dir.to_path_buf(),
    })
}

/// Fails, naming the module, the directory and the submodule's commit, when the module is built
/// with composable_kernel (`ENABLE_CK`, see `needs::ck_enabled`) and the tree has no CK: its
/// generators and headers would fail one by one with Python's and the compiler's words.
fn check_ck_present(spec: &AiterModuleSpec, paths: &AiterPaths, env: &Env) -> Result<()> {
    let dir = PathBuf::from(paths.variable("CK_3RDPARTY_DIR", env)?.unwrap_or_default());
    if dir.join("include/ck_tile").is_dir() {
        return Ok(());
    }
    let pinned = git2::Repository::open(spec.root)
        .ok()
        .and_then(|repo| {
            let tree = repo.head().ok()?.peel_to_tree().ok()?;
            let entry = tree
                .get_path(Path::new("3rdparty/composable_kernel"))
                .ok()?;
            Some(format!(" (the tree pins composable_kernel {})", entry.id()))
        })
        .unwrap_or_default();
    Err(AiterError::CkMissing {
        module: spec.module.name.clone(),
        dir,
        pinned,
    })
}

/// The error for a module's `key` whose (evaluated) `value` cannot be honoured: naming the
/// manifest's line when the manifest gives the key, else AITER's entry.
pub(crate) fn key_error(spec: &AiterModuleSpec, key: &str, value: &str, why: &str) -> AiterError {
    let module = &spec.module;
    match module.lines.get(key) {
        Some(&line) => AiterError::ModuleKey(Box::new(crate::aiter::ModuleKeyError {
            manifest: module.manifest.clone(),
            line,
            module: module.name.clone(),
            key: key.to_string(),
            value: value.to_string(),
            why: why.to_string(),
        })),
        None => AiterError::AiterConfig {
            module: module.name.clone(),
            field: key.to_string(),
            expression: value.to_string(),
            why: why.to_string(),
        },
    }
}

/// The module's recipe from `optCompilerConfig.json`, with the manifest's overrides and the CK
/// filter (the spec's, else the manifest's variants for CK's `-d fwd` and `-d bwd`), its
/// warnings, and whether it is built with composable_kernel (`needs::ck_enabled`).
fn recipe_of(
    spec: &AiterModuleSpec,
    paths: &AiterPaths,
    env: &Env,
) -> Result<(ModuleRecipe, Vec<String>, bool)> {
    let mut recipe = recipe::load(paths, &spec.module.name, &spec.module.recipe, env)?;
    let mut warnings = recipe::apply_overrides(&mut recipe, spec.module, spec.archs);
    // The registry's entry (QoLA's cpp_itfs replacements): after the manifest's overrides, as
    // QoLA applies it, so its generators are neither dropped nor given another receipt.
    if let Some(entry) = spec.registry().entry(&spec.module.name) {
        let generation = recipe::detect_api_generation(spec.root).ok();
        let cx = Context {
            paths,
            api_generation: generation.map(|g| g.name()),
            shipped_dir: &spec.gen_dir.join("qola-registry"),
            env,
        };
        entry.apply(&cx, &mut recipe)?;
    }
    // A source the recipe (or the manifest's `srcs`) names and the tree lacks is an error
    // here, naming it, not a compile failure among thousands.
    if let Some(missing) = recipe.srcs.iter().find(|src| !src.is_file()) {
        return Err(AiterError::AiterConfig {
            module: spec.module.name.clone(),
            field: "srcs".to_string(),
            expression: missing.display().to_string(),
            why: format!(
                "no such file in the AITER tree {}: this AITER does not have it; name the sources this commit has (or pin the AITER the manifest was written for)",
                spec.root.display()
            ),
        });
    }
    let mut filtered = false;
    for cmd in &mut recipe.blob_gen_cmd {
        let filter = match spec.ck_filter {
            Some(filter) => Some(filter),
            None => match recipe::ck_direction(cmd) {
                Some("fwd") => spec.variants.fwd.as_deref(),
                Some("bwd") => spec.variants.bwd.as_deref(),
                _ => None,
            },
        };
        if let Some(filter) = filter {
            // A generator script that defines a `--filter` option takes the filter too.
            let takes_filter = recipe::generator_argv(cmd, spec.gen_dir)
                .first()
                .and_then(|script| std::fs::read_to_string(script).ok())
                .is_some_and(|text| text.contains("\"--filter\""));
            if let Some(with) = recipe::with_ck_filter(cmd, filter, takes_filter) {
                *cmd = with;
                filtered = true;
            }
        }
    }
    if let (Some(filter), false) = (spec.ck_filter, filtered) {
        warnings.push(format!(
            "the CK filter {filter:?} narrows nothing: no generator of {} takes a --filter (QOLA_CK_FILTER_{} or QOLA_CK_FILTER); every instance is built",
            spec.module.name,
            spec.module.name.to_ascii_uppercase()
        ));
    }
    // What the module's own sources ask for (see `needs`): switches, hsa config generators.
    let flags: Vec<String> = recipe
        .flags_extra_cc
        .iter()
        .chain(&recipe.flags_extra_hip)
        .cloned()
        .collect();
    let dirs = includes_of(spec.root, &[], &recipe);
    let ck_enabled = needs::ck_enabled(&flags, env.var("ENABLE_CK")?.as_deref());
    let needs = needs::needs(
        &paths.meta,
        &spec.module.name,
        &recipe.srcs,
        &dirs,
        &flags,
        &recipe.blob_gen_cmd,
        ck_enabled,
    )?;
    recipe.flags_extra_hip.extend(needs.defines);
    recipe.blob_gen_cmd.extend(needs.generators);
    recipe.hsa_kernels = needs.hsa_kernels;
    Ok((recipe, warnings, ck_enabled))
}

/// Runs (or reuses) each of the recipe's code generators into `gen_dir`; their scripts'
/// directories and `optCompilerConfig.json` are the build's inputs.
fn generate(
    spec: &AiterModuleSpec,
    recipe: &ModuleRecipe,
    env: &Env,
    python: &recipe::CheckedPython,
    ck_instances: CkInstances,
) -> Result<Vec<Generated>> {
    let directives = env.directives();
    let gen_root = spec.gen_dir.join(&recipe.name);
    let mut generated = Vec::new();
    directives.rerun_if_changed(&spec.root.join("aiter/jit/optCompilerConfig.json"));
    for (index, cmd) in recipe.blob_gen_cmd.iter().enumerate() {
        // The generator's own tree is its input (Cargo scans a directory recursively).
        let argv = recipe::generator_argv(cmd, spec.gen_dir);
        if let Some(script_dir) = argv.first().and_then(|s| Path::new(s).parent()) {
            directives.rerun_if_changed(script_dir);
        }
        // A file an argument names (a tuned table) is an input too.
        for arg in argv.iter().skip(1).map(Path::new) {
            if arg.is_absolute() && arg.is_file() {
                directives.rerun_if_changed(arg);
            }
        }
        let archs = spec.archs.join(";");
        let run = match (ck_instances, recipe::ck_direction(cmd)) {
            (CkInstances::InBlobDir, Some(_)) => {
                let root = gen_root.join(index.to_string());
                codegen::run_generator(python, cmd, "blob", &root, &archs)
            }
            _ => codegen::run_generator(python, cmd, &index.to_string(), &gen_root, &archs),
        };
        // A generator a registry added: its failure names the registry's line.
        let run = run.map_err(|e| match e {
            AiterError::Codegen {
                command, stderr, ..
            } => AiterError::Codegen {
                command,
                stderr,
                origin: recipe.origins.get(cmd).cloned(),
            },
            other => other,
        });
        generated.push(run?);
    }
    Ok(generated)
}
