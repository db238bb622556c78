//! One build's stores: where it fetches from (`--prebuilt`), whether it checks what it fetched
//! against a build from source (`--verify`), where it publishes (`--publish`); and what a
//! `qola build` asks of them, as it asks the cache: a module's files by its key before any
//! checkout ([`Stores::ask`]), what was built here checked, recorded and published
//! ([`Stores::settle`]), a fetched module said ([`Stores::say_fetched`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::archive::Index;
use super::key::LibraryKey;
use super::remote::{Fetched, Remote, Staging, write_record};
use super::signing::{Signer, Trust};
use crate::aiter::{AiterError, Result};

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

    /// Asks for a module's files by its library key, when there is a store to fetch from: what
    /// arrived (a miss is said, as the module is then built from source), and the seconds it
    /// took.
    pub(crate) fn ask(
        &self,
        out_dir: &Path,
        md_name: &str,
        key: &LibraryKey,
    ) -> (Option<Arrival>, f64) {
        if self.fetch.is_none() {
            return (None, 0.0);
        }
        let start = Instant::now();
        let arrival = match key {
            LibraryKey::Key { key, .. } => self.arrive(out_dir, md_name, key),
            LibraryKey::None { why } => {
                Some(Arrival::Miss(format!("{md_name}: no library key: {why}")))
            }
        };
        if let Some(Arrival::Miss(why)) = &arrival {
            eprintln!("qola: warning: {why}; building it from source");
        }
        (arrival, start.elapsed().as_secs_f64())
    }

    /// After a module was built here: with `--verify`, its files against the prebuilt's (a
    /// difference fails the module); then its library and `shared_files` recorded as its key's,
    /// and published when there is a store to publish to. A module without a key is not
    /// published, and says why.
    pub(crate) fn settle(
        &self,
        out_dir: &Path,
        md_name: &str,
        key: &LibraryKey,
        arrival: Option<&Arrival>,
        shared_files: &[String],
    ) -> Result<()> {
        let key = match key {
            LibraryKey::Key { key, .. } => key,
            LibraryKey::None { why } => {
                if let Some(url) = self.publish_url() {
                    eprintln!(
                        "qola: warning: {md_name}: not published to {url}: no library key: {why}"
                    );
                }
                return Ok(());
            }
        };
        if let Some(Arrival::Staged(staged)) = arrival {
            let differ = staged.differences(out_dir);
            if !differ.is_empty() {
                return Err(AiterError::InvalidOption {
                    option: format!("--verify {}", staged.url),
                    problem: format!(
                        "the prebuilt {md_name} of key {key} differs from this build in {}: the builds are not reproducible, or the key misses an input; report it with both files",
                        differ.join(", ")
                    ),
                });
            }
            eprintln!(
                "qola build: {md_name}: the prebuilt from {} is byte-identical to this build",
                staged.url
            );
        }
        let mut files = vec![format!("lib/{md_name}.so")];
        files.extend(shared_files.iter().cloned());
        match self.built(out_dir, md_name, key, &files) {
            Ok(Some(line)) => eprintln!("qola build: {line}"),
            Ok(None) => {}
            Err(warning) => eprintln!("qola: warning: {warning}"),
        }
        Ok(())
    }

    /// Says where a module fetched by `key` came from (`bytes` in `seconds`; 0 bytes: already
    /// in place); with `timings_dir` and something fetched, writes its timings report (that
    /// line, the fetch's seconds, no job) there, where a build's would be.
    pub(crate) fn say_fetched(
        &self,
        md_name: &str,
        key: &LibraryKey,
        (bytes, seconds): (u64, f64),
        timings_dir: Option<PathBuf>,
    ) {
        let key = key.key().unwrap_or_default();
        let line = format!(
            "{md_name}: prebuilt {} from {} ({}): nothing compiled",
            &key[..key.len().min(16)],
            self.fetch_url().unwrap_or_default(),
            match bytes {
                0 => "already in place, nothing fetched".to_string(),
                n => format!(
                    "{} fetched in {seconds:.2} s",
                    crate::common::text::scaled_size(n)
                ),
            }
        );
        eprintln!("qola build: {line}");
        let Some(dir) = timings_dir.filter(|_| bytes > 0) else {
            return;
        };
        match crate::compile::write_prebuilt_timings(&dir, md_name, line, seconds) {
            Ok(path) => eprintln!(
                "qola build: {md_name}: timings: {}",
                crate::compile::where_timings_are(&path)
            ),
            Err(e) => eprintln!(
                "qola: warning: cannot write the timings report in {}: {e}",
                dir.display()
            ),
        }
    }
}
