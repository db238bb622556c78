//! The errors of reading a manifest.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::common::kind::ErrorKind;

/// A manifest that cannot be read or is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The manifest could not be read.
    #[error("cannot read manifest {}: {source}; check the path given by --manifest, QOLA_MANIFEST or the builder", path.display())]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// The manifest is not valid: syntax errors, unknown keys, values of the wrong type or
    /// meaning. Every problem of the file is listed.
    #[error("manifest {} has {} problem{}:{}\nfix these lines; the manifest's keys are documented in qola-build's `manifest` module (QoLA's keys with QoLA's meaning)", path.display(), problems.len(), if problems.len() == 1 { "" } else { "s" }, manifest_problems(path, problems))]
    Invalid {
        /// The manifest file.
        path: PathBuf,
        /// Every problem, in line order.
        problems: Vec<crate::manifest::problem::Problem>,
    },

    /// `[[mha_fwd_variants]]` or `[[mha_bwd_variants]]` cannot be turned into CK filters.
    #[error("manifest {}: {problem}", path.display())]
    Variants {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong, and the way out.
        problem: String,
    },

    /// `qola build` needs a manifest and none was given.
    #[error(
        "no manifest: `qola build` builds the [[modules]] of a manifest; pass --manifest FILE (or set QOLA_MANIFEST)"
    )]
    Missing,
}

impl ManifestError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ManifestError::Read { .. }
            | ManifestError::Invalid { .. }
            | ManifestError::Variants { .. }
            | ManifestError::Missing => ErrorKind::Input,
        }
    }
}

fn manifest_problems(
    path: &std::path::Path,
    problems: &[crate::manifest::problem::Problem],
) -> String {
    let mut out = String::new();
    for p in problems {
        let _ = write!(
            out,
            "\n  {}:{}: {}: {}",
            path.display(),
            p.line,
            p.key,
            p.message
        );
    }
    out
}
