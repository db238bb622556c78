//! The repositories of the pinned state (the superproject and every submodule, recursively,
//! each at the commit its parent's pinned tree records), and reading paths from them: what the
//! pinned commits hold, what a commit in between held, what changed since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

use crate::common::io::io_error;
use crate::common::text::join;
use crate::prepare::git::config::{pin_config, relative_path, set_config, set_origin};
use crate::prepare::git::fetch::{Network, Reach, ensure_commit};
use crate::prepare::git::state::{
    Entry, FileContent, MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK, PathState,
};
use crate::prepare::git::submodule::{
    Parent, open_detached_submodule, open_submodule, write_gitdir_link,
};
use crate::prepare::git::url::resolve_relative_url;
use crate::prepare::report::{PrepareError, Result, git_error};

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
    let copy = crate::prepare::git::lock::lock_path(root)
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

impl Pinned {
    /// Opens (and with `net`, clones or fetches) every repository of the pinned state; a run
    /// that never fetches gets what it would have fetched.
    pub(crate) fn open(
        root: &Path,
        repo: Repository,
        commit: Oid,
        url: &str,
        fresh: bool,
        net: &Network,
    ) -> Result<Reach<Pinned>> {
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
                    });
                };
                let sub_url = resolve_relative_url(&parent.url, &sub_url);
                let (repo, fresh) = match open_submodule(&workdir)? {
                    Some(repo) => (repo, false),
                    None => {
                        let parent = Parent {
                            gitdir: parent.repo.path(),
                            workdir: &parent.workdir,
                        };
                        match open_detached_submodule(&parent, &path, &name, &sub_url, net, root)? {
                            Reach::Got(repo) => (repo, true),
                            Reach::NeedsFetch(what) => return Ok(Reach::NeedsFetch(what)),
                        }
                    }
                };
                if let Reach::NeedsFetch(what) =
                    ensure_commit(&repo, &workdir, sub_commit, &sub_url, net)?
                {
                    return Ok(Reach::NeedsFetch(what));
                }
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
        Ok(Reach::Got(Pinned { repos }))
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

    /// The repository that owns the submodule at `path` (its parent) and the submodule's path
    /// in it.
    pub(crate) fn owner_of_repo<'p>(&self, path: &'p str) -> (&PinnedRepo, &'p str) {
        let mut best = &self.repos[0];
        let mut rel = path;
        for r in &self.repos[1..] {
            if let Some(rest) = path
                .strip_prefix(r.path.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                && r.path.len() >= best.path.len()
            {
                best = r;
                rel = rest;
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

    /// The blob `id` (full or abbreviated) of the superproject's repository, when `path` is the
    /// superproject's (not a submodule's) and the repository has it.
    pub(crate) fn superproject_blob(&self, path: &str, id: &str) -> Option<Vec<u8>> {
        let (owner, _) = self.owner(path);
        if !owner.path.is_empty() || id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let object = owner
            .repo
            .find_object_by_prefix(id, Some(ObjectType::Blob))
            .ok()?;
        Some(object.as_blob()?.content().to_vec())
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
                let name = crate::common::tree_path::key(e.name_bytes());
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
                let rel = crate::common::tree_path::key(p.as_os_str().as_encoded_bytes());
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
    match tree.get_path(&crate::common::tree_path::as_path(rel)) {
        Ok(entry) => Ok(Some(entry)),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(git_error(&format!("look up {rel}"), workdir)(e)),
    }
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
