//! What a [`HipBuild`] resolves before it looks at its units: the output directory, qola's
//! cache, the compiler, the architectures (probed), the roots and the compile arguments as
//! names, the launcher and its environment, the parallelism, the cache's size.

use std::path::{Path, PathBuf};

use crate::build_script::{Directives, Env, EnvError};
use crate::common::depfile;
use crate::common::hooks::Hooks;
use crate::common::io::io_error;
use crate::common::precedence::Setting;
use crate::compile::HipBuild;
use crate::compile::cache::Invocation;
use crate::compile::cache::ObjectCache;
use crate::compile::launcher::{Compile, Launcher};
use crate::compile::passes::{Layout, LayoutProbe, probe_layout};
use crate::compile::{CompileError, Result};
mod direct;

pub(crate) use crate::compile::cache::Roots;
use crate::compile::toolchain::{HipToolchain, resolve_archs, sorted_archs, validate_archs};
pub(crate) use direct::DirectBuild;

/// Everything a build resolved before looking at its units.
pub(crate) struct Resolved {
    pub out_dir: PathBuf,
    pub cache: PathBuf,
    pub toolchain: HipToolchain,
    pub archs: Vec<String>,
    /// The compiler's identity and the compile arguments after the compiler, with every root
    /// by its name: what runs and what the unit ids hash.
    pub settings: Invocation,
    pub roots: Roots,
    /// The launcher (see `launcher`): decided here, started when something compiles.
    pub launcher: Launcher,
    pub limit: usize,
    pub limit_source: String,
    pub env_memory: Option<u64>,
    pub target: String,
    /// The object cache's size limit (`QOLA_CACHE_MAX_SIZE`).
    pub max_cache_size: u64,
    /// qola's own test hooks (`test-hooks` feature only).
    pub hooks: Hooks,
    /// Whether units sharing their includes get a precompiled header for their host passes.
    pub host_pch: bool,
    /// Whether a build that compiles writes its timings report (`QOLA_TIMINGS`).
    pub timings: bool,
}

impl Resolved {
    /// Resolves `build`'s output directory, cache, compiler, architectures (probed), roots and
    /// arguments, launcher and parallelism.
    pub(crate) fn new(build: &HipBuild, env: &Env) -> Result<Resolved> {
        if build.shared.is_none() && !build.link_flags.is_empty() {
            return Err(CompileError::LinkFlagsOfStaticLibrary {
                flags: build.link_flags.clone(),
            });
        }
        let out_dir = Setting::argument(build.out_dir.clone())
            .environment_path(|| env.var_os("OUT_DIR").map(PathBuf::from))
            .value()
            .ok_or(CompileError::NoOutDir)?;
        std::fs::create_dir_all(&out_dir).map_err(io_error("create", &out_dir))?;
        // Canonical like the sources and headers, so those under OUT_DIR are recognized.
        let out_dir = full_path(&out_dir)?;
        let cache = crate::cache_dir::dir(env, build.cache_dir.clone())?;
        let toolchain =
            HipToolchain::resolve(env, build.toolchain.as_ref(), build.compiler.as_deref())?;
        let roots = Resolved::roots(build, env, &out_dir, &cache)?;
        let target = host_triple();
        let common = Resolved::base_args(build, env, &toolchain, &target, Includes::Separate)?;
        let archs = sorted_archs(resolve_archs(env, &build.archs, &build.manifest_archs)?);
        let mut args: Vec<String> = common[1..].iter().map(|a| roots.rewrite_arg(a)).collect();
        let named: Vec<String> = common[..1].iter().chain(&args).cloned().collect();
        validate_archs(
            &toolchain,
            &common,
            &named,
            &archs,
            Some(&cache),
            &out_dir.join("qola-probe"),
        )?;
        // Debug information names the compile's directory: the links' directory is `.`.
        args.push("-fdebug-compilation-dir=.".to_string());
        args.extend(archs.iter().map(|a| format!("--offload-arch={a}")));
        let words: Vec<String> = Setting::argument(build.launcher.clone())
            .environment(|| env.var("QOLA_COMPILER_LAUNCHER"))?
            .or(String::new)
            .split_whitespace()
            .map(String::from)
            .collect();
        let launcher = Launcher::decide(env, words, roots.dir())?;
        let (limit, limit_source) = job_limit(env, build.jobs)?;
        let env_memory = env
            .parsed::<u64>(
                "QOLA_JOB_MEMORY_MB",
                "a whole number of megabytes, e.g. 1024",
            )?
            .map(|mb| mb << 20);
        let max_cache_size = crate::compile::max_cache_size(env, &cache, build.max_cache_size)?;
        Ok(Resolved {
            out_dir,
            cache,
            settings: Invocation {
                identity: toolchain.identity.clone(),
                args,
            },
            toolchain,
            archs,
            roots,
            launcher,
            limit,
            limit_source,
            env_memory,
            target,
            max_cache_size,
            hooks: Hooks::from_env(|name| env.var(name).ok().flatten()),
            host_pch: build.host_pch,
            timings: Setting::argument(build.timings)
                .environment(|| env.flag("QOLA_TIMINGS").map(Some))?
                .or(|| false),
        })
    }

