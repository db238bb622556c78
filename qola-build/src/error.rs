//! The errors of qola-build, one type per subsystem ([`ManifestError`], [`PrepareError`],
//! [`CompileError`], [`AiterError`]) behind the one [`Error`] the public functions return. Each
//! message says what failed, where (file and line, patch and hunk, command line) and how to go
//! on; [`Error::kind`] (and each subsystem error's `kind`) says what kind of failure it is, for
//! callers that match on it.

use std::path::PathBuf;

pub use crate::aiter::AiterError;
pub use crate::compile::CompileError;
pub use crate::manifest::ManifestError;
pub use crate::prepare::PrepareError;

/// Everything that can stop qola: a subsystem's error, or one any of them can meet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the manifest.
    #[error(transparent)]
    Manifest(#[from] ManifestError),

    /// Preparing the checkout.
    #[error(transparent)]
    Prepare(#[from] PrepareError),

    /// Compiling and linking.
    #[error(transparent)]
    Compile(#[from] CompileError),

    /// AITER's modules.
    #[error(transparent)]
    Aiter(#[from] AiterError),

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

    /// No directory for qola's cache could be found.
    #[error(
        "cannot find a cache directory for the managed AITER checkout: set QOLA_AITER_ROOT (the checkout) or QOLA_CACHE_DIR (qola's cache), or HOME"
    )]
    NoCacheDir,

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
        match self {
            Error::Manifest(e) => e.kind(),
            Error::Prepare(e) => e.kind(),
            Error::Compile(e) => e.kind(),
            Error::Aiter(e) => e.kind(),
            Error::InvalidEnv { .. } | Error::NoCacheDir => ErrorKind::Input,
            Error::Io { .. } => ErrorKind::Io,
        }
    }

    /// The report of a preparation refused for local edits, when this error is that refusal.
    pub fn refused(&self) -> Option<&crate::Preparation> {
        match self {
            Error::Prepare(PrepareError::Refused(report)) => Some(report),
            _ => None,
        }
    }
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

/// Shorthand for a [`PrepareError::Git`] with a path.
pub(crate) fn git_error(what: &str, path: impl Into<PathBuf>) -> impl FnOnce(git2::Error) -> Error {
    let what = what.to_string();
    let path = path.into();
    move |source| PrepareError::Git { what, path, source }.into()
}
