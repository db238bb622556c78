//! The managed checkout: clone, commit resolution, fetching what is missing, and the
//! repositories of the pinned state (the superproject and every submodule, recursively, each at
//! the commit its parent's pinned tree records).
//!
//! Network access goes through the `git` command line ([`crate::prepare::git_cli`]); everything else is
//! done in-process with git2. A fetch happens only when an object is missing (or when
//! `aiter_commit` names a branch, which is refreshed from `origin` on every prepare).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

use crate::build_script::Env;
use crate::error::{PrepareError, Result, git_error, io_error};
use crate::prepare::git_cli::GitCli;
use crate::prepare::patch::{FileContent, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK};
use crate::prepare::state::{Entry, PathState};
use crate::util::join;

/// How a preparation may reach the network.
pub(crate) enum Network<'e> {
    /// Clone and fetch with `git` when something is missing.
    Online(&'e Env<'e>),
    /// `QOLA_OFFLINE=1` / `CARGO_NET_OFFLINE=true`: a missing object is an error, unless the
    /// URL is a local path (`file://` or a directory), which needs no network.
    Offline(&'e Env<'e>),
    /// `qola status`: never fetch; a missing object is reported as [`PrepareError::FetchNeeded`].
    Never,
}

impl Network<'_> {
    /// The git command for `what` from `url`, or the error saying why the network cannot be
    /// used.
    fn git(&self, what: &str, root: &Path, url: &str) -> Result<GitCli> {
        match self {
            Network::Online(env) => GitCli::find(env, what),
            Network::Offline(env) if crate::prepare::settings::is_local_url(url) => {
                GitCli::find(env, what)
            }
            Network::Offline(_) => Err(PrepareError::Offline {
                what: what.to_string(),
                root: root.to_path_buf(),
            }
            .into()),
            Network::Never => Err(PrepareError::FetchNeeded {
                what: what.to_string(),
            }
            .into()),
        }
    }
}

/// Opens the checkout at `root`; `None` when there is none yet (missing or empty directory).
pub(crate) fn open_checkout(root: &Path) -> Result<Option<Repository>> {
    if std::fs::symlink_metadata(root).is_ok_and(|m| !m.is_dir()) && !root.is_dir() {
        return Err(PrepareError::NotACheckout {
            root: root.to_path_buf(),
            why: "it is a file, not a directory: choose another root (--root, QOLA_AITER_ROOT) or move the file away".to_string(),
        }.into());
    }
    match std::fs::read_dir(root) {
        Err(e) if crate::util::is_absent(&e) => return Ok(None),
        Err(e) => return Err(io_error("read the checkout directory", root)(e)),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(None);
            }
        }
    }
    let repo = Repository::open(root).map_err(|e| PrepareError::NotACheckout {
        root: root.to_path_buf(),
        why: e.message().to_string(),
    })?;
    let workdir_matches = repo
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .zip(root.canonicalize().ok())
        .is_some_and(|(w, r)| w == r);
    if !workdir_matches {
        return Err(PrepareError::NotACheckout {
            root: root.to_path_buf(),
            why: "it is inside another repository, not the root of its own".to_string(),
        }
        .into());
    }
    Ok(Some(repo))
}

/// Clones `url` into `root` without checking out files. The clone goes to a temporary sibling
/// first and is renamed into place, so an interrupted clone never looks like a checkout.
pub(crate) fn clone_superproject(net: &Network, url: &str, root: &Path) -> Result<Repository> {
    let git = net.git(&format!("clone {url} into {}", root.display()), root, url)?;
    let parent = root.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io_error("create the directory", parent))?;
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "aiter".to_string());
    remove_partial_clones(root);
    let partial = parent.join(format!(".{name}.qola-clone-{}", std::process::id()));
    let cloned = clone_into(&git, url, root, parent, &partial);
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
    // The `preparing` marker travels with the rename: a run killed before the tree is written
    // finds it and recovers, instead of taking the unwritten tree for local edits.
    crate::prepare::stamp::QolaDir::new(&partial.join(".git")).write_marker("clone")?;
    if root.exists() {
        // `open_checkout` saw no checkout here: at most an empty directory.
        std::fs::remove_dir(root).map_err(io_error("replace the empty directory", root))?;
    }
    std::fs::rename(partial, root).map_err(io_error("move the new clone to", root))?;
    let repo = Repository::open(root).map_err(git_error("open the new clone", root))?;
    pin_config(&repo, root)?;
    Ok(repo)
}

