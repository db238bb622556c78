//! A build as plain compiler calls, for a tool that stands in for the compiler and records each
//! call to replay it somewhere else (ck-jit's interceptor, see `aiter::ck_jit`): one
//! `-c <source> -o <object>` per unit, every path in full and `-I` attached to its directory,
//! and nothing of qola's own pipeline: no roots (a recorded `-I aiter/...` would name nothing
//! where it is replayed), no depfile (`-MD -MF` would be replayed into a directory that is not
//! there), no `-cuid` of its own, no split passes, no precompiled header, no launcher, no cache.

use std::path::Path;

use crate::build_script::Env;
use crate::compile::resolve::{Includes, Resolved, full_path, host_triple};
use crate::compile::toolchain::{HipToolchain, resolve_archs, sorted_archs};
use crate::compile::{HipBuild, Result};

/// [`HipBuild`]'s units as plain compiler calls (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct DirectBuild {
    /// The arguments after the compiler, before a unit's own: `cc`'s form (`-x hip -fPIC -O3`,
    /// `-I<dir>`, flags, `-D`, `CXXFLAGS`), then `--offload-arch=<arch>` for each architecture.
    pub args: Vec<String>,
    /// The architectures, resolved as the build resolves them.
    pub archs: Vec<String>,
    /// The compiler the build identified (what runs the probes; the caller may run the calls
    /// through another program).
    pub toolchain: HipToolchain,
}

impl DirectBuild {
    /// `build`'s compile arguments with every path in full.
    pub(crate) fn new(build: &HipBuild, env: &Env) -> Result<DirectBuild> {
        let toolchain =
            HipToolchain::resolve(env, build.toolchain.as_ref(), build.compiler.as_deref())?;
        let common =
            Resolved::base_args(build, env, &toolchain, &host_triple(), Includes::Attached)?;
        let archs = sorted_archs(resolve_archs(env, &build.archs, &build.manifest_archs)?);
        let mut args: Vec<String> = common[1..].to_vec();
        args.extend(archs.iter().map(|a| format!("--offload-arch={a}")));
        Ok(DirectBuild {
            args,
            archs,
            toolchain,
        })
    }

    /// The arguments compiling `source` (with its own `flags`) into `object`.
    pub(crate) fn compile_args(
        &self,
        source: &Path,
        flags: &[String],
        object: &Path,
    ) -> Result<Vec<String>> {
        let mut args = self.args.clone();
        args.extend(flags.iter().cloned());
        args.push("-c".to_string());
        args.push(full_path(source)?.to_string_lossy().into_owned());
        args.push("-o".to_string());
        args.push(object.to_string_lossy().into_owned());
        Ok(args)
    }
}
