//! The errors of qola-build. Each message says what failed, where (file and line, patch and hunk,
//! command line) and how to go on.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::Preparation;

/// Everything that can stop a preparation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The manifest could not be read.
    #[error("cannot read manifest {}: {source}; check the path given by --manifest, QOLA_MANIFEST or the builder", path.display())]
    ManifestRead {
        /// The manifest file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// The manifest is not valid: syntax errors, unknown keys, values of the wrong type or
    /// meaning. Every problem of the file is listed.
    #[error("manifest {} has {} problem{}:{}\nfix these lines; the manifest's keys are documented in qola-build's `manifest` module (QoLA's keys with QoLA's meaning)", path.display(), problems.len(), if problems.len() == 1 { "" } else { "s" }, manifest_problems(path, problems))]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// Every problem, in line order.
        problems: Vec<crate::manifest::Problem>,
    },

    /// `qola build` needs a manifest and none was given.
    #[error(
        "no manifest: `qola build` builds the [[modules]] of a manifest; pass --manifest FILE (or set QOLA_MANIFEST)"
    )]
    NoManifest,

    /// An option or manifest setting that cannot be served as asked.
    #[error("{option}: {problem}")]
    InvalidOption {
        /// The option or setting.
        option: String,
        /// What is wrong, and the way out.
        problem: String,
    },

    /// The compiler's HIP version is none of the manifest's `rocm_versions`.
    #[error("manifest {} asks for ROCm {} (`[qola] rocm_versions`), but the HIP compiler {} is HIP {found}: use a matching ROCm (HIPCC, ROCM_PATH) or add its version to rocm_versions", manifest.display(), wanted.join(" or "), compiler.display())]
    RocmVersion {
        /// The manifest.
        manifest: PathBuf,
        /// The versions it names.
        wanted: Vec<String>,
        /// The compiler's HIP version.
        found: String,
        /// The compiler.
        compiler: PathBuf,
    },

    /// An environment variable has a value qola cannot use.
    #[error(
        "environment variable {name}={value:?} is not valid: expected {expected}; unset it or fix its value"
    )]
    InvalidEnv {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// What was expected.
        expected: String,
    },

    /// Two options that exclude each other were both given.
    #[error("{first} and {second} were both requested; they exclude each other: drop one")]
    ConflictingOptions {
        /// The first option (for example `QOLA_SKIP_PREPARE=1`).
        first: String,
        /// The second option.
        second: String,
    },

    /// No AITER commit was given anywhere.
    #[error(
        "no AITER commit given: set `[qola] aiter_commit` in the manifest ({manifest}), QOLA_AITER_COMMIT, or --commit / Prepare::commit"
    )]
    NoCommit {
        /// Where the manifest was looked for, or `none`.
        manifest: String,
    },

    /// No directory for qola's cache could be found.
    #[error(
        "cannot find a cache directory for the managed AITER checkout: set QOLA_AITER_ROOT (the checkout) or QOLA_CACHE_DIR (qola's cache), or HOME"
    )]
    NoCacheDir,

    /// The `git` command is needed (clone or fetch) and was not found.
    #[error(
        "the `git` command is needed to {what} but was not found (QOLA_GIT unset and no `git` on PATH): install git (`apt-get install git`) or set QOLA_GIT to its path"
    )]
    GitNotFound {
        /// What needed git.
        what: String,
    },

    /// A `git` command (network access only) failed.
    #[error("`{command}` failed ({}) while trying to {what}:\n{stderr}\n{hint}", status.map_or("killed by a signal".to_string(), |c| format!("exit status {c}")))]
    GitCommand {
        /// The command line, as it can be pasted into a shell.
        command: String,
        /// The exit code (`None`: killed by a signal).
        status: Option<i32>,
        /// What the command was for.
        what: String,
        /// The command's standard error.
        stderr: String,
        /// How to go on.
        hint: String,
    },

    /// A libgit2 operation failed.
    #[error("git: cannot {what} in {}: {source}", path.display())]
    Git {
        /// What was attempted.
        what: String,
        /// The repository or file concerned.
        path: PathBuf,
        /// libgit2's error.
        source: git2::Error,
    },

    /// A file-system operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was attempted.
        what: String,
        /// The path concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// Network access is needed while offline was requested.
    #[error("offline (QOLA_OFFLINE=1 or CARGO_NET_OFFLINE=true), but {what} needs the network: run once online, or fetch it by hand into {}", root.display())]
    Offline {
        /// What needed the network.
        what: String,
        /// The checkout.
        root: PathBuf,
    },

    /// `qola status` and `qola diff` only: answering needs objects that are not fetched yet
    /// (neither ever fetches).
    #[error(
        "{what} needs a fetch, which `qola status` and `qola diff` never do: run `qola prepare` first"
    )]
    FetchNeeded {
        /// What needs the network.
        what: String,
    },

    /// The requested commit, tag or branch does not exist, even after fetching.
    #[error("cannot find AITER commit `{spec}` in {url} (checkout {}){detail}: check aiter_commit (a full or short SHA, a tag or a branch) and aiter_url", root.display())]
    CommitNotFound {
        /// What was asked for.
        spec: String,
        /// The upstream.
        url: String,
        /// The checkout.
        root: PathBuf,
        /// Extra detail, starting with `; ` when present.
        detail: String,
    },

    /// The checkout path exists but is not a repository qola can use.
    #[error("{} exists but is not a git checkout ({why}): remove it, or point QOLA_AITER_ROOT at another directory", root.display())]
    NotACheckout {
        /// The path.
        root: PathBuf,
        /// Why it cannot be used.
        why: String,
    },

    /// A submodule of the pinned commit cannot be set up.
    #[error("submodule {path} of {}: {why}", root.display())]
    Submodule {
        /// The submodule's path in the superproject.
        path: String,
        /// The checkout.
        root: PathBuf,
        /// What is wrong and how to fix it.
        why: String,
    },

    /// The patch directory cannot be read.
    #[error("cannot read the patch series in {}: {source}; check patches_dir (manifest), QOLA_PATCHES_DIR or --patches", dir.display())]
    PatchesDir {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A patch file is not a patch qola can read.
    #[error("patch {}:{line}: {message}; regenerate it with `git diff --binary` or `qola diff`", patch.display())]
    PatchSyntax {
        /// The patch file.
        patch: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong.
        message: String,
    },

    /// A patch names a path that would leave the tree; nothing was written.
    #[error(
        "patch {patch}: path `{path}` {why}; refused before any write, the tree is untouched: fix the patch"
    )]
    UnsafePatchPath {
        /// The patch's file name.
        patch: String,
        /// The path as the patch writes it.
        path: String,
        /// Why it is refused.
        why: String,
    },

    /// A patch does not apply to the pinned tree; nothing was written.
    #[error("{}", patch_failed_message(patch, file, hunk, detail, upstream.as_deref()))]
    PatchFailed {
        /// The patch's file name.
        patch: String,
        /// The file (superproject-relative path).
        file: String,
        /// The failing hunk's header (`@@ -a,b +c,d @@`), or what failed for a whole-file change.
        hunk: String,
        /// What did not match.
        detail: String,
        /// Set when the patch reverse-applies at the pinned commit (it is already upstream): the commit.
        upstream: Option<Box<str>>,
    },

    /// Local edits are present and neither skipping nor forcing was requested; nothing changed.
    #[error("{}", refused_message(.0))]
    Refused(Box<Preparation>),

    /// `QOLA_SKIP_PREPARE=1` was set but there is no checkout to use.
    #[error("QOLA_SKIP_PREPARE=1 but there is no AITER checkout at {}: unset QOLA_SKIP_PREPARE to clone and prepare it, or point QOLA_AITER_ROOT at your checkout", root.display())]
    SkipWithoutCheckout {
        /// The checkout path.
        root: PathBuf,
    },

    /// `qola diff` needs a prepared state to compare with.
    #[error("no prepared state in {} to diff against: run `qola prepare` first", root.display())]
    NotPrepared {
        /// The checkout.
        root: PathBuf,
    },

    /// No HIP compiler was found.
    #[error("no HIP compiler found (looked at: {}): set HIPCC to hipcc or to a clang++/amdclang++ with HIP support, or ROCM_PATH/HIP_PATH to a ROCm install; on Debian: `apt-get install hipcc libamdhip64-dev rocm-device-libs`, elsewhere install ROCm (https://rocm.docs.amd.com)", looked.join(", "))]
    NoHipCompiler {
        /// Every place looked at, in order.
        looked: Vec<String>,
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

    /// `OUT_DIR` is not set and no output directory was given.
    #[error("OUT_DIR is not set: call this from a build script, or give HipBuild::out_dir")]
    NoOutDir,

    /// A translation unit failed to compile.
    #[error("compiling {} failed ({}):\n  {command}\n{stderr}\nrerun it with: sh {}", source_file.display(), status.map_or("killed by a signal".to_string(), |c| format!("exit status {c}")), repro.display())]
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

    /// Linking the library failed.
    #[error("linking failed: `{command}`: {stderr}")]
    Link {
        /// The command.
        command: String,
        /// What it said.
        stderr: String,
    },

    /// An entry of AITER's `optCompilerConfig.json` cannot be evaluated.
    #[error("AITER module {module}, field {field}: `{expression}`: {why}")]
    AiterConfig {
        /// The module (`libmha_fwd`).
        module: String,
        /// The field (`blob_gen_cmd`).
        field: String,
        /// The expression.
        expression: String,
        /// Why it cannot be evaluated.
        why: String,
    },

    /// A code generator failed.
    #[error(
        "code generation failed: `{command}`:\n{stderr}\n(AITER's generators need python3 with the `packaging` module: `pip install packaging`)"
    )]
    Codegen {
        /// The command.
        command: String,
        /// What it said.
        stderr: String,
    },

    /// The compiler is too old for composable_kernel.
    #[error("composable_kernel needs HIP >= {needed}; found {found} at {}: set HIPCC to a newer ROCm's hipcc (in this repository, `tools/sid-hipcc-setup` makes one from Debian sid's ROCm 6.4)", compiler.display())]
    ToolchainTooOld {
        /// The oldest HIP that works.
        needed: String,
        /// The HIP found.
        found: String,
        /// The compiler.
        compiler: PathBuf,
    },

    /// After writing, the tree does not match the state the patches describe.
    #[error("after preparing {}, the tree still differs from the prepared state at: {paths}; a git filter or attribute (.gitattributes eol/filter) may rewrite these files; the stamp was not written, the next build retries", root.display())]
    Verify {
        /// The checkout.
        root: PathBuf,
        /// The differing paths.
        paths: String,
    },
}

