//! What a `qola build` resolves before its modules are built: the options it was given, then
//! the manifest, the settings, the architectures, the compiler, the registry and ck-jit (all
//! before the tree), the tree (prepared, or taken as it is) and what the tree needs of ROCm, and
//! each module's library key.

use std::path::{Path, PathBuf};

use super::ck_jit::CkJit;
use super::select::Selected;
use crate::aiter::Result;
use crate::aiter::module::ck_filter_in;
use crate::aiter::prebuilt::{KeyContext, LibraryKey, interpreter_identity};
use crate::aiter::recipe::{AiterPaths, aiter_gfx, check_rocm_needs, generator_python};
use crate::aiter::registry::Registry;
use crate::build_script::Env;
use crate::common::precedence::Setting;
use crate::compile::HipToolchain;
use crate::manifest::{BuildMode, Manifest, ManifestError, VariantFilters};
use crate::prepare::{Prepare, Settings};

/// What the caller of a build asked for, beside the preparation and the output directory (see
/// the setters of [`super::OutputBuild`]).
#[derive(Debug, Clone, Default)]
pub(super) struct BuildOptions {
    pub archs: Vec<String>,
    pub mode: Option<BuildMode>,
    pub groups: Vec<String>,
    pub ck_filter: Option<String>,
    pub skip_checkout: bool,
    pub verbose: bool,
    pub timings: Option<bool>,
    pub require_rocm: bool,
    pub registry: Option<PathBuf>,
}

/// Everything resolved before the modules are built; all of it but `root` and the
/// preparation's warnings before the tree is prepared.
pub(super) struct Inputs {
    /// The preparation these settings are for.
    pub prepare: Prepare,
    pub settings: Settings,
    pub manifest: Manifest,
    /// The compiler, identified once for every module.
    pub toolchain: HipToolchain,
    pub root: PathBuf,
    pub archs: Vec<String>,
    pub cache: PathBuf,
    pub namespace: Option<String>,
    pub variants: VariantFilters,
    /// What the compiler's version warns about.
    pub warnings: Vec<String>,
    /// qola's registry with the user's over it.
    pub registry: Registry,
    /// The user's registry, when one is given.
    pub user_registry: Option<PathBuf>,
    /// The ck-jit run the build is under (see [`super::ck_jit`]).
    pub ck_jit: Option<CkJit>,
}

impl Inputs {
    /// Resolves the manifest, the settings, the architectures, the compiler and the registry:
    /// everything but the tree, which [`Inputs::prepare_tree`] prepares.
    pub(super) fn resolve(env: &Env, prepare: &Prepare, options: &BuildOptions) -> Result<Inputs> {
        let mut prepare = prepare.clone();
        prepare.cargo_metadata(false);
        if let Some(dir) = env.var_os("QOLA_AITER_SOURCE_DIR") {
            prepare.root(PathBuf::from(dir)).skip(true);
        }
        if options.skip_checkout {
            prepare.skip(true);
        }
        // One resolution of the settings, one read of the manifest, for the whole build.
        let settings = prepare.settings(env)?;
        if settings.manifest_path.is_none() {
            return Err(ManifestError::Missing.into());
        }
        let manifest = settings.manifest.clone();
        let archs =
            crate::compile::resolve_archs(env, &options.archs, &manifest.build.architectures)?;
        let cache = settings.cache.clone().ok_or(crate::cache_dir::NoCacheDir)?;
        let namespace = manifest.namespace().map(String::from);
        let variants = manifest.variant_filters()?;
        // Under ck-jit, the real compiler: `$ROCM_PATH/bin/hipcc` is its interceptor.
        let ck_jit = CkJit::detect(env)?;
        let toolchain = match &ck_jit {
            Some(ck_jit) => ck_jit.toolchain()?,
            None => HipToolchain::find(env)?,
        };
        let user_registry = Setting::argument(options.registry.clone())
            .environment_path(|| env.var_os("QOLA_REGISTRY").map(PathBuf::from))
            .manifest(|| {
                let dir = manifest.path.parent().unwrap_or(Path::new("."));
                manifest.qola.registry.as_ref().map(|p| dir.join(p))
            })
            .value();
        let registry = Registry::with_user(user_registry.as_deref())?;
        // `[qola] rocm_versions` against the compiler: an error with --require-rocm, else a
        // warning.
        let mut warnings = Vec::new();
        match crate::aiter::recipe::rocm_versions_mismatch(&manifest, &toolchain) {
            None => {}
            Some(mismatch) if options.require_rocm => return Err(mismatch),
            Some(mismatch) => warnings.push(format!(
                "{mismatch}; building with it anyway, as QoLA does (`[qola] rocm_versions` is informational unless --require-rocm)"
            )),
        }
        Ok(Inputs {
            root: settings.root.clone(),
            prepare,
            settings,
            manifest,
            toolchain,
            archs,
            cache,
            namespace,
            variants,
            warnings,
            registry,
            user_registry,
            ck_jit,
        })
    }

    /// Prepares the tree (or takes it as it is): its root into `self`. Returns the
    /// preparation's warnings, which it has said already (through `env`'s directives).
    pub(super) fn prepare_tree(&mut self, env: &Env) -> Result<Vec<String>> {
        let prepared = self.prepare.prepare_with(&self.settings, env)?;
        self.root = prepared.root;
        Ok(prepared.warnings)
    }

    /// What the prepared tree needs of ROCm, against the compiler: a ROCm too old for the tree
    /// stops the build before anything is written.
    pub(super) fn check_rocm_needs(&self, env: &Env) -> Result<()> {
        let arch = aiter_gfx(&self.archs);
        let paths = AiterPaths::new(&self.root, arch, env)?;
        check_rocm_needs(
            &paths.meta,
            &self.toolchain,
            arch,
            &self.cache,
            &self.cache.join(crate::cache_dir::PROBES).join("scratch"),
        )
    }

    /// Each selected module's library key (see [`crate::aiter::prebuilt`]), computed without
    /// the tree.
    pub(super) fn library_keys(
        &self,
        env: &Env,
        selected: &[Selected],
        options: &BuildOptions,
    ) -> Result<Vec<LibraryKey>> {
        let series = crate::prepare::load_series(&self.settings.series)?;
        let python = generator_python(env)?;
        let interpreter = interpreter_identity(&python)?;
        let cx = KeyContext {
            commit: self.settings.commit.as_deref(),
            series: &series,
            not_prepared: self.settings.skip.then_some(
                "the tree is used as it is (--skip-checkout, QOLA_SKIP_PREPARE or QOLA_AITER_SOURCE_DIR): qola did not prepare it",
            ),
            user_registry: self.user_registry.as_deref(),
            namespace: self.namespace.as_deref(),
            archs: &self.archs,
            variants: &self.variants,
            toolchain: &self.toolchain,
            interpreter: &interpreter,
        };
        selected
            .iter()
            .map(|s| {
                let mode = s.module.mode.or(options.mode).or(self.manifest.build.mode);
                let filter = ck_filter_in(env, &s.module.name, options.ck_filter.clone())?;
                cx.key(env, &s.module, mode, filter.as_deref())
            })
            .collect()
    }
}
