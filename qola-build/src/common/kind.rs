//! What kind of failure an error is, for callers that match on it: every error of qola-build
//! (each subsystem's and the crate-wide [`crate::Error`]) answers `kind()` with one of these.

/// What kind of failure an error is (the errors' variants carry the details and may grow).
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
