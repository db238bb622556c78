//! What a [`HipBuild`] resolves before it looks at its units: the output directory, qola's
//! cache, the compiler, the architectures (probed), the roots and the compile arguments as
//! names, the launcher and its environment, the parallelism, the cache's size.

use std::path::{Path, PathBuf};

use crate::build_script::{Env, EnvError};
use crate::compile::error::{CompileError, Result, io_error};
use crate::compile::roots::Roots;
use crate::compile::toolchain::HipToolchain;
use crate::compile::{HipBuild, archs, depfile, farm};

/// Everything a build resolved before looking at its units.
pub(crate) struct Resolved {
    pub out_dir: PathBuf,
    pub cache: PathBuf,
    pub toolchain: HipToolchain,
    pub archs: Vec<String>,
    /// The compile arguments after the compiler, with every root by its name: what runs and
    /// what the unit ids hash.
    pub args: Vec<String>,
    pub roots: Roots,
    pub launcher: Vec<String>,
    /// The launcher's environment: what it needs to hash names alike in every place, unless the
    /// user set it.
    pub launcher_env: Vec<(String, String)>,
    /// What the compile farm can do (see `farm`), and its command when it is up.
    pub farm: farm::Farm,
    pub farm_command: Option<farm::FarmCommand>,
    /// A plain `sccache` launcher's server for this build (stopped when this is dropped).
    pub sccache_server: Option<farm::Server>,
    pub limit: usize,
    pub limit_source: String,
    pub env_memory: Option<u64>,
    pub target: String,
    /// The object cache's size limit (`QOLA_CACHE_MAX_SIZE`).
    pub max_cache_size: u64,
}