    /// The build's roots: the crate (`CARGO_MANIFEST_DIR`, in a build script), the output
    /// directory, qola's cache, then those the caller named (which win over a default of the
    /// same name).
    fn roots(build: &HipBuild, env: &Env, out_dir: &Path, cache: &Path) -> Result<Roots> {
        for (name, dir) in &build.roots {
            let word = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !word || name == "qola-roots" {
                return Err(CompileError::InvalidRoot {
                    name: name.clone(),
                    dir: dir.clone(),
                    why: "a root's name is one word of letters, digits, `-` and `_`".to_string(),
                });
            }
        }
        let mut named = Vec::new();
        if build.cargo_metadata
            && let Some(dir) = env.var_os("CARGO_MANIFEST_DIR")
        {
            named.push(("crate".to_string(), PathBuf::from(dir)));
        }
        named.push(("out".to_string(), out_dir.to_path_buf()));
        named.push(("cache".to_string(), cache.to_path_buf()));
        named.extend(build.roots.iter().cloned());
        Ok(Roots::new(out_dir, &named))
    }

    /// The compile command's program and arguments, without architectures, output and source:
    /// in the form `cc` gives (compiler, flags, `-I`, `-D`, then `CXXFLAGS`), built here because
    /// `cc` runs the compiler to detect its family on every build (close to a second with hipcc).
    fn base_args(
        build: &HipBuild,
        env: &Env,
        toolchain: &HipToolchain,
        target: &str,
        includes: Includes,
    ) -> Result<Vec<String>> {
        let mut args = vec![toolchain.path.to_string_lossy().into_owned()];
        args.extend(["-x", "hip", "-fPIC", "-O3"].map(String::from));
        for dir in &build.includes {
            let dir = full_path(dir)?.to_string_lossy().into_owned();
            match includes {
                Includes::Separate => args.extend(["-I".to_string(), dir]),
                Includes::Attached => args.push(format!("-I{dir}")),
            }
        }
        args.extend(build.flags.iter().cloned());
        for (name, value) in &build.defines {
            args.push(match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        }
        args.extend(cxxflags(env, target)?);
        Ok(args)
    }
}

/// How `-I` is written: `-I <dir>` (two arguments: what unit ids have always hashed) or
/// `-I<dir>` (one, for tools that read a recorded command word by word, see `direct`).
#[derive(Debug, Clone, Copy)]
enum Includes {
    Separate,
    Attached,
}

/// `path` as the compiler is given it: canonical when it exists (no `..`, no symlink), else
/// made absolute lexically.
pub(crate) fn full_path(path: &Path) -> Result<PathBuf> {
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
    let names = cxxflags_variables(env, this_machine)?;
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

/// Every variable that adds to a unit's compile command: the `CXXFLAGS` variables and
/// `CC_SHELL_ESCAPED_FLAGS` (a library's key has their values, see `aiter::prebuilt`).
pub(crate) fn flag_variables(env: &Env) -> Result<Vec<String>> {
    let mut names = cxxflags_variables(env, &host_triple())?.to_vec();
    names.push("CC_SHELL_ESCAPED_FLAGS".to_string());
    Ok(names)
}

/// The names of the `CXXFLAGS` variables [`cxxflags`] reads, least specific first.
fn cxxflags_variables(env: &Env, this_machine: &str) -> Result<[String; 4]> {
    let host = env.var("HOST")?.unwrap_or_else(|| this_machine.to_string());
    let target = env.var("TARGET")?.unwrap_or_else(|| host.clone());
    let kind = if target == host { "HOST" } else { "TARGET" };
    Ok([
        "CXXFLAGS".to_string(),
        format!("{kind}_CXXFLAGS"),
        format!("CXXFLAGS_{}", target.replace(['-', '.'], "_")),
        format!("CXXFLAGS_{target}"),
    ])
}

/// The triple `cc`'s archiver is told about: this machine (HIP host code runs where the GPU is).
fn host_triple() -> String {
    format!(
        "{}-unknown-{}-gnu",
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

impl Resolved {
    /// The compile command as it runs (in the links' directory): the compiler, then the
    /// arguments with roots by name.
    pub(crate) fn command(&self) -> Vec<String> {
        std::iter::once(self.toolchain.path.to_string_lossy().into_owned())
            .chain(self.settings.args.iter().cloned())
            .collect()
    }

    /// The object cache as this build uses it (see `cache`), saying what it must through
    /// `directives`.
    pub(crate) fn object_cache<'d>(&self, directives: &'d Directives) -> ObjectCache<'d> {
        ObjectCache::open(
            self.cache.join(crate::cache_dir::OBJECTS),
            Some(&self.out_dir),
            self.hooks.clone(),
            directives,
        )
    }

    /// Why no unit of this build is split into passes, when none can be: a launcher (it caches
    /// and sends whole compiles), or one architecture and no shared includes (nothing to split).
    pub(crate) fn never_split(&self) -> Option<&'static str> {
        if self.launcher.wraps() {
            return Some(
                "a compiler launcher caches and sends whole compiles, so units are not split",
            );
        }
        (self.archs.len() <= 1 && !self.host_pch)
            .then_some("one architecture and no shared precompiled header: nothing to split")
    }

    /// How the driver bundles device code objects (see `passes::bundle`), when this build
    /// splits units into passes: with no launcher (see `passes`) and a driver that says how
    /// (its `-###` command for a tiny kernel, and the fat binary of that kernel compiled for the
    /// build's architectures; asked once per compiler and arguments and kept in qola's cache).
    /// The links' directory exists; `scratch` is the build's.
    pub(crate) fn bundle_layout(&self, scratch: &Path) -> Option<Layout> {
        if self.never_split().is_some() {
            return None;
        }
        let name = |p: &Path| self.roots.name(p);
        probe_layout(&LayoutProbe {
            command: &self.command(),
            archs: &self.archs,
            cache: &self.cache,
            scratch,
            links: self.roots.dir(),
            name: &name,
            env: &self.toolchain.env,
        })
    }

    /// Asks the launcher whether compiles go elsewhere (a compile farm that is up; see
    /// `launcher`). Only builds with something to compile ask: a no-op build runs nothing and
    /// writes nothing.
    pub(crate) fn ask_launcher(&mut self, env: &Env) -> Result<bool> {
        let command = self.command();
        self.launcher.ask(
            env,
            &Compile {
                is_clang: self.toolchain.is_clang,
                command: &command,
                env: &self.toolchain.env,
                cache: &self.cache,
                work: &self.out_dir.join("qola-farm"),
            },
        )?;
        Ok(self.launcher.distributes())
    }

    /// The full command compiling `source` to `object` with its depfile (all absolute), the
    /// unit's own flags `extra` and its `cuid` (see `passes`), with every root by name: through
    /// the farm (sccache and the clang driver with hipcc's expanded flags) when it is up.
    pub(crate) fn compile_command(
        &self,
        extra: &[String],
        source: &Path,
        object: &Path,
        depfile: &Path,
        cuid: &str,
    ) -> Vec<String> {
        let mut argv = self.launcher.wrap(self.command());
        argv.extend(extra.iter().cloned());
        argv.push(cuid.to_string());
        let mut compiled = source.to_path_buf();
        if let Some((link, dir)) = self.launcher.source_alias(source, &self.out_dir) {
            argv.extend(["-iquote".to_string(), self.roots.name(&dir)]);
            compiled = link;
        }
        let name = |path: &Path| self.roots.name(path);
        argv.extend(["-MD".to_string(), "-MF".to_string(), name(depfile)]);
        argv.extend(["-o".to_string(), name(object)]);
        argv.extend(["-c".to_string(), name(&compiled)]);
        argv
    }
}

/// How many compiles may run at once, and which setting said so, by the one precedence: the
/// argument (`.jobs(n)`, `qola build -j N`), then `MAX_JOBS` (PyTorch's and AITER's name, as TE's
/// install docs use it), then `NUM_JOBS` (Cargo's `-j`, in a build script), then the CPUs. Cargo's
/// jobserver and the memory cap (`run::memory`) can only lower it. `MAX_JOBS` must be a whole
/// number of at least 1: AITER keeps 0 (ninja's "no limit") and a number it cannot read falls
/// back to its default; qola names the variable and its value instead.
pub(crate) fn job_limit(env: &Env, jobs: Option<usize>) -> Result<(usize, String)> {
    Ok(Setting::argument(jobs.map(|n| (n, format!(".jobs({n})"))))
        .environment(|| {
            let Some(value) = env.var("MAX_JOBS")?.filter(|v| !v.trim().is_empty()) else {
                return Ok(None);
            };
            match value.trim().parse::<usize>() {
                Ok(n) if n >= 1 => Ok(Some((n, format!("MAX_JOBS={n}")))),
                _ => Err(EnvError {
                    name: "MAX_JOBS".to_string(),
                    value,
                    expected:
                        "a whole number of compiles at once, 1 or more (unset it for one per CPU)"
                            .to_string(),
                }),
            }
        })?
        .environment_path(|| {
            let n: usize = env.var("NUM_JOBS").ok().flatten()?.parse().ok()?;
            Some((n, format!("NUM_JOBS={n}")))
        })
        .or(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (n, format!("{n} CPUs"))
        }))
}
