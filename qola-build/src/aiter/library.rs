//! One AITER module as a library, assembled in one place for every caller: qola-sys's build
//! script (qola's C API, a static library), `qola build` (QoLA's C++ API, a shared library) and
//! `qola plan` (the commands `qola build` would run). Each gets the module's recipe and flags
//! (see [`prepare_module`]), the hsa code objects of every architecture embedded
//! (`AITER_EMBEDDED_HSA`, see [`embed_hsa`]), and the API wrapper with its exports.

use std::path::{Path, PathBuf};

use crate::aiter::api_generation::{
    ApiGeneration, TreeApi, detect as detect_api_generation, read_api,
};
use crate::aiter::error::Result;
use crate::aiter::hsa::{EmbeddedHsa, embed_hsa};
use crate::aiter::module::{AiterModule, AiterModuleSpec, prepare_module};
use crate::aiter::registry;
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

/// Assembles the library of `spec`'s module with `api` (see the module docs). Generated code,
/// the hsa header, wrappers and the version script go under `spec.gen_dir`; each file is
/// rewritten only when its content changes.
pub fn library(spec: &AiterModuleSpec, api: &Api) -> Result<AiterLibrary> {
    let module = prepare_module(spec)?;
    let work = spec.gen_dir.join(&module.recipe.name);
    // The manifest's, else the kernels the module's sources include the configs of, else the
    // ones qola knows the module loads (trees that generate their API sources, AITER 05a0d1f).
    let subdirs: Vec<String> = match &spec.module.hsa_subdirs {
        // Named by the manifest: each must be a kernel set of the tree (one named for an
        // AITER that has it, built from one that has not, would embed nothing).
        Some(subdirs) => match crate::aiter::hsa::absent(spec.root, spec.archs, subdirs)[..] {
            [] => subdirs.clone(),
            [first, ..] => {
                return Err(crate::aiter::error::AiterError::AiterConfig {
                    module: spec.module.name.clone(),
                    field: "hsa_subdirs".to_string(),
                    expression: first.to_string(),
                    why: format!(
                        "no hsa/<arch>/{first}/ in {} for {}: this AITER has no such kernels; drop it from the manifest's hsa_subdirs, or pin an AITER that has them",
                        spec.root.display(),
                        spec.archs.join(", ")
                    ),
                }.into());
            }
        },
        None if !module.recipe.hsa_kernels.is_empty() => module.recipe.hsa_kernels.clone(),
        None => registry::default_hsa_subdirs(&spec.module.name)
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let directives = crate::build_script::Directives::new(spec.cargo_metadata);
    for arch in spec.archs {
        for subdir in &subdirs {
            let dir = spec.root.join("hsa").join(arch).join(subdir);
            if dir.is_dir() {
                directives.rerun_if_changed(&dir);
            }
        }
    }
    let hsa = embed_hsa(spec.root, spec.archs, &subdirs, &work.join("hsa"))?;
    let mut build = module.hip_build();
    build
        .include(work.join("hsa"))
        .define("AITER_EMBEDDED_HSA", None);
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
                return Err(crate::aiter::error::AiterError::ApiGeneration {
                    header: spec.root.join("csrc/include/mha_fwd.h"),
                    why: "the options are inside aiter::mha_fwd_args, and qola-sys's C API wrappers are written for AITER 05a0d1f's parameters: build this tree with `qola build` (QoLA's C++ API)".to_string(),
                }.into());
            }
            build.files(sources).include(include);
            for symbol in exports {
                build.export(symbol);
            }
            true
        }
        Api::Cpp { namespace, include } => {
            let api = read_api(spec.root)?;
            write_public_headers(include, namespace.as_deref(), &api)?;
            build.include(include);
            let wrapper = registry::cpp_wrapper(&spec.module.name, &api);
            let wrapped = wrapper.is_some();
            if let Some((file, text)) = wrapper {
                let source = work.join("qola-api").join(file);
                write_if_changed(&source, text.as_bytes())?;
                build.file(source);
                let script = work.join("qola-exports.map");
                write_if_changed(&script, registry::version_script().as_bytes())?;
                build.version_script(script);
            }
            wrapped
        }
    };
    Ok(AiterLibrary {
        module,
        hsa,
        wrapped,
        build,
    })
}

/// Writes the C++ API's public headers for a tree whose API is `api` and `qola_config.h` into
/// `dir` (unchanged files are not touched).
pub fn write_public_headers(dir: &Path, namespace: Option<&str>, api: &TreeApi) -> Result<()> {
    for (name, text) in registry::public_headers(api) {
        write_if_changed(&dir.join(name), text.as_bytes())?;
    }
    write_if_changed(
        &dir.join("qola_config.h"),
        registry::config_header(namespace).as_bytes(),
    )?;
    Ok(())
}
