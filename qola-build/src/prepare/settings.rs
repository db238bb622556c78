//! The [`Prepare`] builder and how its settings are resolved: explicit argument, then the
//! environment, then the manifest, then the default.

use std::path::{Path, PathBuf};

use crate::build_script::{Env, EnvError};
use crate::common::precedence::Setting;
use crate::manifest::Manifest;
use crate::prepare::git::{clone_url, normalize_url};
use crate::prepare::patch::{SeriesSource, locate};
use crate::prepare::report::{PrepareError, Result};

/// The upstream used when nothing names one.
pub const DEFAULT_AITER_URL: &str = "https://github.com/ROCm/aiter.git";

/// Options of a preparation; see the crate docs for the environment variables behind each.
///
/// ```no_run
/// // build.rs
/// let prepared = qola_build::Prepare::new()
///     .manifest("qola.toml")
///     .try_prepare()
///     .unwrap_or_else(|e| panic!("{e}"));
/// println!("cargo:rustc-env=AITER_ROOT={}", prepared.root.display());
/// ```
#[derive(Debug, Clone)]
pub struct Prepare {
    pub(crate) manifest: Option<PathBuf>,
    pub(crate) manifest_read: Option<Box<Manifest>>,
    pub(crate) root: Option<PathBuf>,
    pub(crate) url: Option<String>,
    pub(crate) commit: Option<String>,
    pub(crate) patches_dir: Option<PathBuf>,
    pub(crate) force: Option<bool>,
    pub(crate) skip: Option<bool>,
    pub(crate) offline: Option<bool>,
    pub(crate) cache_dir: Option<PathBuf>,
    pub(crate) cargo_metadata: bool,
    pub(crate) fail_after_writes: Option<usize>,
}

impl Default for Prepare {
    fn default() -> Self {
        Prepare::new()
    }
}

impl Prepare {
    /// Options taken from the environment and the manifest; Cargo directives on.
    pub fn new() -> Prepare {
        Prepare {
            manifest: None,
            manifest_read: None,
            root: None,
            url: None,
            commit: None,
            patches_dir: None,
            force: None,
            skip: None,
            offline: None,
            cache_dir: None,
            cargo_metadata: true,
            fail_after_writes: None,
        }
    }

    /// The manifest file (over `QOLA_MANIFEST` and the default: `qola.toml` of the package being
    /// built in a build script, of the current directory otherwise).
    pub fn manifest(&mut self, path: impl Into<PathBuf>) -> &mut Prepare {
        self.manifest = Some(path.into());
        self
    }

    /// The manifest, already read by the caller (from [`Manifest::path`]): as
    /// [`Prepare::manifest`] with that file, which is then not read again.
    pub fn manifest_read(&mut self, manifest: Manifest) -> &mut Prepare {
        self.manifest = Some(manifest.path.clone());
        self.manifest_read = Some(Box::new(manifest));
        self
    }

    /// The checkout directory (over `QOLA_AITER_ROOT` and the default in qola's cache).
    pub fn root(&mut self, path: impl Into<PathBuf>) -> &mut Prepare {
        self.root = Some(path.into());
        self
    }

    /// The AITER repository URL or path (over `QOLA_AITER_URL` and `[qola] aiter_url`).
    pub fn url(&mut self, url: impl Into<String>) -> &mut Prepare {
        self.url = Some(url.into());
        self
    }

    /// The AITER commit: full or short SHA, tag or branch (over `QOLA_AITER_COMMIT` and
    /// `[qola] aiter_commit`).
    pub fn commit(&mut self, commit: impl Into<String>) -> &mut Prepare {
        self.commit = Some(commit.into());
        self
    }

    /// The patch series directory (over `QOLA_PATCHES_DIR` and `[qola] patches_dir`; with none
    /// of them, a manifest gets qola's own series and no manifest no patches).
    pub fn patches_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Prepare {
        self.patches_dir = Some(dir.into());
        self
    }

    /// Save local edits as a backup patch, then prepare (over `QOLA_FORCE_PREPARE`).
    pub fn force(&mut self, force: bool) -> &mut Prepare {
        self.force = Some(force);
        self
    }

