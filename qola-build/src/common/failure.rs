//! The failures every subsystem meets the same way: the file system ([`IoError`]), an
//! environment variable qola cannot use ([`EnvError`]), no directory for qola's cache
//! ([`NoCacheDir`]). One carrier, [`Failure`], which each subsystem's error holds as its one
//! `Failure` variant (`?` converts each of the three into any of them through
//! [`failure_from!`](crate::failure_from)); the messages are the carried error's own.

use crate::build_script::EnvError;
use crate::cache::NoCacheDir;
use crate::common::io::IoError;
use crate::common::kind::ErrorKind;

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
#[macro_export]
#[doc(hidden)]
macro_rules! failure_from {
    ($error:ty) => {
        impl From<$crate::common::io::IoError> for $error {
            fn from(e: $crate::common::io::IoError) -> Self {
                <$error>::Failure(e.into())
            }
        }
        impl From<$crate::build_script::EnvError> for $error {
            fn from(e: $crate::build_script::EnvError) -> Self {
                <$error>::Failure(e.into())
            }
        }
        impl From<$crate::cache::NoCacheDir> for $error {
            fn from(e: $crate::cache::NoCacheDir) -> Self {
                <$error>::Failure(e.into())
            }
        }
    };
}