/// What kind of failure an [`Error`] is, for callers that match on it (the variants of
/// [`Error`] carry the details and may grow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The manifest, an environment variable or the options given: fix the input.
    Input,
    /// The git command, the network or a commit that cannot be had.
    Fetch,
    /// The checkout is not usable as one (not a repository, a broken submodule, not prepared).
    Checkout,
    /// A patch of the series: unreadable, malformed, unsafe or not applying.
    Patch,
    /// Local edits: the preparation was refused (the error carries the report).
    Refused,
    /// The prepared tree did not verify after writing.
    Verify,
    /// The file system or libgit2.
    Io,
    /// The HIP compiler: missing, unusable, too old, or an architecture it rejects.
    Toolchain,
    /// A compile or the link step failed.
    Compile,
    /// An AITER recipe or its code generation.
    Aiter,
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        use Error::*;
        match self {
            ManifestRead { .. }
            | Manifest { .. }
            | InvalidEnv { .. }
            | ConflictingOptions { .. }
            | NoCommit { .. }
            | NoCacheDir
            | NoManifest
            | InvalidOption { .. }
            | NoOutDir => ErrorKind::Input,
            GitNotFound { .. }
            | GitCommand { .. }
            | Offline { .. }
            | FetchNeeded { .. }
            | CommitNotFound { .. } => ErrorKind::Fetch,
            NotACheckout { .. }
            | Submodule { .. }
            | SkipWithoutCheckout { .. }
            | NotPrepared { .. } => ErrorKind::Checkout,
            PatchesDir { .. }
            | PatchSyntax { .. }
            | UnsafePatchPath { .. }
            | PatchFailed { .. } => ErrorKind::Patch,
            Refused(_) => ErrorKind::Refused,
            Verify { .. } => ErrorKind::Verify,
            Git { .. } | Io { .. } => ErrorKind::Io,
            NoHipCompiler { .. }
            | HipCompilerUnusable { .. }
            | NoGpuArch
            | UnsupportedArch { .. }
            | RejectedFlags { .. }
            | RocmVersion { .. }
            | ToolchainTooOld { .. } => ErrorKind::Toolchain,
            Compile { .. } | Link { .. } => ErrorKind::Compile,
            AiterConfig { .. } | Codegen { .. } => ErrorKind::Aiter,
        }
    }
}