impl HipBuild {
    /// Resolves the output directory, cache, compiler, architectures (probed), roots and
    /// arguments, launcher and parallelism.
    pub(crate) fn resolve(&self, env: &Env) -> Result<Resolved> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => env
                .var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(CompileError::NoOutDir)?,
        };
        std::fs::create_dir_all(&out_dir).map_err(io_error("create", &out_dir))?;
        // Canonical like the sources and headers, so those under OUT_DIR are recognized.
        let out_dir = full_path(&out_dir)?;
        let cache = match &self.cache_dir {
            Some(dir) => dir.clone(),
            None => crate::cache::dir(env)?,
        };
        let toolchain = match &self.compiler {
            Some(path) => HipToolchain::identify(path)?,
            None => HipToolchain::find(env)?,
        };
        let roots = self.roots(env, &out_dir, &cache)?;
        let target = host_triple();
        let common = self.base_args(env, &toolchain, &target)?;
        let archs = archs::resolve(env, &self.archs, &self.manifest_archs)?;
        archs::validate(
            &toolchain,
            &common,
            &roots,
            &archs,
            Some(&cache),
            &out_dir.join("qola-probe"),
        )?;
        let mut args: Vec<String> = common[1..].iter().map(|a| roots.rewrite_arg(a)).collect();
        // Debug information names the compile's directory: the links' directory is `.`.
        args.push("-fdebug-compilation-dir=.".to_string());
        args.extend(archs.iter().map(|a| format!("--offload-arch={a}")));
        let launcher: Vec<String> = match &self.launcher {
            Some(l) => l.split_whitespace().map(String::from).collect(),
            None => env
                .var("QOLA_COMPILER_LAUNCHER")?
                .map(|l| l.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
        };
        let launcher_env = launcher_env(env, &launcher, &roots)?;
        let num_jobs: Option<usize> = env
            .var("NUM_JOBS")
            .ok()
            .flatten()
            .and_then(|n| n.parse().ok());
        let (limit, limit_source) = match (self.jobs, num_jobs) {
            (Some(n), _) => (n, format!(".jobs({n})")),
            (None, Some(n)) => (n, format!("NUM_JOBS={n}")),
            (None, None) => {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                (n, format!("{n} CPUs"))
            }
        };
        let env_memory = match env.var("QOLA_JOB_MEMORY_MB")? {
            Some(mb) => Some(
                mb.trim().parse::<u64>().map_err(|_| EnvError {
                    name: "QOLA_JOB_MEMORY_MB".to_string(),
                    value: mb.clone(),
                    expected: "a whole number of megabytes, e.g. 1024".to_string(),
                })? << 20,
            ),
            None => None,
        };
        let max_cache_size = match self.max_cache_size {
            Some(bytes) => bytes,
            None => crate::compile::max_cache_size(env, &cache)?,
        };
        Ok(Resolved {
            out_dir,
            cache,
            toolchain,
            archs,
            args,
            roots,
            launcher,
            launcher_env,
            farm: farm::Farm::Off,
            farm_command: None,
            sccache_server: None,
            limit,
            limit_source,
            env_memory,
            target,
            max_cache_size,
        })
    }

    /// The build's roots: the crate (`CARGO_MANIFEST_DIR`, in a build script), the output
    /// directory, qola's cache, then those the caller named (which win over a default of the
    /// same name).
    fn roots(&self, env: &Env, out_dir: &Path, cache: &Path) -> Result<Roots> {
        for (name, dir) in &self.roots {
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
        if self.cargo_metadata
            && let Some(dir) = env.var_os("CARGO_MANIFEST_DIR")
        {
            named.push(("crate".to_string(), PathBuf::from(dir)));
        }
        named.push(("out".to_string(), out_dir.to_path_buf()));
        named.push(("cache".to_string(), cache.to_path_buf()));
        named.extend(self.roots.iter().cloned());
        Ok(Roots::new(out_dir, &named))
    }

    /// The compile command's program and arguments, without architectures, output and source:
    /// in the form `cc` gives (compiler, flags, `-I`, `-D`, then `CXXFLAGS`), built here because
    /// `cc` runs the compiler to detect its family on every build (close to a second with hipcc).
    fn base_args(&self, env: &Env, toolchain: &HipToolchain, target: &str) -> Result<Vec<String>> {
        let mut args = vec![toolchain.path.to_string_lossy().into_owned()];
        args.extend(["-x", "hip", "-fPIC", "-O3"].map(String::from));
        for dir in &self.includes {
            let dir = full_path(dir)?;
            args.push("-I".to_string());
            args.push(dir.to_string_lossy().into_owned());
        }
        args.extend(self.flags.iter().cloned());
        for (name, value) in &self.defines {
            args.push(match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        }
        args.extend(cxxflags(env, target)?);
        Ok(args)
    }
}

/// What a launcher needs to hash names alike in every place, unless the user set it: ccache's
/// `base_dir` at the links' directory (an absolute path there becomes relative) and no hashing
/// of the compile's directory (`hash_dir`, which matters with `-g`: the objects name `.`);
/// sccache's `basedirs` likewise (sccache 0.15 and newer read it when their server starts, so
/// each build runs its own: `Resolved::start_launcher`).
fn launcher_env(env: &Env, launcher: &[String], roots: &Roots) -> Result<Vec<(String, String)>> {
    let Some(program) = launcher.first() else {
        return Ok(Vec::new());
    };
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = roots.dir().to_string_lossy().into_owned();
    let mut out = Vec::new();
    if name.starts_with("ccache") {
        if env.var("CCACHE_BASEDIR")?.is_none() && ccache_config(program, "base_dir").is_none() {
            out.push(("CCACHE_BASEDIR".to_string(), dir));
        }
        if env.var("CCACHE_HASHDIR")?.is_none() && env.var("CCACHE_NOHASHDIR")?.is_none() {
            out.push(("CCACHE_NOHASHDIR".to_string(), "1".to_string()));
        }
    } else if name.starts_with("sccache") && env.var("SCCACHE_BASEDIRS")?.is_none() {
        out.push(("SCCACHE_BASEDIRS".to_string(), dir));
    }
    Ok(out)
}

/// A setting of ccache's own configuration files (`ccache -k NAME`), when set.
fn ccache_config(ccache: &str, name: &str) -> Option<String> {
    let out = std::process::Command::new(ccache)
        .args(["-k", name])
        .output()
        .ok()?;
    let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !value.is_empty()).then_some(value)
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
    let host = env.var("HOST")?.unwrap_or_else(|| this_machine.to_string());
    let target = env.var("TARGET")?.unwrap_or_else(|| host.clone());
    let kind = if target == host { "HOST" } else { "TARGET" };
    let names = [
        "CXXFLAGS".to_string(),
        format!("{kind}_CXXFLAGS"),
        format!("CXXFLAGS_{}", target.replace(['-', '.'], "_")),
        format!("CXXFLAGS_{target}"),
    ];
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
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// Asks the compile farm, when the launcher is a distributed one (see `farm`). Only builds
    /// with something to compile ask: a no-op build runs nothing and writes nothing.
    pub(crate) fn join_farm(&mut self, env: &Env) -> Result<()> {
        let (farm, command) = farm::prepare(
            env,
            &self.launcher,
            &farm::Compiler {
                path: &self.toolchain.path,
                is_clang: self.toolchain.is_clang,
            },
            &self.command(),
            &self.cache,
            &self.out_dir.join("qola-farm"),
            self.roots.dir(),
        )?;
        self.farm = farm;
        self.farm_command = command;
        Ok(())
    }

    /// Before compiling with a plain `sccache` launcher (no farm): starts its server for this
    /// build (see `farm::server`: this build's basedirs, stopped when the build ends). When it
    /// cannot start, sccache's clients start one of their own, as without qola.
    pub(crate) fn start_sccache_server(&mut self) {
        if self.farm_command.is_none()
            && let [program] = &self.launcher[..]
            && Path::new(program)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("sccache"))
            && let Ok(server) = farm::Server::start(Path::new(program), None, &self.launcher_env)
        {
            self.launcher_env = server.env().to_vec();
            self.sccache_server = Some(server);
        }
    }

    /// The full command compiling `source` to `object` with its depfile (all absolute), with
    /// every root by name: through the farm (sccache and the clang driver with hipcc's expanded
    /// flags) when it is up.
    pub(crate) fn compile_command(
        &self,
        source: &Path,
        object: &Path,
        depfile: &Path,
    ) -> Vec<String> {
        let mut argv: Vec<String> = match &self.farm_command {
            Some(f) => f.launcher.iter().chain(&f.args).cloned().collect(),
            None => self
                .launcher
                .iter()
                .cloned()
                .chain(self.command())
                .collect(),
        };
        let mut compiled = source.to_path_buf();
        if self.farm_command.is_some()
            && let Some((link, dir)) = farm::short_name(source, &self.out_dir)
        {
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
