//! What a preparation records, to know next time whether the tree is still what it wrote:
//!
//! * [`key`]: the hash over everything that decides the prepared state (qola's version, the
//!   URL, the commit, the series), with its components, to name what changed;
//! * [`fingerprint`]: the tree's state as git's `HEAD`s and every path that differs from them;
//! * [`stamp`]: the key and fingerprint of the last successful preparation, in the checkout's
//!   git directory;
//! * [`snapshot`]: the `lstat` of every tracked path, in qola's cache, which proves an unchanged
//!   tree in milliseconds.

pub(crate) mod fingerprint;
pub(crate) mod key;
pub(crate) mod snapshot;
pub(crate) mod stamp;

pub(crate) use snapshot::Snapshot;

pub(crate) use key::{KeyComponents, SCHEMA};

pub(crate) use stamp::{QolaDir, Stamp};

pub(crate) use fingerprint::{TreeScan, fingerprint_of, scan};