    /// Use the tree as it is, writing nothing (over `QOLA_SKIP_PREPARE`).
    pub fn skip(&mut self, skip: bool) -> &mut Prepare {
        self.skip = Some(skip);
        self
    }

    /// Never use the network (over `QOLA_OFFLINE` and `CARGO_NET_OFFLINE`).
    pub fn offline(&mut self, offline: bool) -> &mut Prepare {
        self.offline = Some(offline);
        self
    }

    /// qola's cache directory (over `QOLA_CACHE_DIR` and the XDG/HOME default): the default
    /// checkout and the stat snapshots live there.
    pub fn cache_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Prepare {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Print Cargo directives (`rerun-if-*`, `warning`) on standard output; on by default, for
    /// build scripts. Off: warnings go to standard error.
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Prepare {
        self.cargo_metadata = on;
        self
    }

    /// Test hook: fail, as an I/O error would, instead of the write after the first `n` (the
    /// `test-hooks` feature: qola's own tests; see the `journal` module).
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn fail_after_writes(&mut self, n: usize) -> &mut Prepare {
        self.fail_after_writes = Some(n);
        self
    }

    /// Resolves every setting, reading the environment through `env`, each with QoLA's
    /// precedence (`common::precedence`); the manifest is read here, once (unless the caller
    /// handed it over read, [`Prepare::manifest_read`]).
    pub(crate) fn settings(&self, env: &Env) -> Result<Settings> {
        let directives = env.directives();
        let manifest_path = Setting::argument(self.manifest.clone())
            .environment_path(|| env.var_os("QOLA_MANIFEST").map(PathBuf::from))
            .value()
            .or_else(|| default_manifest(env, self.cargo_metadata));
        let manifest = match (&manifest_path, &self.manifest_read) {
            (Some(path), Some(read)) if *path == read.path => {
                directives.rerun_if_changed(path);
                (**read).clone()
            }
            (Some(path), _) => {
                directives.rerun_if_changed(path);
                Manifest::from_path(path)?
            }
            (None, _) => Manifest::default(),
        };
        let url = Setting::argument(self.url.clone())
            .environment(|| env.var("QOLA_AITER_URL"))?
            .manifest(|| manifest.qola.aiter_url.clone())
            .or(|| DEFAULT_AITER_URL.to_string());
        let commit = Setting::argument(self.commit.clone())
            .environment(|| env.var("QOLA_AITER_COMMIT"))?
            .manifest(|| manifest.qola.aiter_commit.clone())
            .value();
        let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
        // A manifest without `patches_dir` gets qola's own series, as QoLA falls back to its own;
        // a relative one is found as `locate` says (the manifest's layer can refuse: two
        // different series).
        let given = Setting::argument(self.patches_dir.clone())
            .environment_path(|| env.var_os("QOLA_PATCHES_DIR").map(PathBuf::from))
            .value();
        let series = match (given, &manifest.qola.patches_dir) {
            (Some(dir), _) => SeriesSource::Dir(absolute(dir)),
            (None, Some(written)) => {
                let manifest_file = absolute(manifest.path.clone());
                // A working directory that is gone has no reading of its own.
                let cwd = std::env::current_dir()
                    .unwrap_or_else(|_| manifest_file.parent().unwrap_or(Path::new("/")).into());
                let (dir, warning) = locate(written, &manifest_file, &cwd)?;
                if let Some(warning) = warning {
                    directives.warning(&warning);
                }
                SeriesSource::Dir(absolute(dir))
            }
            (None, None) if manifest_path.is_some() => SeriesSource::Bundled(commit.clone()),
            (None, None) => SeriesSource::None,
        };
        let clone_url = clone_url(&url);
        let normalized = normalize_url(&clone_url);
        let cache = crate::cache_dir::find(env, self.cache_dir.clone());
        let root = match Setting::argument(self.root.clone())
            .environment_path(|| env.var_os("QOLA_AITER_ROOT").map(PathBuf::from))
            .value()
        {
            Some(root) => root,
            None => default_root(
                cache.as_deref().ok_or(crate::cache_dir::NoCacheDir)?,
                &normalized,
            ),
        };
        let skip = Setting::argument(self.skip)
            .environment(|| env.flag("QOLA_SKIP_PREPARE").map(Some))?
            .or(|| false);
        // QOLA_FORCE_AITER_CHECKOUT: the name of the seed of TransformerEngine's QoLA
        // integration, read as QoLA's.
        let force = Setting::argument(self.force)
            .environment(|| {
                Ok::<_, EnvError>(Some(
                    env.flag("QOLA_FORCE_PREPARE")? || env.flag("QOLA_FORCE_AITER_CHECKOUT")?,
                ))
            })?
            .or(|| false);
        let offline = Setting::argument(self.offline)
            .environment(|| {
                Ok::<_, EnvError>(Some(
                    env.flag("QOLA_OFFLINE")? || env.flag("CARGO_NET_OFFLINE")?,
                ))
            })?
            .or(|| false);
        if skip && force {
            return Err(PrepareError::ConflictingOptions {
                first: "QOLA_SKIP_PREPARE=1 (--skip)".to_string(),
                second: "QOLA_FORCE_PREPARE=1 (--force)".to_string(),
            });
        }
        Ok(Settings {
            manifest_path: manifest_path.map(absolute),
            manifest,
            clone_url,
            url: normalized,
            commit,
            series,
            root: canonical_root(&absolute(root)),
            cache: cache.map(absolute),
            skip,
            force,
            offline,
            fail_after_writes: self.fail_after_writes,
        })
    }
}

/// The checkout's one spelling: symlinks resolved and `.`/`..` removed for the part that exists,
/// the rest appended as given, so the lock and the snapshot of a checkout are the same whatever
/// path names it (a symlink, `..`, a trailing `/.`).
pub(crate) fn canonical_root(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(mut out) = existing.canonicalize() {
            for part in rest.iter().rev() {
                if part == ".." {
                    out.pop();
                } else if part != "." {
                    out.push(part);
                }
            }
            return out;
        }
        let Some(last) = existing.components().next_back() else {
            return path.to_path_buf();
        };
        rest.push(last.as_os_str().to_owned());
        if !existing.pop() {
            return path.to_path_buf();
        }
    }
}

