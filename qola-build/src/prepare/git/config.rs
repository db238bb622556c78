//! A repository's own configuration, as qola writes it: `core.autocrlf=false` and
//! `core.filemode=true`, `origin` at its URL, any other key, each written only when it differs
//! (never the global config); and relative paths as git writes them in links and config.

use std::path::{Path, PathBuf};

use git2::Repository;

use crate::prepare::report::{Result, git_error};

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

/// Sets `key` in the repository's own config when it differs.
pub(crate) fn set_config(repo: &Repository, key: &str, value: &str, at: &Path) -> Result<()> {
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
pub(crate) fn relative_path(from: &Path, to: &Path) -> PathBuf {
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