/// Removes the temporary directories of clones killed before their rename into `root` (they are
/// garbage: the caller holds the checkout's lock, so no clone of this checkout is running).
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
}

/// Pins `core.autocrlf=false` and `core.filemode=true` in the repository's own config (never the
/// global one), writing only what differs.
pub(crate) fn pin_config(repo: &Repository, root: &Path) -> Result<()> {
    let config = repo.config().map_err(git_error("read the config", root))?;
    let mut local = config
        .open_level(git2::ConfigLevel::Local)
        .map_err(git_error("open the repository config", root))?;
    if local.get_bool("core.autocrlf").ok() != Some(false) {
        local
            .set_bool("core.autocrlf", false)
            .map_err(git_error("set core.autocrlf=false", root))?;
    }
    if local.get_bool("core.filemode").ok() != Some(true) {
        local
            .set_bool("core.filemode", true)
            .map_err(git_error("set core.filemode=true", root))?;
    }
    Ok(())
}

/// Makes `origin` point at `url` (a changed `aiter_url`).
pub(crate) fn set_origin(repo: &Repository, url: &str, root: &Path) -> Result<()> {
    let current = repo
        .find_remote("origin")
        .ok()
        .and_then(|r| r.url().ok().map(String::from));
    if current.as_deref() != Some(url) {
        if current.is_none() {
            repo.remote("origin", url)
                .map_err(git_error("add the origin remote", root))?;
        } else {
            repo.remote_set_url("origin", url)
                .map_err(git_error("set the origin URL", root))?;
        }
    }
    Ok(())
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
/// when needed. Returns the commit and a warning when an offline build used a branch as last
/// fetched.
pub(crate) fn resolve_commit(
    repo: &Repository,
    root: &Path,
    spec: &str,
    url: &str,
    net: &Network,
) -> Result<(Oid, Option<String>)> {
    let looks_like_sha = is_hex(spec) && spec.len() >= 4;
    if let Some(id) = lookup(repo, spec, false) {
        return Ok((id, None));
    }
    let not_found = |detail: &str| {
        PrepareError::CommitNotFound {
            spec: spec.to_string(),
            url: url.to_string(),
            root: root.to_path_buf(),
            detail: detail.to_string(),
        }
        .into()
    };
    if !looks_like_sha && let Some(id) = lookup(repo, spec, true) {
        let warning = match net {
            Network::Offline(_) => Some(format!(
                "offline: using branch `{spec}` as last fetched (origin/{spec} = {id})"
            )),
            Network::Never => Some(format!(
                "status does not fetch: branch `{spec}` as last fetched (origin/{spec} = {id}); `prepare` fetches it first and follows it if it moved"
            )),
            Network::Online(_) => None,
        };
        if let Some(warning) = warning {
            return Ok((id, Some(warning)));
        }
    }
    let git = net.git(&format!("fetch `{spec}` from {url}"), root, url)?;
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
                .map(|id| (id, None))
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
            return Ok((id, None));
        }
    }
    fetch_all(&git, root, url, hint)?;
    lookup(repo, spec, !looks_like_sha)
        .map(|id| (id, None))
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
fn ensure_commit(
    repo: &Repository,
    workdir: &Path,
    commit: Oid,
    url: &str,
    net: &Network,
) -> Result<()> {
    if repo.find_commit(commit).is_ok() {
        return Ok(());
    }
    let git = net.git(
        &format!("fetch commit {commit} into {}", workdir.display()),
        workdir,
        url,
    )?;
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
    repo.find_commit(commit).map(|_| ()).map_err(git_error(
        &format!("find commit {commit} after fetching"),
        workdir,
    ))
}

