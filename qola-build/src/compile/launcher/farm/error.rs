//! What can stop preparing a farm build (the build's own errors stay the compile subsystem's:
//! `CompileError` takes these in with `From`).

/// What went wrong preparing a build for the compile farm.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FarmError {
    /// What went wrong and what to do.
    #[error("compile farm (QOLA_COMPILER_LAUNCHER=sccache with a [dist] config): {0}")]
    Problem(String),

    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] crate::common::io::IoError),

    /// An environment variable has a value qola cannot use.
    #[error(transparent)]
    Env(#[from] crate::build_script::EnvError),
}

/// `Result` with a [`FarmError`].
pub(crate) type Result<T, E = FarmError> = std::result::Result<T, E>;

/// Shorthand for a [`FarmError::Io`] with a path: `.map_err(io_error("read", &path))?`.
pub(crate) fn io_error(
    what: &str,
    path: impl Into<std::path::PathBuf>,
) -> impl FnOnce(std::io::Error) -> FarmError {
    let io = crate::common::io::io_error(what, path);
    move |source| FarmError::Io(io(source))
}