fn manifest_problems(path: &std::path::Path, problems: &[crate::manifest::Problem]) -> String {
    let mut out = String::new();
    for p in problems {
        let _ = write!(
            out,
            "\n  {}:{}: {}: {}",
            path.display(),
            p.line,
            p.key,
            p.message
        );
    }
    out
}

fn patch_failed_message(
    patch: &str,
    file: &str,
    hunk: &str,
    detail: &str,
    upstream: Option<&str>,
) -> String {
    let mut m = format!(
        "patch {patch} does not apply: file {file}, hunk {hunk}: {detail}; nothing was written, the tree is as it was"
    );
    match upstream {
        Some(commit) => {
            let _ = write!(
                m,
                "\nhint: this patch reverse-applies at the pinned commit {commit}: it is already applied upstream; drop {patch} from the series"
            );
        }
        None => {
            let _ = write!(
                m,
                "\nhint: rebase the patch on the pinned commit (edit the tree with QOLA_SKIP_PREPARE=1, then `qola diff`)"
            );
        }
    }
    m
}

/// How many edited paths a refusal lists before it counts the rest.
pub(crate) const REFUSED_LIST_LIMIT: usize = 20;

fn refused_message(p: &Preparation) -> String {
    let mut m = format!(
        "refusing to prepare {}: {} path(s) have local edits (content differing from both the prepared state and the pinned commit); nothing was changed:\n",
        p.root.display(),
        p.edited_paths.len()
    );
    for path in p.edited_paths.iter().take(REFUSED_LIST_LIMIT) {
        let _ = writeln!(m, "  {path}");
    }
    if p.edited_paths.len() > REFUSED_LIST_LIMIT {
        let _ = writeln!(
            m,
            "  ... and {} more",
            p.edited_paths.len() - REFUSED_LIST_LIMIT
        );
    }
    m.push_str(
        "three ways on:\n  QOLA_SKIP_PREPARE=1     build with the edits as they are\n  qola diff -o my.patch   keep them as a patch (add it to the series)\n  QOLA_FORCE_PREPARE=1    discard them (a backup patch is saved first)",
    );
    m
}

/// `Result` with qola's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand for an [`Error::Io`] with a path.
pub(crate) fn io_error(
    what: &str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.to_string();
    let path = path.into();
    move |source| Error::Io { what, path, source }
}

/// Shorthand for an [`Error::Git`] with a path.
pub(crate) fn git_error(what: &str, path: impl Into<PathBuf>) -> impl FnOnce(git2::Error) -> Error {
    let what = what.to_string();
    let path = path.into();
    move |source| Error::Git { what, path, source }
}
