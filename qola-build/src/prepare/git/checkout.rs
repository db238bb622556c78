//! The managed checkout's repositories as git lays them out: opening the checkout, a submodule
//! (checked out, or only its git directory under the parent's `modules/`), and the configuration
//! and links that connect them (`origin`, `core.worktree`, the `.git` link file), written only
//! when the tree is.

use std::path::{Path, PathBuf};

use git2::Repository;

use crate::prepare::git::fetch::{Network, Reach};
use crate::prepare::git::git_cli::GitCli;
use crate::prepare::git::pinned::{Pinned, PinnedRepo};
use crate::prepare::report::error::io_error;
use crate::prepare::report::error::{PrepareError, Result, git_error};

/// Opens the checkout at `root`; `None` when there is none yet (missing or empty directory).
pub(crate) fn open_checkout(root: &Path) -> Result<Option<Repository>> {
    if std::fs::symlink_metadata(root).is_ok_and(|m| !m.is_dir()) && !root.is_dir() {
        return Err(PrepareError::NotACheckout {
            root: root.to_path_buf(),
            why: "it is a file, not a directory: choose another root (--root, QOLA_AITER_ROOT) or move the file away".to_string(),
        });
    }
    match std::fs::read_dir(root) {
        Err(e) if crate::common::io::is_absent(&e) => return Ok(None),
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
        });
    }
    Ok(Some(repo))
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

/// Opens a checked-out submodule at `workdir` (its own repository, not the superproject).
pub(crate) fn open_submodule(workdir: &Path) -> Option<Repository> {
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
pub(crate) fn open_detached_submodule(
    parent: &PinnedRepo,
    path: &str,
    name: &str,
    url: &str,
    net: &Network,
    root: &Path,
) -> Result<Reach<Repository>> {
    let workdir = parent.workdir.join(path);
    let gitdir = modules_dir(parent, name);
    if !gitdir.join("HEAD").exists() {
        let git = match net.git(&format!("clone submodule {path} from {url}"), root, url)? {
            Reach::Got(git) => git,
            Reach::NeedsFetch(what) => return Ok(Reach::NeedsFetch(what)),
        };
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
            });
        }
        clone_submodule_gitdir(&git, parent, path, name, url)?;
        if let Network::Fetch(fetcher) = net {
            fetcher.hooks.step(&format!("submodule-clone:{path}"));
        }
    }
    // Its `core.worktree` names the work tree: libgit2 finds it from the git directory, when
    // it exists (a clone killed before its checkout has none yet: opened bare until the tree
    // is written, which makes it).
    if workdir.is_dir() {
        Repository::open(&gitdir)
    } else {
        Repository::open_bare(&gitdir)
    }
    .map(Reach::Got)
    .map_err(git_error("open the submodule's repository", &gitdir))
}

/// Clones the submodule `name` (at `path` in `parent`, from `url`) into its git directory under
/// the parent's `modules/`, as git lays it out: into a temporary sibling first, renamed into
/// place, so a killed clone never looks like a submodule (the next run removes the temporary
/// one). Its `core.worktree` names the work tree; the work tree's `.git` link is written with
/// the tree.
fn clone_submodule_gitdir(
    git: &GitCli,
    parent: &PinnedRepo,
    path: &str,
    name: &str,
    url: &str,
) -> Result<()> {
    let gitdir = modules_dir(parent, name);
    let modules = gitdir
        .parent()
        .expect("a submodule's git directory has a parent");
    std::fs::create_dir_all(modules).map_err(io_error("create the directory", modules))?;
    let leaf = gitdir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = modules.join(format!(".{leaf}.qola-clone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let cloned = git
        .run(
            modules,
            &[
                "clone",
                "--quiet",
                "--no-checkout",
                url,
                &partial.to_string_lossy(),
            ],
            &format!("clone submodule {path}"),
            "check the submodule URL in .gitmodules of the pinned commit and your network/credentials",
        )
        .and_then(|()| {
            let repo = Repository::open(partial.join(".git"))
                .map_err(git_error("open the new submodule clone", &partial))?;
            let to_workdir = relative_path(&gitdir, &parent.workdir.join(path))
                .to_string_lossy()
                .into_owned();
            set_config(&repo, "core.worktree", &to_workdir, &partial)?;
            std::fs::rename(partial.join(".git"), &gitdir)
                .map_err(io_error("move the new submodule clone to", &gitdir))
        });
    let _ = std::fs::remove_dir_all(&partial);
    cloned
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
