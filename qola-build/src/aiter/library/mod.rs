//! One AITER module as a library, assembled in one place for every caller: qola-sys's build
//! script (qola's C API, a static library), `qola build` (QoLA's C++ API, a shared library) and
//! `qola plan` (the commands `qola build` would run). Each gets the module's recipe and flags
//! (see [`crate::aiter::prepare_module`], with the registry's entry applied), the hsa code objects of every
//! architecture embedded (`AITER_EMBEDDED_HSA`, see [`embed_hsa`]), and the API wrapper with
//! its exports (QoLA's C++ API: the registry's `add_srcs` and version script, see
//! [`crate::aiter::registry`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::aiter::Result;
use crate::aiter::module::CkInstances;
use crate::aiter::module::{AiterModule, AiterModuleSpec, Refusals, prepare_module_in};
use crate::aiter::module::{EmbeddedHsa, HsaForm, absent_hsa, embed_hsa, embed_hsa_map};
use crate::aiter::recipe::AiterPaths;
use crate::aiter::recipe::{ApiGeneration, TreeApi, detect_api_generation, read_api};
use crate::aiter::registry::{self, Context, Registry};
use crate::build_script::{Directives, Env};
use crate::common::io::write_if_changed;

/// The API the library offers.
#[derive(Debug, Clone)]
pub enum Api {
    /// qola's C API (qola-sys): the wrapper sources, the directory of their header, and the C
    /// symbols the static library exports.
    C {
        /// Wrapper sources.
        sources: Vec<PathBuf>,
        /// The include directory of the C API header.
        include: PathBuf,
        /// The exported symbols.
        exports: Vec<String>,
    },
    /// QoLA's C++ API (`qola::<ns>::mha_fwd`, ...) of the generation the tree's headers show
    /// ([`ApiGeneration`]): the public headers and `qola_config.h` are written into `include`,
    /// the module's wrapper (when qola has one) is compiled in, and the shared library exports
    /// `qola::*` only.
    Cpp {
        /// The namespace (`[qola] namespace`).
        namespace: Option<String>,
        /// Where the public headers go (`<output-dir>/include`).
        include: PathBuf,
    },
}

/// A module ready to compile and link.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AiterLibrary {
    /// The module: recipe, generated code, flags.
    pub module: AiterModule,
    /// The embedded code objects.
    pub hsa: EmbeddedHsa,
    /// Whether the library carries qola's API wrapper for this module.
    pub wrapped: bool,
    /// The build: sources, includes, flags, defines, architectures, exports, and for the C++
    /// API the version script (call [`crate::compile::HipBuild::shared`] for the file).
    pub build: crate::compile::HipBuild,
}

impl AiterLibrary {
    /// Compiles and links the library as [`crate::compile::HipBuild::try_compile`] does; a
    /// batch of composable_kernel instances that fails is compiled again as its instances, one
    /// unit each (said once, as a warning), so an error names the instance at fault.
    pub fn try_compile(
        &mut self,
        name: &str,
    ) -> std::result::Result<crate::compile::CompileReport, crate::compile::CompileError> {
        let directives = Directives::new(self.build.cargo_metadata_on());
        self.compile_in(name, &Env::new(&directives))
    }

    /// [`AiterLibrary::try_compile`] in the context `env`.
    pub(crate) fn compile_in(
        &mut self,
        name: &str,
        env: &Env,
    ) -> std::result::Result<crate::compile::CompileReport, crate::compile::CompileError> {
        loop {
            match self.build.compile_in(name, env) {
                Err(crate::compile::CompileError::Compile {
                    source_file,
                    stderr,
                    ..
                }) if let Some(at) = self
                    .module
                    .batches
                    .iter()
                    .position(|b| b.file.file_name() == source_file.file_name()) =>
                {
                    let batch = self.module.batches.remove(at);
                    // The compiler's first error, else the first thing it said.
                    let first = stderr
                        .lines()
                        .find(|l| l.contains("error"))
                        .or_else(|| stderr.lines().find(|l| !l.trim().is_empty()))
                        .unwrap_or("it said nothing")
                        .trim();
                    env.directives().warning(&format!(
                        "{name}: the batch {} did not compile ({first}); its {} instances are compiled one unit each",
                        batch.file.display(),
                        batch.members.len()
                    ));
                    self.build.replace_file(&batch.file, &batch.members);
                }
                other => return other,
            }
        }
    }
}