/// One repository of the pinned state.
pub(crate) struct PinnedRepo {
    /// Path in the superproject ("" for the superproject itself).
    pub path: String,
    /// Its work tree.
    pub workdir: PathBuf,
    /// The opened repository.
    pub repo: Repository,
    /// The commit the pinned state records for it.
    pub commit: Oid,
    /// Cloned by this run, or its work tree is not attached (a deinit-ed submodule, a new
    /// worktree): it must be checked out.
    pub fresh: bool,
    /// The URL its `origin` must have (a submodule's follows its superproject's).
    pub url: String,
    /// A submodule's name in `.gitmodules` (`None` for the superproject).
    pub name: Option<String>,
}

/// A path of the pinned state, read from the object database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pristine {
    /// No such path.
    Absent,
    /// A file or symlink.
    File(FileContent),
    /// A submodule.
    Gitlink,
    /// A directory.
    Directory,
}

/// The superproject and its submodules (recursively), each at its pinned commit.
pub(crate) struct Pinned {
    /// The superproject first, then submodules in path order.
    pub repos: Vec<PinnedRepo>,
}

/// Normalizes git's file modes (100664 is an old spelling of 100644).
fn normalize_mode(mode: i32) -> u32 {
    match mode as u32 {
        MODE_EXEC => MODE_EXEC,
        MODE_SYMLINK => MODE_SYMLINK,
        MODE_GITLINK => MODE_GITLINK,
        0o040000 => 0o040000,
        _ => MODE_FILE,
    }
}

/// The gitlinks (submodule path, commit) of a commit's tree.
pub(crate) fn gitlinks(
    repo: &Repository,
    commit: Oid,
    workdir: &Path,
) -> Result<Vec<(String, Oid)>> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(git_error(&format!("read the tree of {commit}"), workdir))?;
    let mut links = Vec::new();
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        if entry.filemode() as u32 == MODE_GITLINK {
            links.push((format!("{dir}{}", entry.name().unwrap_or("")), entry.id()));
        }
        TreeWalkResult::Ok
    })
    .map_err(git_error("walk the pinned tree", workdir))?;
    Ok(links)
}

/// `name` and `url` of each submodule path, from `.gitmodules` at `commit`.
fn submodule_config(
    repo: &Repository,
    commit: Oid,
    workdir: &Path,
    root: &Path,
) -> Result<BTreeMap<String, (String, String)>> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(git_error(&format!("read the tree of {commit}"), workdir))?;
    let Ok(entry) = tree.get_path(Path::new(".gitmodules")) else {
        return Ok(BTreeMap::new());
    };
    let blob = repo
        .find_blob(entry.id())
        .map_err(git_error("read .gitmodules", workdir))?;
    // git2 parses config files only from disk: give it a private copy beside the checkout (where
    // its lock is), never inside it.
    let copy = crate::prepare::lock::lock_path(root)
        .with_extension(format!("gitmodules-{}-{commit}", std::process::id()));
    std::fs::write(&copy, blob.content()).map_err(io_error("write", &copy))?;
    let config = git2::Config::open(&copy).map_err(git_error("parse .gitmodules", &copy));
    // Parsed into memory: the copy is not needed any more, whatever happens next.
    let _ = std::fs::remove_file(&copy);
    let config = config?;
    let mut paths = BTreeMap::new();
    let mut urls = BTreeMap::new();
    let mut entries = config
        .entries(Some(r"^submodule\..*\.(path|url)$"))
        .map_err(git_error("read .gitmodules", &copy))?;
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(git_error("read .gitmodules", &copy))?;
        let (Some(key), Some(value)) = (entry.name().ok(), entry.value().ok()) else {
            continue;
        };
        let Some(rest) = key.strip_prefix("submodule.") else {
            continue;
        };
        if let Some(name) = rest.strip_suffix(".path") {
            paths.insert(name.to_string(), value.to_string());
        } else if let Some(name) = rest.strip_suffix(".url") {
            urls.insert(name.to_string(), value.to_string());
        }
    }
    Ok(paths
        .into_iter()
        .filter_map(|(name, path)| {
            let url = urls.get(&name)?.clone();
            Some((path, (name, url)))
        })
        .collect())
}

