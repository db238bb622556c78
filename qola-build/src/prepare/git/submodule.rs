//! Submodules as git lays them out: a checked-out one opened as its own repository, or one
//! whose work tree is not attached opened (cloned first when needed) from its git directory under
//! the parent's `modules/`, and the `.git` link file that connects the two.

use std::path::{Path, PathBuf};

use git2::Repository;

use crate::common::io::io_error;
use crate::prepare::git::checkout::not_owned;
use crate::prepare::git::config::{relative_path, set_config};
use crate::prepare::git::fetch::{Network, Reach};
use crate::prepare::git::git_cli::GitCli;
use crate::prepare::report::{PrepareError, Result, git_error};

/// The repository a submodule belongs to: its git directory and work tree.
pub(crate) struct Parent<'a> {
    /// Its git directory.
    pub gitdir: &'a Path,
    /// Its work tree.
    pub workdir: &'a Path,
}

/// Opens a checked-out submodule at `workdir` (its own repository, not the superproject); an
/// error when git refuses it because another user owns it.
pub(crate) fn open_submodule(workdir: &Path) -> Result<Option<Repository>> {
    if !workdir.join(".git").exists() {
        return Ok(None);
    }
    let repo = match Repository::open(workdir) {
        Ok(repo) => repo,
        Err(e) if e.code() == git2::ErrorCode::Owner => return Err(not_owned(workdir)),
        Err(_) => return Ok(None),
    };
    let same = repo
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .is_some_and(|w| workdir.canonicalize().is_ok_and(|d| d == w));
    Ok(same.then_some(repo))
}

/// Opens a submodule whose work tree is not attached (never checked out, `git submodule
/// deinit`, a new worktree) from its git directory under the parent's `modules/`, cloning it
/// first when that directory does not exist yet (the clone writes the `.git` link). An existing
/// one is only opened: its `.git` link and configuration are written by `Pinned::attach` when
/// the tree is, so a refused run writes nothing.
pub(crate) fn open_detached_submodule(
    parent: &Parent,
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
    parent: &Parent,
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
                .map_err(|e| io_error("move the new submodule clone to", &gitdir)(e).into())
        });
    let _ = std::fs::remove_dir_all(&partial);
    cloned
}

/// The git directory of the submodule `name` of `parent`, as git lays it out.
fn modules_dir(parent: &Parent, name: &str) -> PathBuf {
    parent.gitdir.join("modules").join(name)
}

/// Writes `<workdir>/.git` pointing at `gitdir` (relative, as git does).
pub(crate) fn write_gitdir_link(workdir: &Path, gitdir: &Path) -> Result<()> {
    std::fs::create_dir_all(workdir).map_err(io_error("create", workdir))?;
    let dotgit = workdir.join(".git");
    let to_gitdir = relative_path(workdir, gitdir);
    std::fs::write(&dotgit, format!("gitdir: {}\n", to_gitdir.display()))
        .map_err(|e| io_error("write", &dotgit)(e).into())
}
