//! The crate-wide [`Error`]: the public face over each subsystem's own error. Every subsystem
//! returns its own type ([`ManifestError`], [`PrepareError`], [`CompileError`], [`AiterError`],
//! each `#[non_exhaustive]` with a `kind()`); [`Error`] gathers them for callers that mix
//! subsystems and want one type, through `From` (`?` converts). One rule flattens them: a
//! subsystem error that carries another's (`qola build` preparing the tree reads the manifest)
//! becomes that other one here, and one that carries the shared [`Failure`] (I/O, environment,
//! cache directory) becomes [`Error::Failure`], wherever it happened; so a refusal is always
//! [`Error::Prepare`] and a failed write always [`Error::Failure`]. Each message says what
//! failed, where and how to go on.

pub use crate::aiter::AiterError;
pub use crate::build_script::EnvError;
pub use crate::cache_dir::NoCacheDir;
pub use crate::common::failure::Failure;
pub use crate::common::io::IoError;
pub use crate::common::kind::ErrorKind;
pub use crate::compile::CompileError;
pub use crate::manifest::ManifestError;
pub use crate::prepare::PrepareError;

/// Everything that can stop qola: a subsystem's error, or one the public functions meet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the manifest.
    #[error(transparent)]
    Manifest(ManifestError),

    /// Preparing the checkout.
    #[error(transparent)]
    Prepare(PrepareError),

    /// Compiling and linking.
    #[error(transparent)]
    Compile(CompileError),

    /// AITER's modules.
    #[error(transparent)]
    Aiter(AiterError),

    /// A failure of the file system, the environment or the cache directory's discovery.
    #[error(transparent)]
    Failure(#[from] Failure),
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Manifest(e) => e.kind(),
            Error::Prepare(e) => e.kind(),
            Error::Compile(e) => e.kind(),
            Error::Aiter(e) => e.kind(),
            Error::Failure(e) => e.kind(),
        }
    }

    /// The report of a preparation refused for local edits, when this error is that refusal.
    pub fn refused(&self) -> Option<&crate::prepare::Preparation> {
        match self {
            Error::Prepare(e) => e.refused(),
            _ => None,
        }
    }
}

impl From<ManifestError> for Error {
    fn from(e: ManifestError) -> Error {
        Error::Manifest(e)
    }
}

impl From<PrepareError> for Error {
    fn from(e: PrepareError) -> Error {
        match e {
            PrepareError::Manifest(e) => Error::Manifest(e),
            PrepareError::Failure(e) => Error::Failure(e),
            e => Error::Prepare(e),
        }
    }
}

impl From<CompileError> for Error {
    fn from(e: CompileError) -> Error {
        match e {
            CompileError::Failure(e) => Error::Failure(e),
            e => Error::Compile(e),
        }
    }
}

impl From<AiterError> for Error {
    fn from(e: AiterError) -> Error {
        match e {
            AiterError::Failure(e) => Error::Failure(e),
            AiterError::Manifest(e) => Error::from(e),
            AiterError::Prepare(e) => Error::from(e),
            AiterError::Compile(e) => Error::from(e),
            e => Error::Aiter(e),
        }
    }
}

crate::common::failure::failure_from!(Error);

/// `Result` with qola's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> IoError {
        IoError {
            what: "write".to_string(),
            path: "/x".into(),
            source: std::io::Error::other("disk full"),
        }
    }

    #[test]
    fn a_failure_lands_in_the_same_variant_whichever_subsystem_met_it() {
        let met = [
            Error::from(PrepareError::from(io())),
            Error::from(CompileError::from(io())),
            Error::from(AiterError::from(io())),
            Error::from(io()),
        ];
        for error in met {
            assert!(matches!(error, Error::Failure(Failure::Io(_))), "{error:?}");
        }
        let manifest = PrepareError::Manifest(ManifestError::Missing);
        assert!(matches!(Error::from(manifest), Error::Manifest(_)));
    }
}
