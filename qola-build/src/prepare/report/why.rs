//! Why a preparation acts, as data; [`Why::reason`] is the one place where it becomes words.

use std::path::PathBuf;

use crate::common::text::short_id;
use crate::common::tree_path::shown;
use crate::prepare::report::{Reason, ReasonKind};

/// What an interrupted preparation left (see `journal`), and what became of it before the
/// tree was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resumed {
    /// Nothing: the last preparation ended.
    None,
    /// A first clone, finished now (nothing in it is an edit).
    Clone,
    /// A preparation, rolled back: the tree is as it was before it (`changes` undone).
    RolledBack {
        /// How many changes were undone.
        changes: usize,
    },
    /// A preparation that had written its stamp: complete, only its journal was left.
    Completed,
    /// The `preparing` marker of an older qola, with no journal: files it left half-written are
    /// not known, so what differs from every known state is saved before it is replaced, and a
    /// missing file is one it had not written yet.
    Unjournaled,
}

/// A path that differs from the prepared state, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// The path (superproject-relative key).
    pub path: String,
    /// How it differs.
    pub how: How,
}

/// How a path differs from the prepared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// Its content.
    Content,
    /// Its mode only (the executable bit, or file and symlink).
    Mode,
    /// It is missing from the work tree.
    Missing,
    /// It is there, and the prepared state has no such path.
    Extra,
    /// Only in the index: staged apart from the work tree.
    Staged,
    /// Only in the index: removed from it (`git rm --cached`).
    Unstaged,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.how {
            How::Content => "content",
            How::Mode => "mode",
            How::Missing => "missing",
            How::Extra => "not in the prepared state",
            How::Staged => "only in the index: staged apart from the work tree",
            How::Unstaged => "only in the index: removed from it",
        };
        write!(f, "{} ({how})", shown(&self.path))
    }
}

/// How many paths a message names before it counts the rest.
pub(crate) const LIST_LIMIT: usize = 10;

/// One cause of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Why {
    /// There was no checkout (`cloned`: prepare cloned it; else status says it will).
    NoCheckout {
        /// The checkout's root.
        root: PathBuf,
        /// The URL cloned from.
        url: String,
        /// Whether the clone happened (prepare) or would happen (status).
        cloned: bool,
    },
    /// No stamp: the first preparation of this checkout.
    NoStamp,
    /// The stamp is corrupt or from another qola.
    UnreadableStamp,
    /// qola-build's version or the stamp schema changed.
    QolaVersion {
        /// The version that prepared the tree.
        old: String,
        /// This version.
        new: String,
    },
    /// `aiter_url` changed.
    Url {
        /// The URL the tree was prepared from.
        old: String,
        /// The URL now.
        new: String,
    },
    /// The resolved AITER commit changed.
    Commit {
        /// The commit the tree was prepared at.
        old: String,
        /// The commit now.
        new: String,
    },
    /// A patch was added to the series.
    PatchAdded(String),
    /// A patch's bytes changed.
    PatchChanged(String),
    /// A patch was removed from the series.
    PatchRemoved(String),
    /// A patch was renamed.
    PatchRenamed {
        /// Its old name.
        old: String,
        /// Its new name.
        new: String,
    },
    /// The series order changed.
    SeriesReordered,
    /// A previous preparation was interrupted, and what became of it.
    Interrupted(Resumed),
    /// `qola status`: a journal an interrupted preparation left waits for the next prepare.
    JournalPending {
        /// It is a first clone's (finished, not rolled back).
        clone: bool,
        /// How many changes it records.
        changes: usize,
    },
    /// A repository's `HEAD` is not at its pinned commit.
    HeadMoved {
        /// The repository's path ("" for AITER).
        repo: String,
        /// Its `HEAD` now.
        head: String,
        /// Its pinned commit.
        pinned: String,
    },
    /// A repository is not checked out.
    SubmoduleMissing(String),
    /// Paths of the prepared state are back at the pinned commit.
    PatchReverted(Vec<String>),
    /// Paths differ from the prepared state (nothing else explains it), each with how.
    Differs(Vec<Difference>),
    /// Paths hold ck-jit's codegen hints, left applied by a ck-jit run that did not end.
    CkJitHints(Vec<String>),
    /// The tree already was the prepared state: only the stamp is written.
    Adopted,
    /// `status` cannot know without fetching.
    FetchNeeded(String),
}