/// Resolves a submodule URL relative to its superproject's (`../ck.git`, `./x`).
pub(crate) fn resolve_relative_url(base: &str, url: &str) -> String {
    if !(url.starts_with("./") || url.starts_with("../")) {
        return url.to_string();
    }
    let mut base = base.trim_end_matches('/').to_string();
    let mut rest = url;
    loop {
        if let Some(r) = rest.strip_prefix("./") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("../") {
            rest = r;
            let cut = base.rfind(['/', ':']).unwrap_or(0);
            base.truncate(cut);
        } else {
            break;
        }
    }
    format!("{base}/{rest}")
}

impl Pinned {
    /// Opens (and with `net`, clones or fetches) every repository of the pinned state.
    pub(crate) fn open(
        root: &Path,
        repo: Repository,
        commit: Oid,
        url: &str,
        fresh: bool,
        net: &Network,
    ) -> Result<Pinned> {
        let mut repos = vec![PinnedRepo {
            path: String::new(),
            workdir: root.to_path_buf(),
            repo,
            commit,
            fresh,
            url: url.to_string(),
            name: None,
        }];
        let mut next = 0;
        while next < repos.len() {
            let links = gitlinks(&repos[next].repo, repos[next].commit, &repos[next].workdir)?;
            if links.is_empty() {
                next += 1;
                continue;
            }
            let parent = &repos[next];
            let config = submodule_config(&parent.repo, parent.commit, &parent.workdir, root)?;
            let mut found = Vec::new();
            for (path, sub_commit) in links {
                let full = join(&parent.path, &path);
                let workdir = root.join(&full);
                let Some((name, sub_url)) = config.get(&path).cloned() else {
                    return Err(PrepareError::Submodule {
                        path: full,
                        root: root.to_path_buf(),
                        why: "the pinned commit has a gitlink here but no .gitmodules entry; pin another commit".to_string(),
                    }.into());
                };
                let sub_url = resolve_relative_url(&parent.url, &sub_url);
                let (repo, fresh) = match open_submodule(&workdir) {
                    Some(repo) => (repo, false),
                    None => (
                        open_detached_submodule(parent, &path, &name, &sub_url, net, root)?,
                        true,
                    ),
                };
                ensure_commit(&repo, &workdir, sub_commit, &sub_url, net)?;
                found.push(PinnedRepo {
                    path: full,
                    workdir,
                    repo,
                    commit: sub_commit,
                    fresh,
                    url: sub_url,
                    name: Some(name),
                });
            }
            repos.extend(found);
            next += 1;
        }
        repos[1..].sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Pinned { repos })
    }

    /// The repository owning `path` and the path relative to it.
    pub(crate) fn owner<'p>(&self, path: &'p str) -> (&PinnedRepo, &'p str) {
        let mut best = &self.repos[0];
        let mut rel = path;
        for r in &self.repos[1..] {
            if let Some(rest) = path.strip_prefix(r.path.as_str()) {
                let rest = if rest.is_empty() {
                    Some("")
                } else {
                    rest.strip_prefix('/')
                };
                if let Some(rest) = rest
                    && r.path.len() >= best.path.len()
                {
                    best = r;
                    rel = rest;
                }
            }
        }
        (best, rel)
    }

    /// `HEAD` of every repository as the pinned state has it.
    pub(crate) fn heads(&self) -> BTreeMap<String, Option<String>> {
        self.repos
            .iter()
            .map(|r| (r.path.clone(), Some(r.commit.to_string())))
            .collect()
    }

    /// Reads `path` at the pinned commits.
    pub(crate) fn read(&self, path: &str) -> Result<Pristine> {
        let (owner, rel) = self.owner(path);
        if rel.is_empty() {
            return Ok(if owner.path.is_empty() {
                Pristine::Directory
            } else {
                Pristine::Gitlink
            });
        }
        let Some(entry) = tree_entry(&owner.repo, owner.commit, rel, &owner.workdir)? else {
            return Ok(Pristine::Absent);
        };
        let mode = normalize_mode(entry.filemode());
        match entry.kind() {
            _ if mode == MODE_GITLINK => Ok(Pristine::Gitlink),
            Some(ObjectType::Tree) => Ok(Pristine::Directory),
            _ => {
                let blob = owner
                    .repo
                    .find_blob(entry.id())
                    .map_err(git_error(&format!("read {path}"), &owner.workdir))?;
                Ok(Pristine::File(FileContent {
                    mode,
                    data: blob.content().to_vec(),
                }))
            }
        }
    }

    /// The files (and symlinks) under the directory `dir` at the pinned commits.
    pub(crate) fn files_under(&self, dir: &str) -> Result<Vec<String>> {
        let (owner, rel) = self.owner(dir);
        let Some(entry) = tree_entry(&owner.repo, owner.commit, rel, &owner.workdir)? else {
            return Ok(Vec::new());
        };
        let tree = owner.repo.find_tree(entry.id()).map_err(git_error(
            &format!("read the directory {dir}"),
            &owner.workdir,
        ))?;
        let mut files = Vec::new();
        tree.walk(TreeWalkMode::PreOrder, |parent, e| {
            if e.kind() != Some(ObjectType::Tree) {
                let name = crate::prepare::tree_path::key(e.name_bytes());
                files.push(format!("{dir}/{parent}{name}"));
            }
            TreeWalkResult::Ok
        })
        .map_err(git_error(
            &format!("walk the directory {dir}"),
            &owner.workdir,
        ))?;
        Ok(files)
    }

    /// The content of the blob `entry` names, from the repository owning `path` (a staged
    /// version of it).
    pub(crate) fn blob(&self, path: &str, entry: Option<&Entry>) -> Result<Option<FileContent>> {
        let Some(entry) = entry else {
            return Ok(None);
        };
        let (owner, _) = self.owner(path);
        let blob = Oid::from_str(&entry.id)
            .and_then(|id| owner.repo.find_blob(id))
            .map_err(git_error(
                &format!("read the staged {path}"),
                &owner.workdir,
            ))?;
        Ok(Some(FileContent {
            mode: entry.mode,
            data: blob.content().to_vec(),
        }))
    }

    /// The state of `path` in the commit `heads` gives for its repository (`None`: unknown, for
    /// example the commit is not in the repository).
    pub(crate) fn state_at(
        &self,
        heads: &BTreeMap<String, Option<String>>,
        path: &str,
    ) -> Result<Option<PathState>> {
        let (owner, rel) = self.owner(path);
        let Some(Some(commit)) = heads.get(&owner.path) else {
            return Ok(None);
        };
        let Ok(commit) = Oid::from_str(commit) else {
            return Ok(None);
        };
        if owner.repo.find_commit(commit).is_err() {
            return Ok(None);
        }
        let entry = tree_entry(&owner.repo, commit, rel, &owner.workdir)?;
        Ok(Some(entry.and_then(|e| {
            let mode = normalize_mode(e.filemode());
            (mode == MODE_FILE || mode == MODE_EXEC || mode == MODE_SYMLINK).then(|| Entry {
                mode,
                id: e.id().to_string(),
            })
        })))
    }

    /// Paths whose content differs between the pinned commit and `head` of the repository at
    /// `repo_path` (commits the user made or checked out there).
    pub(crate) fn changed_since_pinned(&self, repo_path: &str, head: &str) -> Result<Vec<String>> {
        let Some(r) = self.repos.iter().find(|r| r.path == repo_path) else {
            return Ok(Vec::new());
        };
        let Ok(head) = Oid::from_str(head) else {
            return Ok(Vec::new());
        };
        let tree = |id: Oid| r.repo.find_commit(id).and_then(|c| c.tree());
        let (Ok(old), Ok(new)) = (tree(r.commit), tree(head)) else {
            return Ok(Vec::new());
        };
        let diff = r
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(git_error("compare HEAD with the pinned commit", &r.workdir))?;
        Ok(diff
            .deltas()
            .filter_map(|d| d.new_file().path().or(d.old_file().path()))
            .map(|p| {
                let rel = crate::prepare::tree_path::key(p.as_os_str().as_encoded_bytes());
                join(&r.path, &rel)
            })
            .collect())
    }
}

