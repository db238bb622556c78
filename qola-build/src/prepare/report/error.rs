//! The errors of preparation: fetching, the checkout, the patch series, a refusal, the check
//! after writing.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::common::kind::ErrorKind;
use crate::prepare::report::Preparation;

/// How many edited paths a refusal lists before it counts the rest.
const REFUSED_LIST_LIMIT: usize = 20;

/// What can stop a preparation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// The manifest could not be read.
    #[error(transparent)]
    Manifest(#[from] crate::manifest::ManifestError),

    /// A failure of the file system, the environment or the cache directory's discovery
    /// (see `common::failure`).
    #[error(transparent)]
    Failure(#[from] crate::common::failure::Failure),

    /// Two options that exclude each other were both given.
    #[error("{first} and {second} were both requested; they exclude each other: drop one")]
    ConflictingOptions {
        /// The first option (for example `QOLA_SKIP_PREPARE=1`).
        first: String,
        /// The second option.
        second: String,
    },

    /// No AITER commit was given anywhere.
    #[error(
        "no AITER commit given: set `[qola] aiter_commit` in the manifest ({manifest}), QOLA_AITER_COMMIT, or --commit / Prepare::commit"
    )]
    NoCommit {
        /// Where the manifest was looked for, or `none`.
        manifest: String,
    },

    /// The `git` command is needed (clone or fetch) and was not found.
    #[error(
        "the `git` command is needed to {what} but was not found (QOLA_GIT unset and no `git` on PATH): install git (`apt-get install git`) or set QOLA_GIT to its path"
    )]
    GitNotFound {
        /// What needed git.
        what: String,
    },

    /// A `git` command (network access only) failed.
    #[error("`{command}` failed ({}) while trying to {what}:\n{stderr}\n{hint}", status.map_or("no exit status: killed by a signal, or it did not start".to_string(), |c| format!("exit status {c}")))]
    GitCommand {
        /// The command line, as it can be pasted into a shell.
        command: String,
        /// The exit code (`None`: killed by a signal).
        status: Option<i32>,
        /// What the command was for.
        what: String,
        /// The command's standard error.
        stderr: String,
        /// How to go on.
        hint: String,
    },

    /// A libgit2 operation failed.
    #[error("git: cannot {what} in {}: {source}", path.display())]
    Git {
        /// What was attempted.
        what: String,
        /// The repository or file concerned.
        path: PathBuf,
        /// libgit2's error.
        source: git2::Error,
    },

    /// Network access is needed while offline was requested.
    #[error("offline (QOLA_OFFLINE=1 or CARGO_NET_OFFLINE=true), but {what} needs the network: run once online, or fetch it by hand into {}", root.display())]
    Offline {
        /// What needed the network.
        what: String,
        /// The checkout.
        root: PathBuf,
    },

    /// `qola status` and `qola diff` only: answering needs objects that are not fetched yet
    /// (neither ever fetches).
    #[error(
        "{what} needs a fetch, which `qola status` and `qola diff` never do: run `qola prepare` first"
    )]
    FetchNeeded {
        /// What needs the network.
        what: String,
    },

    /// The requested commit, tag or branch does not exist, even after fetching.
    #[error("cannot find AITER commit `{spec}` in {url} (checkout {}){detail}: check aiter_commit (a full or short SHA, a tag or a branch) and aiter_url", root.display())]
    CommitNotFound {
        /// What was asked for.
        spec: String,
        /// The upstream.
        url: String,
        /// The checkout.
        root: PathBuf,
        /// Extra detail, starting with `; ` when present.
        detail: String,
    },

    /// The checkout path exists but is not a repository qola can use.
    #[error("{} exists but is not a git checkout ({why}): remove it, or point QOLA_AITER_ROOT at another directory", root.display())]
    NotACheckout {
        /// The path.
        root: PathBuf,
        /// Why it cannot be used.
        why: String,
    },

    /// The checkout, or a submodule of it, belongs to another user: git refuses it.
    #[error("{} belongs to {owner}, not to the user running qola ({user}), and git refuses a repository another user owns (\"dubious ownership\"). If you trust it, allow it in git's global config: `git config --global --add safe.directory {}` (a submodule needs an entry of its own), or run as its owner", path.display(), path.display())]
    NotOwned {
        /// The repository's work tree.
        path: PathBuf,
        /// Who owns it (`uid 1000 (alice)`).
        owner: String,
        /// Who runs qola.
        user: String,
    },

    /// A submodule of the pinned commit cannot be set up.
    #[error("submodule {path} of {}: {why}", root.display())]
    Submodule {
        /// The submodule's path in the superproject.
        path: String,
        /// The checkout.
        root: PathBuf,
        /// What is wrong and how to fix it.
        why: String,
    },

    /// The patch directory cannot be read.
    #[error("cannot read the patch series in {}: {source}; check patches_dir (manifest), QOLA_PATCHES_DIR or --patches", dir.display())]
    PatchesDir {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A relative `patches_dir` names two directories with other patches: one relative to the
    /// manifest (qola's reading), one relative to the working directory (QoLA's).
    #[error("{}: patches_dir = \"{}\" names two different series: {} (relative to the manifest, as qola reads it) and {} (relative to the working directory, as QoLA reads it); write the one meant as an absolute path (or relative to the manifest), or remove the other", manifest.display(), written.display(), by_manifest.display(), by_cwd.display())]
    PatchesDirAmbiguous {
        /// The manifest.
        manifest: PathBuf,
        /// `patches_dir` as written.
        written: PathBuf,
        /// Read relative to the manifest.
        by_manifest: PathBuf,
        /// Read relative to the working directory.
        by_cwd: PathBuf,
    },

    /// A manifest without `patches_dir` (so qola's own series) pins an AITER commit that series
    /// is not written for.
    #[error("{}: AITER {commit} is not a commit qola's own patch series are written for ({}; a commit is chosen by its SHA); a manifest without patches_dir gets the series for its commit, and qola cannot know one applies to another commit. Set [qola] patches_dir (or --patches-dir, QOLA_PATCHES_DIR) to a series written for {commit} (an empty directory applies none), or pin aiter_commit = \"{}\"", manifest.as_ref().map_or("qola".to_string(), |m| m.display().to_string()), written_for.join(", "), written_for.first().map_or("", |c| c.as_str()))]
    SeriesNotForCommit {
        /// The manifest.
        manifest: Option<PathBuf>,
        /// The commit as given, and resolved when it was (`d32b0cb`, `main (1a2b3c…)`).
        commit: String,
        /// The commits the series is written for.
        written_for: Vec<String>,
    },

    /// Something named `*.patch` in the series directory is not a regular file.
    #[error("{} is {what}, named like a patch of the series: qola reads every *.patch of the series directory as a patch (as QoLA does); rename or move it", path.display())]
    NotAPatch {
        /// What is named so.
        path: PathBuf,
        /// What it is.
        what: String,
    },

    /// A patch file is not a patch qola can read.
    #[error("patch {}:{line}: {message}; regenerate it with `git diff --binary` or `qola diff`", patch.display())]
    PatchSyntax {
        /// The patch file.
        patch: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong.
        message: String,
    },

    /// A patch names a path that would leave the tree; nothing was written.
    #[error(
        "patch {patch}: path `{path}` {why}; refused before any write, the tree is untouched: fix the patch"
    )]
    UnsafePatchPath {
        /// The patch's file name.
        patch: String,
        /// The path as the patch writes it.
        path: String,
        /// Why it is refused.
        why: String,
    },

    /// A patch does not apply to the pinned tree; nothing was written.
    #[error("{}", patch_failed_message(patch, file, hunk, detail, upstream.as_deref()))]
    PatchFailed {
        /// The patch's file name.
        patch: String,
        /// The file (superproject-relative path).
        file: String,
        /// The failing hunk's header (`@@ -a,b +c,d @@`), or what failed for a whole-file change.
        hunk: String,
        /// What did not match.
        detail: String,
        /// Set when the patch reverse-applies at the pinned commit (it is already upstream): the commit.
        upstream: Option<Box<str>>,
    },

    /// Local edits are present and neither skipping nor forcing was requested; nothing changed.
    #[error("{}", refused_message(.0))]
    Refused(Box<Preparation>),

    /// `QOLA_SKIP_PREPARE=1` was set but there is no checkout to use.
    #[error("QOLA_SKIP_PREPARE=1 but there is no AITER checkout at {}: unset QOLA_SKIP_PREPARE to clone and prepare it, or point QOLA_AITER_ROOT at your checkout", root.display())]
    SkipWithoutCheckout {
        /// The checkout path.
        root: PathBuf,
    },

    /// `qola diff` needs a prepared state to compare with.
    #[error("no prepared state in {} to diff against: run `qola prepare` first", root.display())]
    NotPrepared {
        /// The checkout.
        root: PathBuf,
    },

    /// The journal of a preparation cannot be kept (or a test injected a failure there).
    #[error("the journal of this preparation ({}): {why}", journal.display())]
    Journal {
        /// The journal's directory.
        journal: PathBuf,
        /// What went wrong.
        why: String,
    },

    /// A preparation failed after it had written: every change it made was undone, then this.
    #[error(
        "{error}\nthe checkout is as it was before this preparation: its {changes} change(s) were undone"
    )]
    RolledBack {
        /// What failed.
        error: Box<PrepareError>,
        /// How many changes were undone.
        changes: usize,
    },

    /// Files changed while qola wrote the tree (an editor saving one): the preparation was
    /// undone, the changed files saved first.
    #[error("while qola wrote the tree at {}, another program changed {paths} (an editor saving it, say); each was saved to {} before the checkout was put back as it was before this preparation ({changes} change(s) undone). Your changes are in that backup; prepare again once nothing else writes there", root.display(), backup.display())]
    ChangedWhileWriting {
        /// The checkout.
        root: PathBuf,
        /// The changed paths (relative to the checkout).
        paths: String,
        /// Where they were saved.
        backup: PathBuf,
        /// How many changes were undone.
        changes: usize,
    },

    /// A preparation failed after it had written, and undoing its changes failed too.
    #[error("{error}\nundoing this preparation's changes failed as well ({undo}); its journal {} stays, and the next preparation finishes undoing them", journal.display())]
    RollbackFailed {
        /// What failed first.
        error: Box<PrepareError>,
        /// Why undoing failed.
        undo: Box<PrepareError>,
        /// The journal left for the next run.
        journal: PathBuf,
    },

    /// After writing, the tree does not match the state the patches describe.
    #[error("after preparing {}, the tree still differs from the prepared state at: {paths}; a git filter or attribute (.gitattributes eol/filter) may rewrite these files; the stamp was not written, the next build retries", root.display())]
    Verify {
        /// The checkout.
        root: PathBuf,
        /// The differing paths.
        paths: String,
    },
}

