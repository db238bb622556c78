//! Git access: everything preparation reads from or writes to the repositories themselves.
//!
//! * [`fetch`]: the network (clone, commit resolution, fetching what is missing), through the
//!   `git` command line ([`git_cli`]); everything else is in-process with git2.
//! * [`checkout`]: opening the managed checkout; [`pinned`]: its repositories at their pinned
//!   commits, read path by path, and what connects them; [`submodule`]: a submodule opened (or
//!   cloned) as git lays it out; [`config`]: each repository's own configuration.
//! * [`state`]: what a path is in the work tree (mode and blob id, content); [`index_file`]:
//!   the index file read directly; [`untracked`]: the files git does not track.
//! * [`lock`]: one preparation of a checkout at a time; [`url`]: AITER URLs.

pub(crate) mod checkout;
pub(crate) mod config;
pub(crate) mod fetch;
pub(crate) mod git_cli;
pub(crate) mod index_file;
pub(crate) mod lock;
pub(crate) mod pinned;
pub(crate) mod state;
pub(crate) mod submodule;
pub(crate) mod untracked;
pub(crate) mod url;

/// The commit a repository's `HEAD` points at (`None`: unborn or unreadable).
pub(crate) fn head_commit(repo: &git2::Repository) -> Option<git2::Oid> {
    repo.head().ok()?.target()
}
