//! The build-script context: Cargo's directives (`cargo:rerun-if-*`, warnings) and the
//! environment, read only through [`Env`], which tells Cargo about every variable it reads.

pub(crate) mod directives;
mod env;

pub use crate::common::failure::EnvError;
pub(crate) use directives::Directives;
pub(crate) use env::Env;
