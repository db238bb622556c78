//! The failures every subsystem meets the same way: the file system ([`IoError`]), an
//! environment variable qola cannot use ([`EnvError`]), no directory for qola's cache
//! ([`NoCacheDir`]). One carrier, [`Failure`], which each subsystem's error holds as its one
//! `Failure` variant (`?` converts each of the three into any of them through
//! `failure_from!`); the messages are the carried error's own.

use crate::common::io::IoError;
use crate::common::kind::ErrorKind;

/// An environment variable whose value qola cannot use.
#[derive(Debug, thiserror::Error)]
#[error(
    "environment variable {name}={value:?} is not valid: expected {expected}; unset it or fix its value"
)]
pub struct EnvError {
    /// The variable.
    pub name: String,
    /// Its value.
    pub value: String,
    /// What was expected.
    pub expected: String,
}

impl EnvError {
    /// An input error: fix the variable.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Input
    }
}

/// No directory for qola's cache could be found.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot find a cache directory for the managed AITER checkout: set QOLA_AITER_ROOT (the checkout) or QOLA_CACHE_DIR (qola's cache), or HOME"
)]
pub struct NoCacheDir;

impl NoCacheDir {
    /// An input error: set one of the variables.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Input
    }
}

/// A failure of the file system, the environment, or the cache directory's discovery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] IoError),

    /// An environment variable has a value qola cannot use.
    #[error(transparent)]
    Env(#[from] EnvError),

    /// No directory for qola's cache could be found.
    #[error(transparent)]
    NoCacheDir(#[from] NoCacheDir),
}

impl Failure {
    /// The kind of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Failure::Io(_) => ErrorKind::Io,
            Failure::Env(e) => e.kind(),
            Failure::NoCacheDir(e) => e.kind(),
        }
    }
}

/// `From` each carried error (through [`Failure`]) for an error type with a
/// `Failure(Failure)` variant.
macro_rules! failure_from {
    ($error:ty) => {
        impl From<$crate::common::io::IoError> for $error {
            fn from(e: $crate::common::io::IoError) -> Self {
                <$error>::Failure(e.into())
            }
        }
        impl From<$crate::common::failure::EnvError> for $error {
            fn from(e: $crate::common::failure::EnvError) -> Self {
                <$error>::Failure(e.into())
            }
        }
        impl From<$crate::common::failure::NoCacheDir> for $error {
            fn from(e: $crate::common::failure::NoCacheDir) -> Self {
                <$error>::Failure(e.into())
            }
        }
    };
}
pub(crate) use failure_from;
