//! The errors of compiling: the HIP compiler, the architectures, a compile, the link.

use std::path::PathBuf;

use crate::common::kind::ErrorKind;

/// What can stop a HIP build.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// A failure of the file system, the environment or the cache directory's discovery
    /// (see `common::failure`).
    #[error(transparent)]
    Failure(#[from] crate::common::failure::Failure),

    /// No HIP compiler was found.
    #[error("no HIP compiler found (looked at: {}): set ROCM_HOME (or ROCM_PATH) to a ROCm install, or HIPCC to hipcc or to a clang++/amdclang++ with HIP support; with ROCm 7's Python packages, install `rocm[devel]` in the Python qola runs from or name its root (ROCM_HOME=\"$(rocm-sdk path --root)\"); on Debian: `apt-get install hipcc libamdhip64-dev rocm-device-libs`, elsewhere install ROCm (https://rocm.docs.amd.com)", looked.join(", "))]
    NoHipCompiler {
        /// Every place looked at, in order.
        looked: Vec<String>,
    },

    /// A place named for ROCm holds no HIP compiler: a variable naming a directory without
    /// `bin/hipcc`, or TheRock's `rocm-sdk` failing to answer.
    #[error("{place}: {why}; {fix}")]
    RocmNotThere {
        /// The variable and its value (`ROCM_HOME=/opt/x`), or the command asked.
        place: String,
        /// What is wrong there.
        why: String,
        /// What fixes it.
        fix: String,
    },

    /// The HIP compiler found cannot be used.
    #[error("HIP compiler {}: {why}; point HIPCC at a working hipcc or clang++", path.display())]
    HipCompilerUnusable {
        /// The compiler.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },

    /// No GPU architecture was given and none could be detected.
    #[error(
        "no GPU architecture given and no GPU found on this machine (rocm_agent_enumerator and rocminfo report none): set GPU_ARCHS=gfx942 (or your target), QOLA_GPU_ARCHS, or [build] architectures in the manifest"
    )]
    NoGpuArch,

    /// The compiler rejects the build's flags (the architecture alone compiles).
    #[error("{} ({version}) rejects the compile flags: {stderr}\nflags: {flags}\ncheck CXXFLAGS (and its variants) and the flags the build adds; the architecture itself is supported", compiler.display())]
    RejectedFlags {
        /// The flags of the compile command (without the architecture).
        flags: String,
        /// The compiler.
        compiler: PathBuf,
        /// Its version.
        version: String,
        /// What it said.
        stderr: String,
    },

    /// The compiler cannot compile for a requested architecture.
    #[error("GPU architecture {arch} is not supported by {} ({version}): {stderr}\nchoose another architecture (GPU_ARCHS / QOLA_GPU_ARCHS) or a newer ROCm (HIPCC)", compiler.display())]
    UnsupportedArch {
        /// The architecture.
        arch: String,
        /// The compiler.
        compiler: PathBuf,
        /// Its version.
        version: String,
        /// What the compiler said.
        stderr: String,
    },

    /// A root given to [`super::HipBuild::root`] cannot be used.
    #[error("root `{name}` ({}): {why}", dir.display())]
    InvalidRoot {
        /// Its name.
        name: String,
        /// Its directory.
        dir: PathBuf,
        /// What is wrong.
        why: String,
    },

    /// `OUT_DIR` is not set and no output directory was given.
    #[error("OUT_DIR is not set: call this from a build script, or give HipBuild::out_dir")]
    NoOutDir,

    /// A translation unit failed to compile.
    #[error("compiling {} failed ({}):\n  {command}\n{stderr}\nrerun it with: sh {}", source_file.display(), status.map_or("no exit status: killed by a signal, or it did not start".to_string(), |c| format!("exit status {c}")), repro.display())]
    Compile {
        /// The source file.
        source_file: PathBuf,
        /// The exact command.
        command: String,
        /// The exit code (`None`: killed by a signal).
        status: Option<i32>,
        /// The compiler's standard error.
        stderr: String,
        /// A script that runs the command again.
        repro: PathBuf,
    },

    /// The compiler launcher could not be made ready (the compile farm's sccache-dist, say).
    #[error("{launcher}: {problem}")]
    Launcher {
        /// The launcher, in its own words.
        launcher: String,
        /// What went wrong and what to do.
        problem: String,
    },

    /// Neither qola's object cache nor the build's own cache under its output directory can be
    /// written.
    #[error("qola's object cache cannot be written, nor the build's own cache {}: {why}; free some space or point QOLA_CACHE_DIR (qola's cache) and the output directory at a disk this build can write", dir.display())]
    CacheUnwritable {
        /// The build's own cache.
        dir: PathBuf,
        /// Why.
        why: String,
    },

    /// Link flags were given to a static library, which has no link of its own.
    #[error("link flags {} were given to the static library of this build, which has no link of its own: link a shared library (HipBuild::shared), or give them to the final link (cargo:rustc-link-arg in the build script)", flags.join(" "))]
    LinkFlagsOfStaticLibrary {
        /// The flags.
        flags: Vec<String>,
    },

    /// Linking the library failed.
    #[error("linking failed: `{command}`: {stderr}")]
    Link {
        /// The command.
        command: String,
        /// What it said.
        stderr: String,
    },
}

impl CompileError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CompileError::NoHipCompiler { .. }
            | CompileError::RocmNotThere { .. }
            | CompileError::HipCompilerUnusable { .. }
            | CompileError::NoGpuArch
            | CompileError::RejectedFlags { .. }
            | CompileError::UnsupportedArch { .. }
            | CompileError::Launcher { .. } => ErrorKind::Toolchain,
            CompileError::NoOutDir
            | CompileError::InvalidRoot { .. }
            | CompileError::LinkFlagsOfStaticLibrary { .. } => ErrorKind::Input,
            CompileError::Compile { .. } | CompileError::Link { .. } => ErrorKind::Compile,
            CompileError::CacheUnwritable { .. } => ErrorKind::Io,
            CompileError::Failure(e) => e.kind(),
        }
    }
}

/// `Result` with a [`CompileError`].
pub(crate) type Result<T, E = CompileError> = std::result::Result<T, E>;

crate::common::failure::failure_from!(CompileError);