/// Assembles the library of `spec`'s module with `api` (see the module docs). Generated code,
/// the hsa header, wrappers and the version script go under `spec.gen_dir`; each file is
/// rewritten only when its content changes.
pub fn library(spec: &AiterModuleSpec, api: &Api) -> Result<AiterLibrary> {
    let directives = crate::build_script::Directives::new(spec.cargo_metadata);
    library_in(
        spec,
        api,
        &Env::new(&directives),
        CkInstances::InGeneratorDir,
        Refusals::Stop,
    )
}

/// [`library`] in the context `env` of the build that asks, CK's instances generated where
/// `ck_instances` says, the compiler's refusals dealt with as `refusals` says.
pub(crate) fn library_in(
    spec: &AiterModuleSpec,
    api: &Api,
    env: &Env,
    ck_instances: CkInstances,
    refusals: Refusals,
) -> Result<AiterLibrary> {
    let module = prepare_module_in(spec, env, ck_instances, refusals)?;
    let work = spec.gen_dir.join(&module.recipe.name);
    // The manifest's, else the kernels the module's sources include the configs of, else the
    // ones qola knows the module loads (trees that generate their API sources, AITER 05a0d1f).
    let subdirs: Vec<String> = match &spec.module.hsa_subdirs {
        // Named by the manifest: each must be a kernel set of the tree (one named for an
        // AITER that has it, built from one that has not, would embed nothing).
        Some(subdirs) => match absent_hsa(&module.meta, spec.archs, subdirs)[..] {
            [] => subdirs.clone(),
            [first, ..] => {
                return Err(crate::aiter::AiterError::AiterConfig {
                    module: spec.module.name.clone(),
                    field: "hsa_subdirs".to_string(),
                    expression: first.to_string(),
                    why: format!(
                        "no hsa/<arch>/{first}/ in {} for {}: this AITER has no such kernels; drop it from the manifest's hsa_subdirs, or pin an AITER that has them",
                        module.meta.display(),
                        spec.archs.join(", ")
                    ),
                });
            }
        },
        None if !module.recipe.hsa_kernels.is_empty() => module.recipe.hsa_kernels.clone(),
        None => spec
            .registry()
            .entry(&spec.module.name)
            .and_then(|e| e.hsa_subdirs.clone())
            .unwrap_or_default(),
    };
    for arch in spec.archs {
        for subdir in &subdirs {
            let dir = module.meta.join("hsa").join(arch).join(subdir);
            if dir.is_dir() {
                env.directives().rerun_if_changed(&dir);
            }
        }
    }
    let hsa_dir = work.join("hsa");
    let hsa = match HsaForm::of(&module.meta) {
        HsaForm::TreeMap => embed_hsa_map(
            &module.meta,
            spec.archs,
            &subdirs,
            &hsa_dir,
            &module.recipe.name,
        )?,
        HsaForm::QolaLookup => embed_hsa(&module.meta, spec.archs, &subdirs, &hsa_dir)?,
    };
    let mut build = module.hip_build();
    build
        .include(&hsa_dir)
        .define(&hsa.define.0, hsa.define.1.as_deref());
    for arch in spec.archs {
        build.arch(arch);
    }
    let wrapped = match api {
        Api::C {
            sources,
            include,
            exports,
        } => {
            // qola's C wrappers call AITER's API as 05a0d1f declares it.
            if detect_api_generation(spec.root)? != ApiGeneration::Parameters {
                return Err(crate::aiter::AiterError::ApiGeneration {
                    header: spec.root.join("csrc/include/mha_fwd.h"),
                    why: "the options are inside aiter::mha_fwd_args, and qola-sys's C API wrappers are written for AITER 05a0d1f's parameters: build this tree with `qola build` (QoLA's C++ API)".to_string(),
                });
            }
            // A static library has no link of its own (the crate's final link has).
            if !module.recipe.extra_ldflags.is_empty() {
                return Err(crate::aiter::module::key_error(
                    spec,
                    "extra_ldflags",
                    &format!("{:?}", module.recipe.extra_ldflags),
                    "qola-sys links this module into a static library, which has no link of its own: give these flags to your crate's link (cargo:rustc-link-arg in its build script) and remove the key",
                ));
            }
            // The API's headers are the wrappers' alone: on the wrappers only, so every other
            // unit is the same command, and the same object, through any front door.
            only_for(&mut build, sources, include);
            for symbol in exports {
                build.export(symbol);
            }
            true
        }
        Api::Cpp { namespace, include } => {
            let api = CppApi::resolve_in(spec.registry(), spec.root, spec.gen_dir, env)?;
            api.write_headers(include, namespace.as_deref())?;
            for flag in &module.recipe.extra_ldflags {
                build.link_flag(flag);
            }
            let name = &spec.module.name;
            if let Some(dir) = api.user_dirs.get(name) {
                // The user's registry: its files by name, wherever it is.
                build.root("registry", dir);
            }
            if let Some(script) = api.version_scripts.get(name) {
                build.version_script(script);
            }
            let sources = api.wrappers.get(name).cloned().unwrap_or_default();
            only_for(&mut build, &sources, include);
            !sources.is_empty()
        }
    };
    Ok(AiterLibrary {
        module,
        hsa,
        wrapped,
        build,
    })
}