/// The tree entry at `rel` in `commit`, if any.
fn tree_entry(
    repo: &Repository,
    commit: Oid,
    rel: &str,
    workdir: &Path,
) -> Result<Option<git2::TreeEntry<'static>>> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(git_error(&format!("read the tree of {commit}"), workdir))?;
    match tree.get_path(&crate::prepare::tree_path::as_path(rel)) {
        Ok(entry) => Ok(Some(entry)),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(git_error(&format!("look up {rel}"), workdir)(e)),
    }
}

/// Opens a checked-out submodule at `workdir` (its own repository, not the superproject).
fn open_submodule(workdir: &Path) -> Option<Repository> {
    if !workdir.join(".git").exists() {
        return None;
    }
    let repo = Repository::open(workdir).ok()?;
    let same = repo.workdir()?.canonicalize().ok()? == workdir.canonicalize().ok()?;
    same.then_some(repo)
}

/// Opens a submodule whose work tree is not attached (never checked out, `git submodule
/// deinit`, a new worktree) from its git directory under the parent's `modules/`, cloning it
/// first when that directory does not exist yet (the clone writes the `.git` link). An existing
/// one is only opened: its `.git` link and configuration are written by [`Pinned::attach`] when
/// the tree is, so a refused run writes nothing.
fn open_detached_submodule(
    parent: &PinnedRepo,
    path: &str,
    name: &str,
    url: &str,
    net: &Network,
    root: &Path,
) -> Result<Repository> {
    let workdir = parent.workdir.join(path);
    let gitdir = modules_dir(parent, name);
    if !gitdir.join("HEAD").exists() {
        let git = net.git(&format!("clone submodule {path} from {url}"), root, url)?;
        if let Ok(mut entries) = std::fs::read_dir(&workdir)
            && entries.next().is_some()
        {
            return Err(PrepareError::Submodule {
                path: path.to_string(),
                root: root.to_path_buf(),
                why: format!(
                    "{} is not empty but has no repository; move its files away and prepare again",
                    workdir.display()
                ),
            }
            .into());
        }
        if let Some(dir) = gitdir.parent() {
            std::fs::create_dir_all(dir).map_err(io_error("create the directory", dir))?;
        }
        git.run(
            &parent.workdir,
            &[
                "clone",
                "--quiet",
                "--no-checkout",
                "--separate-git-dir",
                &gitdir.to_string_lossy(),
                url,
                &workdir.to_string_lossy(),
            ],
            &format!("clone submodule {path}"),
            "check the submodule URL in .gitmodules of the pinned commit and your network/credentials",
        )?;
        return Repository::open(&workdir).map_err(git_error("open the submodule", &workdir));
    }
    // Its `core.worktree` names the work tree: libgit2 finds it from the git directory.
    Repository::open(&gitdir).map_err(git_error("open the submodule's repository", &gitdir))
}

