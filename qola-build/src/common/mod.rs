//! Leaf helpers every subsystem uses and that use nothing of qola's: atomic writes and their
//! [`io::IoError`], locks that say who holds them, the [`kind::ErrorKind`] of every error, text and time helpers, and the keys
//! of tree paths. Nothing here imports another module of the crate.

pub(crate) mod depfile;
pub(crate) mod failure;
pub(crate) mod fnmatch;
pub(crate) mod hooks;
pub(crate) mod io;
pub(crate) mod kind;
pub(crate) mod lock;
pub(crate) mod precedence;
pub(crate) mod text;
pub(crate) mod time;
pub(crate) mod tree_path;
