//! What a launcher's cache answered for a build's compiles, in one shape for every launcher.

/// What the launcher's cache answered for a build's compiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LauncherHits {
    /// The launcher (`ccache`, `sccache`).
    pub launcher: &'static str,
    /// Compiles answered from the launcher's cache (local or remote).
    pub hits: u64,
    /// Of those, answered from remote storage (ccache's `remote_storage`, e.g. Redis; an
    /// sccache whose cache is not on local disk).
    pub remote_hits: u64,
    /// Compiles the launcher had to run.
    pub misses: u64,
    /// Requests to its remote storage that failed or timed out (ccache's
    /// `remote_storage_error` and `remote_storage_timeout`): compiled here instead.
    pub remote_errors: u64,
}