/// Every setting of one run, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The manifest read, if any.
    pub manifest_path: Option<PathBuf>,
    /// The manifest, parsed (the default when there is none): read once per entry point.
    pub manifest: Manifest,
    /// The URL given to `git clone` (local paths made absolute).
    pub clone_url: String,
    /// The URL as the key records it.
    pub url: String,
    /// The commit spec, if any was given.
    pub commit: Option<String>,
    /// Where the patch series comes from.
    pub series: SeriesSource,
    /// The checkout.
    pub root: PathBuf,
    /// qola's cache, when one can be found.
    pub cache: Option<PathBuf>,
    /// `QOLA_SKIP_PREPARE`.
    pub skip: bool,
    /// `QOLA_FORCE_PREPARE`.
    pub force: bool,
    /// `QOLA_OFFLINE` / `CARGO_NET_OFFLINE`.
    pub offline: bool,
    /// Test hook (see [`Prepare::fail_after_writes`]).
    pub fail_after_writes: Option<usize>,
}

/// `qola.toml` of the package being built (`CARGO_MANIFEST_DIR`, in a build script), or of the
/// current directory (the command line, or when Cargo did not set it).
fn default_manifest(env: &Env, build_script: bool) -> Option<PathBuf> {
    let dir = build_script
        .then(|| env.var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
        .flatten()
        .or_else(|| std::env::current_dir().ok())?;
    let path = dir.join("qola.toml");
    path.is_file().then_some(path)
}

/// The managed checkout for a URL: `<cache>/checkouts/<name>-<hash of the URL>`.
pub(crate) fn default_root(cache: &Path, normalized_url: &str) -> PathBuf {
    let name = normalized_url
        .rsplit(['/', ':'])
        .find(|s| !s.is_empty())
        .unwrap_or("aiter")
        .trim_end_matches(".git");
    let hash = blake3::hash(normalized_url.as_bytes()).to_hex();
    cache
        .join(crate::cache_dir::CHECKOUTS)
        .join(format!("{name}-{}", &hash[..12]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_root_is_named_after_the_repository() {
        let root = default_root(Path::new("/c"), "https://github.com/ROCm/aiter");
        assert!(root.starts_with("/c/checkouts"));
        assert!(
            root.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("aiter-")
        );
    }
}