impl Why {
    /// The reason in words, with its kind for programs.
    pub(crate) fn reason(&self) -> Reason {
        let (kind, message) = match self {
            Why::NoCheckout { root, url, cloned } => (
                ReasonKind::NoCheckout,
                if *cloned {
                    format!("no checkout at {}: cloned {url}", root.display())
                } else {
                    format!(
                        "no checkout at {}: prepare will clone {url}",
                        root.display()
                    )
                },
            ),
            Why::NoStamp => (
                ReasonKind::NoStamp,
                "no stamp: first preparation of this checkout".to_string(),
            ),
            Why::UnreadableStamp => (
                ReasonKind::NoStamp,
                "the stamp is corrupt or from another qola: ignored".to_string(),
            ),
            Why::QolaVersion { old, new } => (
                ReasonKind::QolaVersion,
                format!("qola-build changed: {old} → {new}"),
            ),
            Why::Url { old, new } => (
                ReasonKind::ManifestField,
                format!("aiter_url changed: {old} → {new}"),
            ),
            Why::Commit { old, new } => (
                ReasonKind::Commit,
                format!(
                    "AITER commit changed: {} → {}",
                    short_id(old),
                    short_id(new)
                ),
            ),
            Why::PatchAdded(name) => (ReasonKind::PatchAdded, format!("patch added: {name}")),
            Why::PatchChanged(name) => (ReasonKind::PatchChanged, format!("patch changed: {name}")),
            Why::PatchRemoved(name) => (ReasonKind::PatchRemoved, format!("patch removed: {name}")),
            Why::PatchRenamed { old, new } => (
                ReasonKind::PatchRenamed,
                format!("patch renamed: {old} → {new}"),
            ),
            Why::SeriesReordered => (
                ReasonKind::PatchRenamed,
                "the series order changed".to_string(),
            ),
            Why::Interrupted(resumed) => (ReasonKind::Interrupted, resumed.said()),
            Why::JournalPending { clone, changes } => (
                ReasonKind::Interrupted,
                if *clone {
                    "an interrupted first clone waits: prepare finishes it".to_string()
                } else {
                    format!(
                        "an interrupted prepare left its journal ({changes} change(s)): prepare undoes them first, then prepares"
                    )
                },
            ),
            Why::HeadMoved { repo, head, pinned } => (
                ReasonKind::HeadMoved,
                format!(
                    "HEAD of {} moved to {} (pinned {}); the old HEAD is kept as refs/qola/kept/{head}",
                    repo_name(repo),
                    short_id(head),
                    short_id(pinned)
                ),
            ),
            Why::SubmoduleMissing(repo) => (
                ReasonKind::SubmoduleMissing,
                format!("{} is not checked out", repo_name(repo)),
            ),
            Why::PatchReverted(paths) => (
                ReasonKind::PatchReverted,
                format!(
                    "{} path(s) lost their patches (back at the pinned commit): {}",
                    paths.len(),
                    name_some(paths, LIST_LIMIT)
                ),
            ),
            Why::Differs(differences) => (
                ReasonKind::Differs,
                format!(
                    "the tree differs from the prepared state at: {}",
                    name_some(
                        &differences
                            .iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>(),
                        LIST_LIMIT
                    )
                ),
            ),
            Why::CkJitHints(paths) => (
                ReasonKind::CkJitHints,
                format!(
                    "ck-jit's codegen hints were left applied by a ck-jit run that did not end: undone in {}",
                    name_some(paths, LIST_LIMIT)
                ),
            ),
            Why::Adopted => (
                ReasonKind::Adopted,
                "the tree already is the prepared state: adopted it, no file rewritten".to_string(),
            ),
            Why::FetchNeeded(what) => (
                ReasonKind::FetchNeeded,
                format!("{what} first; `qola status` never fetches"),
            ),
        };
        Reason::new(kind, message)
    }
}

impl Resumed {
    /// What finishing an interrupted preparation did, in words.
    fn said(&self) -> String {
        match self {
            Resumed::RolledBack { changes } => format!(
                "finished an interrupted prepare: its {changes} change(s) were undone from its journal, then the tree was prepared"
            ),
            Resumed::Clone => {
                "finished an interrupted prepare: the first clone it had begun".to_string()
            }
            Resumed::Completed => {
                "finished an interrupted prepare: it had completed (its stamp was written)"
                    .to_string()
            }
            Resumed::Unjournaled | Resumed::None => {
                "a previous preparation was interrupted (the `preparing` marker of an older qola is still there)"
                    .to_string()
            }
        }
    }
}

/// A repository's name in messages.
fn repo_name(path: &str) -> &str {
    if path.is_empty() { "AITER" } else { path }
}

