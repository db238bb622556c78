//! What can stop preparing a farm build (the build's own errors stay the compile subsystem's:
//! `CompileError` takes these in with `From`).

/// What went wrong preparing a build for the compile farm.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FarmError {
    /// What went wrong and what to do.
    #[error("compile farm (QOLA_COMPILER_LAUNCHER=sccache with a [dist] config): {0}")]
    Problem(String),

    /// A failure of the file system, the environment or the cache directory's discovery
    /// (see `common::failure`).
    #[error(transparent)]
    Failure(#[from] crate::common::failure::Failure),
}

/// `Result` with a [`FarmError`].
pub(crate) type Result<T, E = FarmError> = std::result::Result<T, E>;

crate::failure_from!(FarmError);
