//! Listing untracked paths for `qola status` when the snapshot already proved the tree
//! unchanged: a directory walk against the known tracked paths, with each repository's ignore
//! rules, reported like `git status --porcelain` does (an untracked directory as `dir/` when it
//! holds at least one file that is not ignored).

use std::collections::HashSet;
use std::path::Path;

use git2::Repository;

use crate::common::io::io_error;
use crate::common::text::join;
use crate::prepare::report::{Result, git_error};

/// Untracked paths under `root`, given every tracked file and every repository path (""
/// for the superproject), all superproject-relative.
pub(crate) fn untracked_paths(root: &Path, files: &[&str], repos: &[&str]) -> Result<Vec<String>> {
    let tracked: HashSet<&str> = files.iter().copied().collect();
    let mut tracked_dirs: HashSet<&str> = HashSet::new();
    for path in files.iter().chain(repos.iter()) {
        let mut p = *path;
        while let Some(cut) = p.rfind('/') {
            p = &p[..cut];
            if !tracked_dirs.insert(p) {
                break;
            }
        }
    }
    let mut opened = Vec::new();
    for repo in repos {
        let at = root.join(repo);
        opened.push((
            *repo,
            Repository::open(&at).map_err(git_error("open", &at))?,
        ));
    }
    let walk = Walk {
        root,
        tracked,
        tracked_dirs,
        repos: opened,
    };
    let mut out = Vec::new();
    walk.dir("", &mut out)?;
    out.sort();
    Ok(out)
}

struct Walk<'a> {
    root: &'a Path,
    tracked: HashSet<&'a str>,
    tracked_dirs: HashSet<&'a str>,
    repos: Vec<(&'a str, Repository)>,
}

impl Walk<'_> {
    /// Whether `path` is ignored by the repository that owns it.
    fn ignored(&self, path: &str, is_dir: bool) -> Result<bool> {
        let (prefix, repo) = self
            .repos
            .iter()
            .filter(|(p, _)| p.is_empty() || path.starts_with(&format!("{p}/")))
            .max_by_key(|(p, _)| p.len())
            .expect("the superproject owns every path");
        let rel = if prefix.is_empty() {
            path.to_string()
        } else {
            path[prefix.len() + 1..].to_string()
        };
        let rel = if is_dir { format!("{rel}/") } else { rel };
        repo.status_should_ignore(Path::new(&rel))
            .map_err(git_error("check .gitignore", self.root.join(path)))
    }

    fn entries(&self, dir: &str) -> Result<Vec<(String, bool)>> {
        let full = crate::common::tree_path::on_disk(self.root, dir);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&full).map_err(io_error("read the directory", &full))? {
            let entry = entry.map_err(io_error("read the directory", &full))?;
            let name = crate::common::tree_path::key(entry.file_name().as_encoded_bytes());
            if name == ".git" {
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            out.push((join(dir, &name), is_dir));
        }
        Ok(out)
    }

    /// Walks a directory that holds tracked paths.
    fn dir(&self, dir: &str, out: &mut Vec<String>) -> Result<()> {
        for (path, is_dir) in self.entries(dir)? {
            if is_dir
                && (self.tracked_dirs.contains(path.as_str())
                    || self.repos.iter().any(|(p, _)| *p == path))
            {
                self.dir(&path, out)?;
            } else if self.tracked.contains(path.as_str()) || self.ignored(&path, is_dir)? {
                continue;
            } else if !is_dir {
                out.push(path);
            } else if self.holds_a_visible_file(&path)? {
                out.push(format!("{path}/"));
            }
        }
        Ok(())
    }

    /// Whether an untracked directory holds a file that is not ignored.
    fn holds_a_visible_file(&self, dir: &str) -> Result<bool> {
        for (path, is_dir) in self.entries(dir)? {
            if self.ignored(&path, is_dir)? {
                continue;
            }
            if !is_dir || self.holds_a_visible_file(&path)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
