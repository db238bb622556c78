//! The prebuilt stores of a `qola build` (`--prebuilt`, `--publish`, see
//! [`crate::aiter::prebuilt`]): each module's library key, its files asked for before any
//! checkout, and what was built here recorded and published under that key.

use std::time::Instant;

use super::{Inputs, OutputBuild, Selected};
use crate::aiter::prebuilt::{Arrival, KeyContext, LibraryKey, Stores, Trust};
use crate::aiter::{AiterError, Result};
use crate::build_script::Env;
use crate::common::precedence::Setting;
use crate::manifest::Manifest;

impl OutputBuild {
    /// Each selected module's library key (see [`crate::aiter::prebuilt`]), computed without
    /// the tree.
    pub(super) fn keys(
        &self,
        env: &Env,
        ctx: &Inputs,
        selected: &[Selected],
    ) -> Result<Vec<LibraryKey>> {
        let series = crate::prepare::load_series(&ctx.settings.series)?;
        let python = crate::aiter::module::generator_python(env)?;
        let interpreter = crate::aiter::prebuilt::interpreter_identity(&python)?;
        let cx = KeyContext {
            commit: ctx.settings.commit.as_deref(),
            series: &series,
            not_prepared: ctx.settings.skip.then_some(
                "the tree is used as it is (--skip-checkout, QOLA_SKIP_PREPARE or QOLA_AITER_SOURCE_DIR): qola did not prepare it",
            ),
            user_registry: ctx.user_registry.as_deref(),
            namespace: ctx.namespace.as_deref(),
            archs: &ctx.archs,
            variants: &ctx.variants,
            toolchain: &ctx.toolchain,
            interpreter: &interpreter,
        };
        selected
            .iter()
            .map(|s| {
                let mode = s.module.mode.or(self.mode).or(ctx.manifest.build.mode);
                let filter = self.ck_filter_of(env, &s.module)?;
                cx.key(env, &s.module, mode, filter.as_deref())
            })
            .collect()
    }

    /// The build's prebuilt stores (see [`crate::aiter::prebuilt`]): `--prebuilt` over
    /// `QOLA_PREBUILT_URL` over `[qola] prebuilt`; `--publish` over `QOLA_PUBLISH_URL`; each
    /// answer awaited at most `QOLA_PREBUILT_TIMEOUT` seconds (default 60).
    pub(super) fn stores(&self, env: &Env, manifest: &Manifest) -> Result<Option<Stores>> {
        let fetch = Setting::argument(self.prebuilt.clone())
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
            _ => crate::aiter::prebuilt::trust_and_signer(
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

    /// Asks `stores` for each selected module's files by its key (none for a module of a
    /// prebuilt group, or without a store to fetch from): what arrived, and the seconds it took.
    pub(super) fn arrivals(
        &self,
        stores: &Stores,
        selected: &[Selected],
        keys: &[LibraryKey],
    ) -> (Vec<Option<Arrival>>, Vec<f64>) {
        selected
            .iter()
            .zip(keys)
            .map(|(s, key)| {
                if s.prebuilt.is_some() || stores.fetch_url().is_none() {
                    return (None, 0.0);
                }
                let start = Instant::now();
                let arrival = match key {
                    LibraryKey::Key { key, .. } => stores.arrive(&self.output_dir, &s.md_name, key),
                    LibraryKey::None { why } => Some(Arrival::Miss(format!(
                        "{}: no library key: {why}",
                        s.md_name
                    ))),
                };
                if let Some(Arrival::Miss(why)) = &arrival {
                    eprintln!("qola: warning: {why}; building it from source");
                }
                (arrival, start.elapsed().as_secs_f64())
            })
            .unzip()
    }

    /// After a module was built here: with `--verify`, its files against the prebuilt's (a
    /// difference fails the module); then its files recorded as its key's, and published when
    /// there is a store to publish to. A module without a key is not published, and says why.
    pub(super) fn settle(
        &self,
        stores: &Stores,
        s: &Selected,
        key: &LibraryKey,
        arrival: Option<&Arrival>,
        shared_files: &[String],
    ) -> Result<()> {
        let key = match key {
            LibraryKey::Key { key, .. } => key,
            LibraryKey::None { why } => {
                if let Some(url) = stores.publish_url() {
                    eprintln!(
                        "qola: warning: {}: not published to {url}: no library key: {why}",
                        s.md_name
                    );
                }
                return Ok(());
            }
        };
        if let Some(Arrival::Staged(staged)) = arrival {
            let differ = staged.differences(&self.output_dir);
            if !differ.is_empty() {
                return Err(AiterError::InvalidOption {
                    option: format!("--verify {}", staged.url),
                    problem: format!(
                        "the prebuilt {} of key {key} differs from this build in {}: the builds are not reproducible, or the key misses an input; report it with both files",
                        s.md_name,
                        differ.join(", ")
                    ),
                });
            }
            eprintln!(
                "qola build: {}: the prebuilt from {} is byte-identical to this build",
                s.md_name, staged.url
            );
        }
        let mut files = vec![format!("lib/{}.so", s.md_name)];
        files.extend(shared_files.iter().cloned());
        match stores.built(&self.output_dir, &s.md_name, key, &files) {
            Ok(Some(line)) => eprintln!("qola build: {line}"),
            Ok(None) => {}
            Err(warning) => eprintln!("qola: warning: {warning}"),
        }
        Ok(())
    }

    /// Says where a prebuilt module came from; with `--timings` (`QOLA_TIMINGS`) and something
    /// fetched, writes its timings report (that line, the fetch's seconds, no job) where a
    /// build's would be.
    pub(super) fn say_prebuilt(
        &self,
        env: &Env,
        s: &Selected,
        key: &LibraryKey,
        stores: Option<&Stores>,
        bytes: u64,
        seconds: f64,
    ) -> Result<()> {
        let key = key.key().unwrap_or_default();
        let line = format!(
            "{}: prebuilt {} from {} ({}): nothing compiled",
            s.md_name,
            &key[..key.len().min(16)],
            stores.and_then(Stores::fetch_url).unwrap_or_default(),
            match bytes {
                0 => "already in place, nothing fetched".to_string(),
                n => format!(
                    "{} fetched in {seconds:.2} s",
                    crate::common::text::scaled_size(n)
                ),
            }
        );
        eprintln!("qola build: {line}");
        let timings = Setting::argument(self.timings)
            .environment(|| env.flag("QOLA_TIMINGS").map(Some))?
            .value()
            .unwrap_or(false);
        if timings && bytes > 0 {
            let dir = self.output_dir.join("_qola").join("build").join(&s.md_name);
            match crate::compile::write_prebuilt_timings(&dir, &s.md_name, line, seconds) {
                Ok(path) => eprintln!(
                    "qola build: {}: timings: {}",
                    s.md_name,
                    crate::compile::where_timings_are(&path)
                ),
                Err(e) => eprintln!(
                    "qola: warning: cannot write the timings report in {}: {e}",
                    dir.display()
                ),
            }
        }
        Ok(())
    }
}
