//! Reaching the network: cloning the superproject, resolving a commit spec, fetching what is
//! missing. Network access goes through the `git` command line ([`super::git_cli`]); a fetch
//! happens only when an object is missing (or when `aiter_commit` names a branch, which is
//! refreshed from `origin` on every prepare).

use std::path::Path;

use git2::{Oid, Repository};

use crate::build_script::Env;
use crate::common::hooks::Hooks;
use crate::common::io::io_error;
use crate::prepare::git::config::pin_config;
use crate::prepare::git::git_cli::GitCli;
use crate::prepare::git::url::is_local_url;
use crate::prepare::report::{PrepareError, Result, git_error};

/// How a run may reach the network.
#[derive(Clone, Copy)]
pub(crate) enum Network<'e> {
    /// `prepare`: fetch (clone) with `git` when something is missing.
    Fetch(Fetcher<'e>),
    /// `qola status` and `qola diff`: never fetch; what would need a fetch is said as
    /// [`Reach::NeedsFetch`].
    Never,
}

/// What a preparation fetches with: the `git` command, online or offline.
#[derive(Clone, Copy)]
pub(crate) struct Fetcher<'e> {
    /// Where `git` is looked up (`QOLA_GIT`).
    pub env: &'e Env<'e>,
    /// `QOLA_OFFLINE=1` / `CARGO_NET_OFFLINE=true`: a missing object is an error, unless the
    /// URL is a local path (`file://` or a directory), which needs no network.
    pub offline: bool,
    /// Tests' hooks (a kill after a clone).
    pub hooks: &'e Hooks,
}

/// What reaching for something gave: it, or (a run that never fetches) what fetching it would
/// be for.
pub(crate) enum Reach<T> {
    /// It is here.
    Got(T),
    /// It is not here; getting it needs a fetch, described.
    NeedsFetch(String),
}

impl Fetcher<'_> {
    /// The git command for `what` from `url`, or the error saying why the network cannot be
    /// used.
    pub(crate) fn git(&self, what: &str, root: &Path, url: &str) -> Result<GitCli> {
        if self.offline && !is_local_url(url) {
            return Err(PrepareError::Offline {
                what: what.to_string(),
                root: root.to_path_buf(),
            });
        }
        GitCli::find(self.env, what)
    }
}

impl Network<'_> {
    /// The git command for `what` from `url`, or, for a run that never fetches, what it would
    /// be for.
    pub(crate) fn git(&self, what: &str, root: &Path, url: &str) -> Result<Reach<GitCli>> {
        match self {
            Network::Fetch(fetcher) => fetcher.git(what, root, url).map(Reach::Got),
            Network::Never => Ok(Reach::NeedsFetch(what.to_string())),
        }
    }
}

/// Clones `url` into `root` without checking out files. The clone goes to a temporary sibling
/// first and is renamed into place, so an interrupted clone never looks like a checkout;
/// `before_rename` gets the clone's git directory just before the rename (what it writes there
/// travels with the clone).
pub(crate) fn clone_superproject(
    fetcher: &Fetcher,
    url: &str,
    root: &Path,
    before_rename: &dyn Fn(&Path) -> Result<()>,
) -> Result<Repository> {
    let git = fetcher.git(&format!("clone {url} into {}", root.display()), root, url)?;
    let parent = root.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io_error("create the directory", parent))?;
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "aiter".to_string());
    remove_partial_clones(root);
    let partial = parent.join(format!(".{name}.qola-clone-{}", std::process::id()));
    let cloned = clone_into(&git, url, root, parent, &partial, before_rename);
    if cloned.is_err() {
        // Nothing of a failed clone stays behind.
        let _ = std::fs::remove_dir_all(&partial);
    }
    cloned
}

/// The clone itself, into `partial`, then renamed to `root`.
fn clone_into(
    git: &GitCli,
    url: &str,
    root: &Path,
    parent: &Path,
    partial: &Path,
    before_rename: &dyn Fn(&Path) -> Result<()>,
) -> Result<Repository> {
    git.run(
        parent,
        &[
            "clone",
            "--quiet",
            "--no-checkout",
            "--origin",
            "origin",
            url,
            &partial.to_string_lossy(),
        ],
        &format!("clone AITER into {}", root.display()),
        "check aiter_url and your network/credentials; run the command above by hand to see more",
    )?;
    before_rename(&partial.join(".git"))?;
    if root.exists() {
        // `open_checkout` saw no checkout here: at most an empty directory.
        std::fs::remove_dir(root).map_err(io_error("replace the empty directory", root))?;
    }
    std::fs::rename(partial, root).map_err(io_error("move the new clone to", root))?;
    let repo = Repository::open(root).map_err(git_error("open the new clone", root))?;
    pin_config(&repo, root)?;
    Ok(repo)
}

