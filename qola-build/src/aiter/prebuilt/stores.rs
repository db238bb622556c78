//! One build's stores: where it fetches from (`--prebuilt`), whether it checks what it fetched
//! against a build from source (`--verify`), where it publishes (`--publish`).

use std::path::Path;
use std::time::Duration;

use super::archive::Index;
use super::remote::{Fetched, Remote, Staging, write_record};
use super::signing::{Signer, Trust};

/// The stores of one build.
#[derive(Debug)]
pub(crate) struct Stores {
    fetch: Option<Remote>,
    publish: Option<Remote>,
    verify: bool,
    /// The publishers whose archives are taken (none: every archive, as before signatures).
    trust: Trust,
    /// What signs what is published.
    signer: Option<Signer>,
}

/// What the fetch store gave for a module.
#[derive(Debug)]
pub(crate) enum Arrival {
    /// Its files are in the output directory (bytes fetched; 0: already there).
    Fetched(u64),
    /// `--verify`: the archive, checked and unpacked aside, to compare with a build.
    Staged(Staged),
    /// Nothing usable: the warning to give.
    Miss(String),
}

/// A prebuilt unpacked aside (removed when dropped).
#[derive(Debug)]
pub(crate) struct Staged {
    dir: Staging,
    index: Index,
    /// Where it came from.
    pub url: String,
}

impl Staged {
    /// The files of the prebuilt whose bytes differ from `out_dir`'s.
    pub(crate) fn differences(&self, out_dir: &Path) -> Vec<String> {
        self.index
            .files
            .iter()
            .filter(|f| {
                std::fs::read(self.dir.path().join(&f.path)).ok()
                    != std::fs::read(out_dir.join(&f.path)).ok()
            })
            .map(|f| f.path.clone())
            .collect()
    }
}

impl Stores {
    /// The stores at these URLs, `None` when there are none; archives fetched are taken as
    /// `trust` allows, those published signed by `signer`. `Err`: a URL qola cannot use, or
    /// `verify` without a store to fetch from.
    pub(crate) fn open(
        fetch: Option<&str>,
        publish: Option<&str>,
        verify: bool,
        timeout: Duration,
        trust: Trust,
        signer: Option<Signer>,
    ) -> Result<Option<Stores>, String> {
        if verify && fetch.is_none() {
            return Err("--verify checks a prebuilt: give the store with --prebuilt (or QOLA_PREBUILT_URL, [qola] prebuilt)".to_string());
        }
        if fetch.is_none() && publish.is_none() {
            return Ok(None);
        }
        Ok(Some(Stores {
            fetch: fetch.map(|u| Remote::open(u, timeout)).transpose()?,
            publish: publish.map(|u| Remote::open(u, timeout)).transpose()?,
            verify,
            trust,
            signer,
        }))
    }

    /// The store fetched from, when there is one.
    pub(crate) fn fetch_url(&self) -> Option<&str> {
        self.fetch.as_ref().map(|r| r.url.as_str())
    }

    /// The store published to, when there is one.
    pub(crate) fn publish_url(&self) -> Option<&str> {
        self.publish.as_ref().map(|r| r.url.as_str())
    }

    /// The module's prebuilt files of `key`, when there is a store to fetch from.
    pub(crate) fn arrive(&self, out_dir: &Path, md_name: &str, key: &str) -> Option<Arrival> {
        let remote = self.fetch.as_ref()?;
        if !self.verify {
            return Some(match remote.fetch(out_dir, md_name, key, &self.trust) {
                Fetched::Hit { bytes } => Arrival::Fetched(bytes),
                Fetched::Miss(why) => Arrival::Miss(why),
            });
        }
        let dir = Staging::new(out_dir, &format!("verify-{md_name}"));
        Some(
            match remote.checked(md_name, key, dir.path(), &self.trust) {
                Ok((index, _)) => Arrival::Staged(Staged {
                    dir,
                    index,
                    url: remote.url.clone(),
                }),
                Err(why) => Arrival::Miss(why),
            },
        )
    }

    /// After a module of `key` was built here from the tree qola prepared: records its `files`
    /// as that key's, and publishes them when there is a store to publish to. Returns what to
    /// say: `Ok` a line of progress, `Err` a warning.
    pub(crate) fn built(
        &self,
        out_dir: &Path,
        md_name: &str,
        key: &str,
        files: &[String],
    ) -> Result<Option<String>, String> {
        let cannot_record = |e: std::io::Error| format!("{md_name}: cannot record its files: {e}");
        let (index, contents) = Index::of(out_dir, files, key, md_name).map_err(cannot_record)?;
        write_record(out_dir, md_name, &index).map_err(cannot_record)?;
        let Some(remote) = &self.publish else {
            return Ok(None);
        };
        Ok(Some(
            match remote.publish(&index, &contents, self.signer.as_ref())? {
                Some(bytes) => format!(
                    "{md_name}: published as {} ({bytes} bytes) to {}",
                    &key[..16],
                    remote.url
                ),
                None => format!(
                    "{md_name}: {} is published already at {}",
                    &key[..16],
                    remote.url
                ),
            },
        ))
    }
}