/// Adds `sources`, each with the include directory `include` as a flag of its own: the API's
/// headers are what only the wrappers include, so a unit's command (and key) carries it only
/// where it is read.
fn only_for(build: &mut crate::compile::HipBuild, sources: &[PathBuf], include: &Path) {
    for source in sources {
        build.file(source).file_include(source, include);
    }
}

/// qola's C++ API for a tree (see [`crate::aiter::registry`]): qola's registry files written
/// for the tree's attention API, and what the registry's entries name, resolved.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CppApi {
    /// Every public header (`[defaults]` and every entry's), installed whichever modules are
    /// built, as QoLA installs its fixed list.
    pub headers: Vec<PathBuf>,
    /// Each module's wrapper sources (`add_srcs`).
    pub wrappers: BTreeMap<String, Vec<PathBuf>>,
    /// Each module's linker version script.
    pub version_scripts: BTreeMap<String, PathBuf>,
    /// The directory of each module's user registry (a root of its build: its files by name).
    pub user_dirs: BTreeMap<String, PathBuf>,
}

impl CppApi {
    /// The API of `registry` for the tree at `root`; qola's own files are written under
    /// `<gen_dir>/qola-registry` (rewritten only when their content changes). A tree without
    /// AITER's attention headers has no `{api_generation}`.
    pub fn resolve(registry: &Registry, root: &Path, gen_dir: &Path) -> Result<CppApi> {
        let directives = Directives::new(false);
        CppApi::resolve_in(registry, root, gen_dir, &Env::new(&directives))
    }

    /// [`CppApi::resolve`] in the context `env` of the build that asks.
    pub(crate) fn resolve_in(
        registry: &Registry,
        root: &Path,
        gen_dir: &Path,
        env: &Env,
    ) -> Result<CppApi> {
        let api = match read_api(root) {
            Ok(api) => Some(api),
            Err(_) if !root.join("csrc/include/mha_fwd.h").exists() => None,
            Err(e) => return Err(e),
        };
        let shipped_dir = gen_dir.join("qola-registry");
        registry::materialize(
            &shipped_dir,
            api.as_ref().unwrap_or(&TreeApi {
                generation: ApiGeneration::Parameters,
                forward_extras: Vec::new(),
            }),
        )?;
        let paths = AiterPaths::new(root, "", env)?;
        let cx = Context {
            paths: &paths,
            api_generation: api.as_ref().map(|a| a.generation.name()),
            shipped_dir: &shipped_dir,
            env,
        };
        let mut out = CppApi {
            headers: registry.public_headers(&cx)?,
            wrappers: BTreeMap::new(),
            version_scripts: BTreeMap::new(),
            user_dirs: BTreeMap::new(),
        };
        for module in registry.modules() {
            let entry = registry.entry(module).expect("a module of the registry");
            out.wrappers
                .insert(module.to_string(), entry.paths(&cx, "add_srcs")?);
            if let Some(script) = entry.version_script_path(&cx)? {
                out.version_scripts.insert(module.to_string(), script);
            }
            if let registry::Base::Dir(dir) = &entry.base {
                out.user_dirs.insert(module.to_string(), dir.clone());
            }
        }
        Ok(out)
    }

    /// The file names [`CppApi::write_headers`] writes.
    pub fn header_names(&self) -> impl Iterator<Item = String> + '_ {
        self.headers
            .iter()
            .map(|h| {
                h.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .chain(std::iter::once("qola_config.h".to_string()))
    }

    /// Writes every public header and `qola_config.h` with `namespace` into `dir` (unchanged
    /// files are not touched).
    pub fn write_headers(&self, dir: &Path, namespace: Option<&str>) -> Result<()> {
        for header in &self.headers {
            let text =
                std::fs::read(header).map_err(crate::common::io::io_error("read", header))?;
            let name = header.file_name().unwrap_or_default();
            write_if_changed(&dir.join(name), &text)?;
        }
        write_if_changed(
            &dir.join("qola_config.h"),
            registry::config_header(namespace).as_bytes(),
        )?;
        Ok(())
    }
}