impl PrepareError {
    /// The report of a preparation refused for local edits, when this error is that refusal.
    pub fn refused(&self) -> Option<&Preparation> {
        match self {
            PrepareError::Refused(report) => Some(report),
            _ => None,
        }
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            PrepareError::ConflictingOptions { .. } | PrepareError::NoCommit { .. } => {
                ErrorKind::Input
            }
            PrepareError::GitNotFound { .. }
            | PrepareError::GitCommand { .. }
            | PrepareError::Offline { .. }
            | PrepareError::FetchNeeded { .. }
            | PrepareError::CommitNotFound { .. } => ErrorKind::Fetch,
            PrepareError::Git { .. } => ErrorKind::Io,
            PrepareError::NotACheckout { .. }
            | PrepareError::NotOwned { .. }
            | PrepareError::Submodule { .. }
            | PrepareError::SkipWithoutCheckout { .. }
            | PrepareError::NotPrepared { .. } => ErrorKind::Checkout,
            PrepareError::PatchesDir { .. }
            | PrepareError::PatchesDirAmbiguous { .. }
            | PrepareError::SeriesNotForCommit { .. }
            | PrepareError::NotAPatch { .. }
            | PrepareError::PatchSyntax { .. }
            | PrepareError::UnsafePatchPath { .. }
            | PrepareError::PatchFailed { .. } => ErrorKind::Patch,
            PrepareError::Refused(_) => ErrorKind::Refused,
            PrepareError::Manifest(e) => e.kind(),
            PrepareError::Failure(e) => e.kind(),
            PrepareError::Verify { .. } | PrepareError::ChangedWhileWriting { .. } => {
                ErrorKind::Verify
            }
            PrepareError::Journal { .. } => ErrorKind::Io,
            PrepareError::RolledBack { error, .. } | PrepareError::RollbackFailed { error, .. } => {
                error.kind()
            }
        }
    }
}

