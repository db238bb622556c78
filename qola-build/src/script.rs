//! One build script's context, as cc-rs keeps one in its builder: Cargo's directives (each
//! printed once for the whole script) and the environment read through them (each variable
//! tracked with `cargo:rerun-if-env-changed`), made once by [`BuildScript::new`] and handed to
//! the preparation, AITER's modules and the compiles:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let script = qola_build::BuildScript::new();
//! let prepared = script.prepare(&qola_build::Prepare::new())?;
//! let archs = script.gpu_archs(&[])?;
//! let mut build = qola_build::HipBuild::new();
//! build.file("kernels/fwd.hip").include(prepared.root.join("csrc/include"));
//! for arch in &archs {
//!     build.arch(arch);
//! }
//! script.compile(&build, "kernels")?;
//! # Ok(())
//! # }
//! ```
//!
//! The free functions ([`crate::prepare_aiter`], [`crate::cache_dir`], [`crate::gpu_archs`],
//! [`HipBuild::try_compile`], ...) each make a context of their own: the same directives, one
//! context per call.

use std::path::PathBuf;

use crate::aiter::{AiterLibrary, AiterModuleSpec, Api};
use crate::build_script::{Directives, Env};
use crate::compile::{CompileReport, HipBuild};
use crate::error::{AiterError, CompileError, Result};
use crate::prepare::{Preparation, Prepare};

/// A build script's context (see the module docs).
#[derive(Debug)]
pub struct BuildScript {
    directives: Directives,
}

impl Default for BuildScript {
    fn default() -> Self {
        BuildScript::new()
    }
}

impl BuildScript {
    /// The context of this build script: Cargo's directives on standard output.
    pub fn new() -> BuildScript {
        BuildScript {
            directives: Directives::new(true),
        }
    }

    fn env(&self) -> Env<'_> {
        Env::new(&self.directives)
    }

    /// An environment variable, tracked (`cargo:rerun-if-env-changed`); unset and empty are
    /// both `None`.
    pub fn var(&self, name: &str) -> Result<Option<String>> {
        Ok(self.env().var(name)?)
    }

    /// qola's cache directory (see [`crate::cache_dir`]).
    pub fn cache_dir(&self) -> Result<PathBuf> {
        Ok(crate::cache_dir::dir(&self.env(), None)?)
    }

    /// The GPU architectures to compile for (see [`crate::gpu_archs`]).
    pub fn gpu_archs(&self, manifest_archs: &[String]) -> Result<Vec<String>> {
        Ok(crate::compile::resolve_archs(
            &self.env(),
            &[],
            manifest_archs,
        )?)
    }

    /// The CK filter of `module` (see [`crate::aiter::ck_filter`]).
    pub fn ck_filter(&self, module: &str) -> Result<Option<String>> {
        Ok(crate::aiter::ck_filter_in(&self.env(), module, None)?)
    }

    /// Prepares the tree `prepare` describes (see [`Prepare::try_prepare`]).
    pub fn prepare(&self, prepare: &Prepare) -> Result<Preparation> {
        Ok(prepare.try_prepare_in(&self.env())?)
    }

    /// The library of `spec`'s module with `api` (see [`crate::aiter::library`]).
    pub fn library(
        &self,
        spec: &AiterModuleSpec,
        api: &Api,
    ) -> std::result::Result<AiterLibrary, AiterError> {
        crate::aiter::library_in(
            spec,
            api,
            &self.env(),
            crate::aiter::CkInstances::InGeneratorDir,
            crate::aiter::Refusals::Stop,
        )
    }

    /// Compiles `build` into `lib<name>.a` (see [`HipBuild::try_compile`]).
    pub fn compile(&self, build: &HipBuild, name: &str) -> Result<CompileReport> {
        Ok(build.compile_in(name, &self.env())?)
    }

    /// Compiles an AITER module's library (see [`AiterLibrary::try_compile`]).
    pub fn compile_library(
        &self,
        library: &mut AiterLibrary,
        name: &str,
    ) -> std::result::Result<CompileReport, CompileError> {
        library.compile_in(name, &self.env())
    }
}