/// Removes the temporary directories of clones killed before their rename into place (they are
/// garbage: the caller holds the checkout's lock, so no clone of this checkout is running): the
/// superproject's, beside `root`, and any submodule's, under `.git/modules/`.
pub(crate) fn remove_partial_clones(root: &Path) {
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return;
    };
    let prefix = format!(".{}.qola-clone-", name.to_string_lossy());
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let mut dirs = vec![root.join(".git/modules")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".qola-clone-") {
                let _ = std::fs::remove_dir_all(entry.path());
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(entry.path().join("modules"));
            }
        }
    }
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Looks `spec` up locally without trusting local branches: a full SHA, a tag, a short SHA, or
/// (`remote_branch`) `origin`'s branch as last fetched.
fn lookup(repo: &Repository, spec: &str, remote_branch: bool) -> Option<Oid> {
    let peel = |name: &str| {
        repo.revparse_single(name)
            .ok()
            .and_then(|o| o.peel_to_commit().ok())
            .map(|c| c.id())
    };
    if spec.len() == 40 && is_hex(spec) {
        let id = Oid::from_str(spec).ok()?;
        return repo.find_commit(id).ok().map(|c| c.id());
    }
    peel(&format!("refs/tags/{spec}"))
        .or_else(|| {
            (spec.len() >= 4 && is_hex(spec))
                .then(|| peel(spec))
                .flatten()
        })
        .or_else(|| {
            remote_branch
                .then(|| peel(&format!("refs/remotes/origin/{spec}")))
                .flatten()
        })
}

/// Resolves `spec` (full or short SHA, tag, branch) to a commit of the checkout, fetching only
/// when needed. Returns the commit and a warning when an offline build (or a run that never
/// fetches) used a branch as last fetched.
pub(crate) fn resolve_commit(
    repo: &Repository,
    root: &Path,
    spec: &str,
    url: &str,
    net: &Network,
) -> Result<Reach<(Oid, Option<String>)>> {
    let looks_like_sha = is_hex(spec) && spec.len() >= 4;
    if let Some(id) = lookup(repo, spec, false) {
        return Ok(Reach::Got((id, None)));
    }
    let not_found = |detail: &str| PrepareError::CommitNotFound {
        spec: spec.to_string(),
        url: url.to_string(),
        root: root.to_path_buf(),
        detail: detail.to_string(),
    };
    if !looks_like_sha && let Some(id) = lookup(repo, spec, true) {
        let warning = match net {
            Network::Fetch(Fetcher { offline: true, .. }) => Some(format!(
                "offline: using branch `{spec}` as last fetched (origin/{spec} = {id})"
            )),
            Network::Never => Some(format!(
                "status does not fetch: branch `{spec}` as last fetched (origin/{spec} = {id}); `prepare` fetches it first and follows it if it moved"
            )),
            Network::Fetch(_) => None,
        };
        if let Some(warning) = warning {
            return Ok(Reach::Got((id, Some(warning))));
        }
    }
    let git = match net.git(&format!("fetch `{spec}` from {url}"), root, url)? {
        Reach::Got(git) => git,
        Reach::NeedsFetch(what) => return Ok(Reach::NeedsFetch(what)),
    };
    let hint = "check aiter_commit and aiter_url; run the command above by hand to see more";
    if !looks_like_sha {
        // A branch: refresh it from origin every time (never trust a stale local ref).
        let refspec = format!("+refs/heads/{spec}:refs/remotes/origin/{spec}");
        if git
            .run(
                root,
                &["fetch", "--quiet", url, &refspec],
                "fetch a branch",
                hint,
            )
            .is_ok()
        {
            return lookup(repo, spec, true)
                .map(|id| Reach::Got((id, None)))
                .ok_or_else(|| not_found("; the branch fetched but did not resolve"));
        }
    } else if spec.len() == 40 {
        let _ = git.run(
            root,
            &["fetch", "--quiet", url, spec],
            "fetch a commit",
            hint,
        );
        if let Some(id) = lookup(repo, spec, false) {
            return Ok(Reach::Got((id, None)));
        }
    }
    fetch_all(&git, root, url, hint)?;
    lookup(repo, spec, !looks_like_sha)
        .map(|id| Reach::Got((id, None)))
        .ok_or_else(|| not_found("; not found after fetching all branches and tags"))
}

/// Fetches every branch and tag of `url` (the URL itself, not the `origin` remote: a changed URL
/// is written to the config only when the tree is written).
fn fetch_all(git: &GitCli, workdir: &Path, url: &str, hint: &str) -> Result<()> {
    git.run(
        workdir,
        &[
            "fetch",
            "--quiet",
            "--tags",
            url,
            "+refs/heads/*:refs/remotes/origin/*",
        ],
        "fetch all branches and tags",
        hint,
    )
}

/// Makes sure `commit` exists in the repository at `workdir`, fetching it if needed.
pub(crate) fn ensure_commit(
    repo: &Repository,
    workdir: &Path,
    commit: Oid,
    url: &str,
    net: &Network,
) -> Result<Reach<()>> {
    if repo.find_commit(commit).is_ok() {
        return Ok(Reach::Got(()));
    }
    let git = match net.git(
        &format!("fetch commit {commit} into {}", workdir.display()),
        workdir,
        url,
    )? {
        Reach::Got(git) => git,
        Reach::NeedsFetch(what) => return Ok(Reach::NeedsFetch(what)),
    };
    let hint = "the pinned commit records a submodule commit its remote does not have";
    let sha = commit.to_string();
    if git
        .run(
            workdir,
            &["fetch", "--quiet", url, &sha],
            "fetch a commit",
            hint,
        )
        .is_err()
    {
        fetch_all(&git, workdir, url, hint)?;
    }
    repo.find_commit(commit)
        .map(|_| Reach::Got(()))
        .map_err(git_error(
            &format!("find commit {commit} after fetching"),
            workdir,
        ))
}