/// The git directory of the submodule `name` of `parent`, as git lays it out.
fn modules_dir(parent: &PinnedRepo, name: &str) -> PathBuf {
    parent.repo.path().join("modules").join(name)
}

/// Writes `<workdir>/.git` pointing at `gitdir` (relative, as git does).
fn write_gitdir_link(workdir: &Path, gitdir: &Path) -> Result<()> {
    std::fs::create_dir_all(workdir).map_err(io_error("create", workdir))?;
    let dotgit = workdir.join(".git");
    let to_gitdir = relative_path(workdir, gitdir);
    std::fs::write(&dotgit, format!("gitdir: {}\n", to_gitdir.display()))
        .map_err(io_error("write", &dotgit))
}

impl PinnedRepo {
    /// Restores a submodule's `.git` link file when a checkout of its parent removed it (libgit2
    /// clears a submodule directory the parent's work tree does not know yet).
    pub(crate) fn ensure_gitdir_link(&self) -> Result<()> {
        if self.path.is_empty() || self.workdir.join(".git").exists() {
            return Ok(());
        }
        write_gitdir_link(&self.workdir, self.repo.path())
    }
}

impl Pinned {
    /// Writes what connects each repository as git lays it out, where it differs: `origin` at
    /// its URL (a changed `aiter_url` reaches the submodules), a submodule's `.git` link file, its
    /// `core.worktree` (the layout git uses: both relative) and its URL in the parent's config.
    /// Called only when the tree is written: a refused run writes none of it.
    pub(crate) fn attach(&mut self, root: &Path) -> Result<()> {
        for i in 0..self.repos.len() {
            let repo = &self.repos[i];
            set_origin(&repo.repo, &repo.url, &repo.workdir)?;
            pin_config(&repo.repo, &repo.workdir)?;
            let Some(name) = &repo.name else {
                continue;
            };
            repo.ensure_gitdir_link()?;
            let to_workdir = relative_path(repo.repo.path(), &repo.workdir)
                .to_string_lossy()
                .into_owned();
            let gitdir = repo.repo.path().to_path_buf();
            set_config(&repo.repo, "core.worktree", &to_workdir, &gitdir)?;
            let parent = self.repos[..i]
                .iter()
                .rfind(|p| p.path.is_empty() || repo.path.starts_with(&format!("{}/", p.path)))
                .expect("a submodule has a parent");
            set_config(
                &parent.repo,
                &format!("submodule.{name}.url"),
                &repo.url,
                root,
            )?;
            // Opened from its git directory, it may not know its work tree yet (`git submodule
            // deinit` unsets `core.worktree`): open it again through the link.
            let workdir = repo.workdir.clone();
            self.repos[i].repo =
                Repository::open(&workdir).map_err(git_error("open the submodule", &workdir))?;
        }
        Ok(())
    }
}