/// Shorthand for a [`PrepareError::Git`] with a path.
pub(crate) fn git_error(
    what: &str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(git2::Error) -> PrepareError {
    let what = what.to_string();
    let path = path.into();
    move |source| PrepareError::Git { what, path, source }
}

/// `Result` with a [`PrepareError`].
pub(crate) type Result<T, E = PrepareError> = std::result::Result<T, E>;

fn patch_failed_message(
    patch: &str,
    file: &str,
    hunk: &str,
    detail: &str,
    upstream: Option<&str>,
) -> String {
    let mut m = format!(
        "patch {patch} does not apply: file {file}, hunk {hunk}: {detail}; nothing was written, the tree is as it was"
    );
    match upstream {
        Some(commit) => {
            let _ = write!(
                m,
                "\nhint: this patch reverse-applies at the pinned commit {commit}: it is already applied upstream; drop {patch} from the series"
            );
        }
        None => {
            let _ = write!(
                m,
                "\nhint: rebase the patch on the pinned commit (edit the tree with QOLA_SKIP_PREPARE=1, then `qola diff`)"
            );
        }
    }
    m
}

fn refused_message(p: &Preparation) -> String {
    let mut m = format!(
        "refusing to prepare {}: {} path(s) have local edits (content differing from both the prepared state and the pinned commit); nothing was changed:\n",
        p.root.display(),
        p.edited_paths.len()
    );
    for path in p.edited_paths.iter().take(REFUSED_LIST_LIMIT) {
        let _ = writeln!(m, "  {path}");
    }
    if p.edited_paths.len() > REFUSED_LIST_LIMIT {
        let _ = writeln!(
            m,
            "  ... and {} more",
            p.edited_paths.len() - REFUSED_LIST_LIMIT
        );
    }
    m.push_str(
        "three ways on:\n  QOLA_SKIP_PREPARE=1     build with the edits as they are\n  qola diff -o my.patch   keep them as a patch (add it to the series)\n  QOLA_FORCE_PREPARE=1    discard them (a backup patch is saved first)",
    );
    m
}

crate::common::failure::failure_from!(PrepareError);
