//! Fetching a module's archive into the output directory, checking one against a build, and
//! publishing one (see the folder's docs).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::archive::{self, Index};
use super::signing::{Signer, Trust};
use super::store::{NoArchive, Store};

/// A store of prebuilt libraries, by URL.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    /// The URL as given.
    pub url: String,
    store: Store,
}

/// What a fetch gave.
#[derive(Debug, Clone)]
pub(crate) enum Fetched {
    /// The module's files are in the output directory: fetched (`bytes` of archive), or
    /// already there from an earlier fetch of this key (`bytes` 0).
    Hit {
        /// Bytes fetched.
        bytes: u64,
    },
    /// No usable archive: the warning to give (the module is built from source).
    Miss(String),
}

/// A staging directory under the output directory, removed when dropped (a fetch or a
/// check leaves nothing half-unpacked).
#[derive(Debug)]
pub(crate) struct Staging(PathBuf);

impl Staging {
    /// `<out_dir>/_qola/prebuilt/<what>-<pid>` (not created).
    pub(crate) fn new(out_dir: &Path, what: &str) -> Staging {
        Staging(
            out_dir
                .join("_qola")
                .join("prebuilt")
                .join(format!("{what}-{}", std::process::id())),
        )
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Remote {
    /// The store at `url`, waiting at most `timeout` for each answer. `Err`: a URL qola cannot
    /// use (a malformed input is an error, not a miss).
    pub(crate) fn open(url: &str, timeout: Duration) -> Result<Remote, String> {
        Ok(Remote {
            url: url.to_string(),
            store: Store::open(url, timeout)?,
        })
    }

    /// The archive's name in the store.
    fn name(md_name: &str, key: &str) -> String {
        format!("{md_name}/{key}.tar.zst")
    }

    /// The name of the archive's signature (see `signing`).
    fn signature_name(md_name: &str, key: &str) -> String {
        format!("{}.minisig", Self::name(md_name, key))
    }

    /// Where qola records the files a key put in `out_dir`.
    fn record(out_dir: &Path, md_name: &str) -> PathBuf {
        out_dir
            .join("_qola")
            .join("prebuilt")
            .join(format!("{md_name}.json"))
    }

    /// The module's files of `key` into `out_dir`, unless they are there already; an archive
    /// is taken only as `trust` allows.
    pub(crate) fn fetch(&self, out_dir: &Path, md_name: &str, key: &str, trust: &Trust) -> Fetched {
        if files_match(out_dir, md_name, key) {
            return Fetched::Hit { bytes: 0 };
        }
        let staging = Staging::new(out_dir, "staging");
        let (index, bytes) = match self.checked(md_name, key, staging.path(), trust) {
            Ok(fetched) => fetched,
            Err(why) => return Fetched::Miss(why),
        };
        for file in &index.files {
            if file.is_in(out_dir) {
                continue;
            }
            let to = out_dir.join(&file.path);
            let moved = to
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::rename(staging.path().join(&file.path), &to));
            if let Err(e) = moved {
                return Fetched::Miss(format!(
                    "cannot put {} in place: {e}; the files before it are the archive's, the rest are as they were",
                    to.display()
                ));
            }
        }
        if let Err(e) = write_record(out_dir, md_name, &index) {
            return Fetched::Miss(format!("cannot record the fetch: {e}"));
        }
        Fetched::Hit {
            bytes: bytes as u64,
        }
    }

    /// The archive of `key`, its signature checked as `trust` asks (before anything of it is
    /// unpacked), then checked and unpacked into `staging` (nothing else is written), with its
    /// size; `Err` is the warning to give.
    pub(crate) fn checked(
        &self,
        md_name: &str,
        key: &str,
        staging: &Path,
        trust: &Trust,
    ) -> Result<(Index, usize), String> {
        let name = Self::name(md_name, key);
        let at = self.store.locate(&name);
        let bytes = self.store.get(&name).map_err(|failure| match failure {
            NoArchive::Missing => format!("no prebuilt {md_name} at {at}: {failure}"),
            other => format!("prebuilt {md_name} not fetched from {at}: {other}"),
        })?;
        if trust.any() {
            let refused = |why: String| format!("prebuilt {md_name} from {at} refused: {why}");
            let signature_name = Self::signature_name(md_name, key);
            let signature = match self.store.get(&signature_name) {
                Ok(signature) => Some(signature),
                Err(NoArchive::Missing) => None,
                Err(other) => {
                    return Err(format!(
                        "prebuilt {md_name}: its signature not fetched from {}: {other}",
                        self.store.locate(&signature_name)
                    ));
                }
            };
            let statement = archive::index_member(&bytes).map_err(refused)?;
            trust
                .check(signature.as_deref(), &statement, key, md_name)
                .map_err(|why| refused(why.to_string()))?;
        }
        let _ = std::fs::remove_dir_all(staging);
        let index = archive::unpack(&bytes, key, staging)
            .map_err(|why| format!("prebuilt {md_name} from {at} refused: {why}"))?;
        Ok((index, bytes.len()))
    }

    /// Packs the files of `index` (with their `contents`, [`Index::of`]) as its archive and
    /// stores it, its signature first when there is a `signer`, unless the store holds that
    /// key already. Returns the archive's size (`None`: held already); `Err` is the warning to
    /// give.
    pub(crate) fn publish(
        &self,
        index: &Index,
        contents: &[Vec<u8>],
        signer: Option<&Signer>,
    ) -> Result<Option<usize>, String> {
        let (md_name, name) = (&index.md_name, Self::name(&index.md_name, &index.key));
        let not_published = |failure: NoArchive| {
            format!(
                "{md_name} not published to {}: {failure}",
                self.store.locate(&name)
            )
        };
        if self.store.holds(&name).map_err(not_published)? {
            return Ok(None);
        }
        let bytes = archive::pack(index, contents)
            .map_err(|e| format!("{md_name} not published: cannot pack it: {e}"))?;
        if let Some(signer) = signer {
            // Before the archive: a store never serves this archive without its signature.
            let signature = signer
                .sign(&index.bytes(), &index.key, md_name)
                .map_err(|e| format!("{md_name} not published: {e}"))?;
            let signature_name = Self::signature_name(md_name, &index.key);
            self.store
                .put(&signature_name, signature.as_bytes())
                .map_err(not_published)?;
        }
        self.store.put(&name, &bytes).map_err(not_published)?;
        Ok(Some(bytes.len()))
    }
}

/// Records that the files of `index` in `out_dir` are the files of its key (rewritten only
/// when it changes).
pub(crate) fn write_record(out_dir: &Path, md_name: &str, index: &Index) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(index).expect("an index serializes");
    text.push(b'\n');
    crate::common::io::write_if_changed(&Remote::record(out_dir, md_name), &text)
        .map(|_| ())
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Whether `out_dir` holds the files of `key`, as its record says and their bytes confirm.
fn files_match(out_dir: &Path, md_name: &str, key: &str) -> bool {
    let Ok(text) = std::fs::read(Remote::record(out_dir, md_name)) else {
        return false;
    };
    let Ok(index) = serde_json::from_slice::<Index>(&text) else {
        return false;
    };
    index.key == key && index.files.iter().all(|f| f.is_in(out_dir))
}