/// Sets `key` in the repository's own config when it differs.
fn set_config(repo: &Repository, key: &str, value: &str, at: &Path) -> Result<()> {
    let mut local = repo
        .config()
        .and_then(|c| c.open_level(git2::ConfigLevel::Local))
        .map_err(git_error("open the repository config", at))?;
    if local.get_string(key).ok().as_deref() != Some(value) {
        local
            .set_str(key, value)
            .map_err(git_error(&format!("set {key}"), at))?;
    }
    Ok(())
}

/// `to` as a path relative to the directory `from` (both made absolute).
fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let absolute = |p: &Path| {
        p.canonicalize()
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    let (from, to) = (absolute(from), absolute(to));
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut rel = PathBuf::new();
    for _ in from.components().skip(common) {
        rel.push("..");
    }
    for part in to.components().skip(common) {
        rel.push(part);
    }
    rel
}

#[cfg(test)]
mod tests {
    use super::resolve_relative_url;

    #[test]
    fn relative_submodule_urls_resolve_against_the_superproject() {
        assert_eq!(
            resolve_relative_url(
                "https://github.com/ROCm/aiter.git",
                "../composable_kernel.git"
            ),
            "https://github.com/ROCm/composable_kernel.git"
        );
        assert_eq!(
            resolve_relative_url("/tmp/up/aiter", "./ck"),
            "/tmp/up/aiter/ck"
        );
        assert_eq!(
            resolve_relative_url("git@github.com:ROCm/aiter.git", "../ck.git"),
            "git@github.com:ROCm/ck.git"
        );
        assert_eq!(resolve_relative_url("x", "https://h/ck"), "https://h/ck");
    }
}