/// The first `limit` items joined, with a count of the rest.
pub(crate) fn name_some(items: &[String], limit: usize) -> String {
    let mut text = items
        .iter()
        .take(limit)
        .map(|item| shown(item))
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > limit {
        text.push_str(&format!(" (+{} more)", items.len() - limit));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One example of every reason, each naming something.
    fn examples() -> Vec<Why> {
        let path = |p: &str| p.to_string();
        vec![
            Why::NoCheckout {
                root: PathBuf::from("/c/aiter"),
                url: path("https://h/aiter"),
                cloned: true,
            },
            Why::NoStamp,
            Why::UnreadableStamp,
            Why::QolaVersion {
                old: path("0.1.0"),
                new: path("0.2.0"),
            },
            Why::Url {
                old: path("https://a"),
                new: path("https://b"),
            },
            Why::Commit {
                old: "a".repeat(40),
                new: "b".repeat(40),
            },
            Why::PatchAdded(path("0004.patch")),
            Why::PatchChanged(path("0001.patch")),
            Why::PatchRemoved(path("0002.patch")),
            Why::PatchRenamed {
                old: path("0001.patch"),
                new: path("0001-x.patch"),
            },
            Why::SeriesReordered,
            Why::Interrupted(Resumed::RolledBack { changes: 3 }),
            Why::JournalPending {
                clone: false,
                changes: 3,
            },
            Why::HeadMoved {
                repo: path(""),
                head: "c".repeat(40),
                pinned: "d".repeat(40),
            },
            Why::SubmoduleMissing(path("3rdparty/composable_kernel")),
            Why::PatchReverted(vec![path("csrc/a.h")]),
            Why::Differs(vec![Difference {
                path: path("csrc/qola_version.h"),
                how: How::Unstaged,
            }]),
            Why::CkJitHints(vec![path(
                "3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py",
            )]),
            Why::Adopted,
            Why::FetchNeeded(path("fetch `main` from https://h/aiter")),
        ]
    }

    #[test]
    fn every_reason_renders_the_path_or_list_it_is_about_and_nothing_empty() {
        let examples = examples();
        // No wildcard: a new kind of reason stops the build here until it has an example.
        let count = |w: &Why| match w {
            Why::NoCheckout { .. }
            | Why::NoStamp
            | Why::UnreadableStamp
            | Why::QolaVersion { .. }
            | Why::Url { .. }
            | Why::Commit { .. }
            | Why::PatchAdded(_)
            | Why::PatchChanged(_)
            | Why::PatchRemoved(_)
            | Why::PatchRenamed { .. }
            | Why::SeriesReordered
            | Why::Interrupted(_)
            | Why::JournalPending { .. }
            | Why::HeadMoved { .. }
            | Why::SubmoduleMissing(_)
            | Why::PatchReverted(_)
            | Why::Differs(_)
            | Why::CkJitHints(_)
            | Why::Adopted
            | Why::FetchNeeded(_) => 1,
        };
        let kinds: std::collections::BTreeSet<String> = examples
            .iter()
            .map(|w| format!("{:?}", std::mem::discriminant(w)))
            .collect();
        assert_eq!(kinds.len(), examples.iter().map(count).sum::<usize>());
        assert_eq!(kinds.len(), 20, "every kind of reason has one example");
        for why in &examples {
            let message = why.reason().message;
            assert!(!message.trim().is_empty(), "{why:?}");
            for empty in [": ,", ": (", ":  ", "()", ": ;"] {
                assert!(!message.contains(empty), "{why:?}: {message}");
            }
            assert!(!message.trim_end().ends_with(':'), "{why:?}: {message}");
            // What the reason is about is in its words.
            let about: Vec<String> = match why {
                Why::PatchReverted(paths) | Why::CkJitHints(paths) => paths.clone(),
                Why::Differs(d) => d.iter().map(|d| d.path.clone()).collect(),
                Why::SubmoduleMissing(p) | Why::PatchAdded(p) | Why::PatchChanged(p) => {
                    vec![p.clone()]
                }
                _ => Vec::new(),
            };
            for thing in about {
                assert!(message.contains(&thing), "{why:?}: {message}");
            }
        }
        // An index-only change says so.
        let message = Why::Differs(vec![Difference {
            path: "csrc/x.h".to_string(),
            how: How::Unstaged,
        }])
        .reason()
        .message;
        assert!(
            message.ends_with("csrc/x.h (only in the index: removed from it)"),
            "{message}"
        );
    }
}
