//! What a preparation says: what it did (or, for `qola status`, would do) and why
//! ([`Preparation`], its reasons as data in [`why`], turned into words in one place), and what
//! stopped it ([`error`]). Nothing here reads or writes the tree.

pub(crate) mod error;
pub(crate) mod why;

pub use error::PrepareError;
pub(crate) use error::{Result, git_error};

pub(crate) use why::{Difference, How, LIST_LIMIT, Resumed, Why, name_some};

use std::path::PathBuf;

use serde::Serialize;

/// The decision taken for the tree (see the table in the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Action {
    /// `QOLA_SKIP_PREPARE=1`: the tree was used as it is; nothing was written.
    SkipRequested,
    /// There was no checkout: cloned and prepared.
    Clone,
    /// An interrupted preparation was found and redone from the pinned commit.
    Recover,
    /// The tree already was the prepared state: nothing was written.
    UpToDate,
    /// The key changed or the tree lost the patches: prepared again (or adopted).
    Resync,
    /// Local edits were found: nothing was changed.
    Refused,
    /// `QOLA_FORCE_PREPARE=1`: local edits were saved as a patch, then the tree was prepared.
    Forced,
}

impl Action {
    /// The name used in JSON and messages (`up-to-date`, `resync`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::SkipRequested => "skip-requested",
            Action::Clone => "clone",
            Action::Recover => "recover",
            Action::UpToDate => "up-to-date",
            Action::Resync => "resync",
            Action::Refused => "refused",
            Action::Forced => "forced",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of a reason, for programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ReasonKind {
    /// No checkout existed.
    NoCheckout,
    /// No usable stamp (first preparation of this checkout, or a corrupt/unknown stamp).
    NoStamp,
    /// A `preparing` marker was left by an interrupted run.
    Interrupted,
    /// The resolved commit changed.
    Commit,
    /// A patch was added to the series.
    PatchAdded,
    /// A patch's bytes changed.
    PatchChanged,
    /// A patch was removed from the series.
    PatchRemoved,
    /// A patch was renamed or the series reordered.
    PatchRenamed,
    /// A manifest field that affects preparation changed (`aiter_url`).
    ManifestField,
    /// qola-build's version changed.
    QolaVersion,
    /// Paths of the prepared state are back at the pinned commit (`reset --hard`, `checkout --`,
    /// deleted files).
    PatchReverted,
    /// A repository's `HEAD` is not at its pinned commit.
    HeadMoved,
    /// A submodule is not checked out.
    SubmoduleMissing,
    /// The tree already was what the new key produces: only the stamp was written.
    Adopted,
    /// Forced: local edits were saved and discarded.
    Forced,
    /// Untracked paths in the way of the prepared state (or the work tree of a submodule the
    /// pinned commit no longer has) were moved into a backup directory.
    MovedAside,
    /// A file changed between the decision and its replacement: it was saved to a backup first.
    ChangedMeanwhile,
    /// Objects must be fetched first (`qola status` never fetches).
    FetchNeeded,
    /// Paths differ from the prepared state (skip: listed, not changed).
    Differs,
    /// ck-jit's codegen hints, left applied by a ck-jit run that did not end, were undone.
    CkJitHints,
}

/// Why an action was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// What kind of reason.
    pub kind: ReasonKind,
    /// A sentence for people.
    pub message: String,
}

impl Reason {
    pub(crate) fn new(kind: ReasonKind, message: String) -> Reason {
        Reason { kind, message }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The result of [`crate::Prepare::try_prepare`] or [`crate::Prepare::try_status`]; also the
/// `--json` output of the `qola` command line.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Preparation {
    /// What was (or would be) done.
    pub action: Action,
    /// Why, one entry per cause.
    pub reasons: Vec<Reason>,
    /// The checkout's root (the AITER superproject).
    pub root: PathBuf,
    /// The resolved AITER commit (full SHA); empty when not resolved (skip, status before clone).
    pub commit: String,
    /// The preparation key; empty when not computed.
    pub key: String,
    /// The tree's fingerprint now (after the action).
    pub fingerprint: String,
    /// The fingerprint of the prepared state, when known.
    pub expected_fingerprint: Option<String>,
    /// Paths with local edits (content differing from both the prepared state and the pinned
    /// commit), superproject-relative.
    pub edited_paths: Vec<String>,
    /// Untracked paths (only `status` lists them; they never decide anything).
    pub untracked_paths: Vec<String>,
    /// The patch file local edits were saved to before a forced preparation.
    pub backup: Option<PathBuf>,
    /// Warnings (hunks applied at an offset, differing paths under skip, offline branch use).
    pub warnings: Vec<String>,
    /// The files the preparation depends on: the manifest, the patch directory and each patch
    /// (for CMake's `CMAKE_CONFIGURE_DEPENDS`, as a build script's `rerun-if-changed`).
    pub inputs: Vec<PathBuf>,
}

impl std::fmt::Display for Preparation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.action, self.root.display())?;
        if !self.commit.is_empty() {
            write!(f, " at {}", self.commit.get(..12).unwrap_or(&self.commit))?;
        }
        for reason in &self.reasons {
            write!(f, "\n  - {reason}")?;
        }
        if let Some(backup) = &self.backup {
            write!(f, "\n  local edits saved to {}", backup.display())?;
        }
        Ok(())
    }
}
