//! Git access: everything preparation reads from or writes to the repositories themselves.
//!
//! * [`fetch`]: the network (clone, commit resolution, fetching what is missing), through the
//!   `git` command line ([`git_cli`]); everything else is in-process with git2.
//! * [`checkout`]: opening the managed checkout; [`pinned`]: its repositories at their pinned
//!   commits, read path by path, and what connects them; [`submodule`]: a submodule opened (or
//!   cloned) as git lays it out; [`config`]: each repository's own configuration.
//! * [`state`]: what a path is in the work tree (mode and blob id, content); [`index_file`]:
//!   the index file read directly; [`untracked_paths`]: the files git does not track.
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
mod untracked;
pub(crate) mod url;

pub(crate) use index_file::{content_digest, file_paths_and_digest};

pub(crate) use url::{clone_url, normalize_url};

pub(crate) use untracked::untracked_paths;

pub(crate) use lock::lock_checkout;

pub(crate) use fetch::{
    Fetcher, Network, Reach, clone_superproject, remove_partial_clones, resolve_commit,
};

pub(crate) use checkout::open_checkout;

pub(crate) use pinned::{Pinned, PinnedRepo, Pristine, gitlinks};

pub(crate) use state::{
    Entry, FileContent, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK, PathState, blob_id,
    workdir_content, workdir_entry,
};

/// The commit a repository's `HEAD` points at (`None`: unborn or unreadable).
pub(crate) fn head_commit(repo: &git2::Repository) -> Option<git2::Oid> {
    repo.head().ok()?.target()
}
