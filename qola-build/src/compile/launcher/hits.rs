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
    /// Why they failed, when the launcher's log says (ccache's, which qola keeps for a build
    /// with remote storage unless the user names a log file of their own).
    pub remote_failures: Option<RemoteFailures>,
}

/// Why requests to a launcher's remote storage failed, told apart: each has its own fix. A
/// missing entry is none of these: it is a miss, and the unit compiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteFailures {
    /// The server answered no (HTTP 401, 403, 405, 407; a Redis authentication error).
    pub refused: u64,
    /// The server answered with another error (HTTP 5xx, ...).
    pub failed: u64,
    /// No answer: no connection, or none in time.
    pub unanswered: u64,
    /// The last refusal's HTTP status.
    pub refused_status: Option<u16>,
    /// The last error's HTTP status.
    pub failed_status: Option<u16>,
}

impl RemoteFailures {
    /// What the user reads for `launcher`'s failures: one line per kind there was, each with
    /// what to check.
    pub(crate) fn words(&self, launcher: &str) -> Vec<String> {
        let http = |status: Option<u16>| status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
        let mut lines = Vec::new();
        if self.refused > 0 {
            lines.push(format!(
                "{launcher}'s remote storage refused {}{}: it answered and said no, so those results were not shared; check that this machine may write there (nginx: the address is allowed in `limit_except`) or its credentials, or add `|read-only` to the URL on a machine that only reads",
                requests(self.refused),
                http(self.refused_status)
            ));
        }
        if self.failed > 0 {
            lines.push(format!(
                "{launcher}'s remote storage failed {}{}: it answered with an error; check the server's error log",
                requests(self.failed),
                http(self.failed_status)
            ));
        }
        if self.unanswered > 0 {
            lines.push(format!(
                "{launcher}'s remote storage did not answer {} of this build (no connection, or no answer in time): those compiles ran here; check that the server is up and the URL ({launcher}'s remote_storage)",
                requests(self.unanswered)
            ));
        }
        lines
    }
}

/// `n request(s)`.
pub(crate) fn requests(n: u64) -> String {
    format!("{n} request{}", if n == 1 { "" } else { "s" })
}
