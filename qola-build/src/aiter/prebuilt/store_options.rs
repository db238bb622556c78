//! The prebuilt stores a `qola build` is given (`--prebuilt`, `--publish`, `--trust`,
//! `--sign-key`, `--verify`) and the stores they open, with the environment and the manifest
//! under them.

use std::path::PathBuf;

use super::signing::{Trust, trust_and_signer};
use super::stores::Stores;
use crate::aiter::{AiterError, Result};
use crate::build_script::Env;
use crate::common::precedence::Setting;
use crate::manifest::Manifest;

/// The prebuilt stores of a build, as its caller gives them (see [`crate::aiter::prebuilt`]);
/// [`crate::OutputBuild::prebuilt_stores`] takes them.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    fetch: Option<String>,
    publish: Option<String>,
    verify: bool,
    sign_key: Option<PathBuf>,
    trust: Vec<String>,
}

impl StoreOptions {
    /// No store: the environment's and the manifest's, if any, are used.
    pub fn new() -> StoreOptions {
        StoreOptions::default()
    }

    /// Fetch each module's files by its library key from `url` before preparing (`--prebuilt`),
    /// over `QOLA_PREBUILT_URL` and the manifest's `[qola] prebuilt`: `file:///<dir>` or
    /// `http(s)://...`.
    pub fn fetch(&mut self, url: &str) -> &mut StoreOptions {
        self.fetch = Some(url.to_string());
        self
    }

    /// Publish each module built here from a tree qola prepared to `url` (`--publish`), over
    /// `QOLA_PUBLISH_URL`.
    pub fn publish(&mut self, url: &str) -> &mut StoreOptions {
        self.publish = Some(url.to_string());
        self
    }

    /// Sign each archive published with the minisign secret key in `path` (`--sign-key`), over
    /// `QOLA_SIGN_KEY`; a key other users can read is refused.
    pub fn sign_key(&mut self, path: impl Into<PathBuf>) -> &mut StoreOptions {
        self.sign_key = Some(path.into());
        self
    }

    /// Take prebuilt archives signed by these publishers only (`--trust`, each a minisign
    /// public key `RW...` or a `.pub` file), over `QOLA_TRUSTED_KEYS` and the manifest's
    /// `[qola] trusted_keys`.
    pub fn trust(&mut self, keys: &[String]) -> &mut StoreOptions {
        self.trust = keys.to_vec();
        self
    }

    /// With a store to fetch from: build from source anyway and compare the files with the
    /// prebuilt's, byte for byte (`--verify`); a difference fails the module, naming the files.
    pub fn verify(&mut self, verify: bool) -> &mut StoreOptions {
        self.verify = verify;
        self
    }

    /// The build's stores: `--prebuilt` over `QOLA_PREBUILT_URL` over `[qola] prebuilt`;
    /// `--publish` over `QOLA_PUBLISH_URL`; each answer awaited at most
    /// `QOLA_PREBUILT_TIMEOUT` seconds (default 60). `None`: no store.
    pub(crate) fn open(&self, env: &Env, manifest: &Manifest) -> Result<Option<Stores>> {
        let fetch = Setting::argument(self.fetch.clone())
            .environment(|| env.var("QOLA_PREBUILT_URL"))?
            .manifest(|| manifest.qola.prebuilt.clone())
            .value();
        let publish = Setting::argument(self.publish.clone())
            .environment(|| env.var("QOLA_PUBLISH_URL"))?
            .value();
        let timeout = env
            .parsed::<std::num::NonZeroU64>("QOLA_PREBUILT_TIMEOUT", "a number of seconds above 0")?
            .map_or(60, u64::from);
        // The flags of a store's trust without the store: a mistake, not a no-op (the
        // variables may be set for every build, with or without a store).
        if !self.trust.is_empty() && fetch.is_none() {
            return Err(AiterError::InvalidOption {
                option: "--trust".to_string(),
                problem: "it names the publishers of the archives --prebuilt fetches: give the store with --prebuilt (or QOLA_PREBUILT_URL, [qola] prebuilt)".to_string(),
            });
        }
        if self.sign_key.is_some() && publish.is_none() {
            return Err(AiterError::InvalidOption {
                option: "--sign-key".to_string(),
                problem: "it signs what --publish publishes: give the store with --publish (or QOLA_PUBLISH_URL)".to_string(),
            });
        }
        let (trust, signer) = match (&fetch, &publish) {
            (None, None) => (Trust::default(), None),
            _ => trust_and_signer(
                env,
                manifest,
                &self.trust,
                self.sign_key.as_deref(),
                publish.is_some(),
            )
            .map_err(|(option, problem)| AiterError::InvalidOption {
                option: option.to_string(),
                problem,
            })?,
        };
        if let Some(url) = &fetch
            && !trust.any()
        {
            eprintln!(
                "qola build: archives from {url} are not checked for a publisher: no trusted key (--trust, QOLA_TRUSTED_KEYS, [qola] trusted_keys)"
            );
        }
        if let (Some(url), None) = (&publish, &signer) {
            eprintln!(
                "qola build: archives published to {url} are not signed (no --sign-key, QOLA_SIGN_KEY): builds that trust a key refuse them"
            );
        }
        Stores::open(
            fetch.as_deref(),
            publish.as_deref(),
            self.verify,
            std::time::Duration::from_secs(timeout),
            trust,
            signer,
        )
        .map_err(|problem| AiterError::InvalidOption {
            option: "prebuilt store".to_string(),
            problem,
        })
    }
}
