//! Preparation: making the managed checkout the prepared state (the pinned commit with the
//! patch series applied), or saying why not.
//!
//! # The model
//!
//! The **key** is a blake3 hash over the stamp schema, qola-build's version, the normalized
//! `aiter_url`, the resolved commit and every patch of the series (name and bytes, in order).
//! The **prepared state** is what the series produces on the pristine pinned tree: each
//! repository's `HEAD` at its pinned commit and the paths the series changes; its fingerprint is
//! computed without touching the tree. The **stamp** records the key and fingerprint of the last
//! successful preparation.
//!
//! A run has three steps, each in its own module: [`observe`] gathers the [`decision::Facts`]
//! (writing nothing in the checkout), [`decision::decide`] turns them into a
//! [`decision::Decision`] (a pure function; the decision table in the crate docs is its
//! specification), and [`execute`] carries a preparation out. `status` is observe + decide;
//! `prepare` also executes, and only it turns a refusal into [`PrepareError::Refused`]. Reasons are data
//! ([`why::Why`]) until the report renders them.
//!
//! # Cost of the common case
//!
//! `up-to-date` needs: the commit resolved locally (a SHA or tag; a branch costs a fetch), the
//! patches read and hashed, the stamp read, and the stat snapshot checked (see the `snapshot`
//! module): each repository's `HEAD`, a digest of its index entries, an `lstat` per tracked file
//! and per directory on the way to one. Only when the snapshot does not match does the full
//! fingerprint scan (one libgit2 status per repository, in parallel) decide. Neither writes in
//! the checkout: not the index, not the stamp.

mod ck_jit_hints;
mod decision;
mod diff;
mod execute;
pub(crate) mod git;
mod journal;
mod observe;
mod patch;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod settings;

#[cfg(test)]
pub(crate) use patch::PatchFile;
pub(crate) use patch::{Series, load_series};
mod sync;

pub(crate) use settings::Settings;

pub use report::PrepareError;
pub use report::{Action, Preparation, Reason, ReasonKind};
pub use settings::{DEFAULT_AITER_URL, Prepare};

use std::collections::BTreeSet;

use crate::build_script::{Directives, Env};
use crate::common::tree_path::{on_disk, shown};
use crate::prepare::decision::{Decision, Found, Resumed, decide};
use crate::prepare::diff::{Change, render};
use crate::prepare::execute::{execute, keep_renewed_snapshot};
use crate::prepare::git::lock_checkout;
use crate::prepare::git::open_checkout;
use crate::prepare::git::workdir_content;
use crate::prepare::git::{Pinned, Pristine};
use crate::prepare::git::{clone_superproject, remove_partial_clones};
use crate::prepare::observe::{Compared, Mode, Observed, Run, Seen, observe, stamp_submodules};
use crate::prepare::patch::PristineTree;
use crate::prepare::record::QolaDir;
use crate::prepare::record::scan;
use crate::prepare::report::Result;
use crate::prepare::report::{LIST_LIMIT, Why, name_some};

impl PristineTree for Pinned {
    fn read(&self, path: &str) -> Result<Pristine> {
        Pinned::read(self, path)
    }

    fn files_under(&self, dir: &str) -> Result<Option<Vec<String>>> {
        Pinned::files_under(self, dir).map(Some)
    }

    fn three_way_base(&self, path: &str, id: &str) -> Result<Option<Vec<u8>>> {
        Ok(Pinned::superproject_blob(self, path, id))
    }
}

impl Prepare {
    /// Prepares the tree (see the table in the crate docs). Local edits give
    /// [`PrepareError::Refused`], which carries the report.
    pub fn try_prepare(&self) -> Result<Preparation> {
        self.prepare_emitting(&Directives::new(self.cargo_metadata))
    }

    /// [`Prepare::try_prepare`], with Cargo's directives going to `directives`.
    fn prepare_emitting(&self, directives: &Directives) -> Result<Preparation> {
        self.try_prepare_in(&Env::new(directives))
    }

    /// [`Prepare::try_prepare`] in the context `env` of the build script that asks.
    pub(crate) fn try_prepare_in(&self, env: &Env) -> Result<Preparation> {
        let settings = self.settings(env)?;
        self.prepare_with(&settings, env)
    }

    /// Prepares the tree `settings` (resolved by the caller, with its manifest parsed) name.
    pub(crate) fn prepare_with(&self, settings: &Settings, env: &Env) -> Result<Preparation> {
        let directives = env.directives();
        let _lock = lock_checkout(&settings.root, |lock, who| {
            directives.info(&format!(
                "waiting for another qola preparation of {} to finish (lock {}, held by {who})",
                settings.root.display(),
                lock.display()
            ))
        })?;
        // No ck-jit run is between applying its hints and reverting them while the tree is
        // looked at (under ck-jit, qola builds with --skip-checkout and never waits here).
        let _ck_jit = match settings.skip {
            true => None,
            false => ck_jit_hints::wait_for_ck_jit(&settings.root, directives),
        };
        remove_partial_clones(&settings.root);
        let run = Run::new(settings, env, Mode::Prepare)?;
        // What an interrupted run left is dealt with first (see `journal`): rolled back, or a
        // first clone finished.
        let resumed = match open_checkout(&settings.root)? {
            Some(repo) => {
                let stamp = QolaDir::new(repo.path()).read_stamp();
                match journal::recover(repo.path(), stamp.as_ref().map(|s| s.key.as_str()))? {
                    None => Resumed::None,
                    Some(journal::Interrupted::Clone) => Resumed::Clone,
                    Some(journal::Interrupted::Completed) => Resumed::Completed,
                    Some(journal::Interrupted::RolledBack(undone)) => {
                        if let Some(backup) = &undone.backup {
                            directives.warning(&format!(
                                "{}: an interrupted preparation was undone; another program had changed {} after it wrote them, saved to {} first",
                                settings.root.display(),
                                name_some(&undone.rescued, LIST_LIMIT),
                                backup.display()
                            ));
                        }
                        Resumed::RolledBack {
                            changes: undone.changes,
                        }
                    }
                }
            }
            None => Resumed::None,
        };
        let mut report = act(&run, observe(&run, None, resumed)?)?;
        if resumed != Resumed::None
            && !report
                .reasons
                .iter()
                .any(|r| r.kind == ReasonKind::Interrupted)
        {
            report.reasons.insert(0, Why::Interrupted(resumed).reason());
        }
        Ok(report)
    }

    /// What [`Prepare::try_prepare`] would do and why. Writes nothing, takes no lock, never
    /// fetches; lists untracked paths too.
    pub fn try_status(&self) -> Result<Preparation> {
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let settings = self.settings(&env)?;
        let run = Run::new(&settings, &env, Mode::Status)?;
        let Observed { seen, found, .. } = observe(&run, None, Resumed::None)?;
        let decision = decide(found);
        match &decision {
            Decision::Skip => skip(&run),
            _ => Ok(report(&run, &seen, &decision)),
        }
    }

    /// The local edits relative to the prepared state, as a patch in the series format
    /// (`qola diff`): adding it as the next patch of the series reproduces the edited tree.
    /// Writes nothing, takes no lock, never fetches.
    pub fn try_diff(&self) -> Result<Vec<u8>> {
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let settings = self.settings(&env)?;
        let run = Run::new(&settings, &env, Mode::Diff)?;
        let compared = match observe(&run, None, Resumed::None)?.found {
            Found::Compared { tree, .. } => tree,
            Found::Missing => {
                return Err(PrepareError::NotPrepared {
                    root: settings.root.clone(),
                });
            }
            Found::NeedsFetch(what) => return Err(PrepareError::FetchNeeded { what }),
            Found::Skip | Found::Unchanged => return Ok(Vec::new()),
            Found::Pending { .. } => {
                return Err(PrepareError::Journal {
                    journal: journal::dir_of(&settings.root.join(".git")),
                    why: "an interrupted preparation left it: run `qola prepare` first, which finishes it".to_string(),
                });
            }
        };
        let tree = &compared.tree;
        let mut changes = Vec::new();
        for path in &tree.candidates {
            let from = tree.expected_content(path)?;
            let to = workdir_content(&on_disk(&settings.root, path))?;
            if from != to {
                changes.push(Change {
                    path: path.clone(),
                    from,
                    to,
                });
            }
        }
        Ok(render(&changes))
    }
}

/// Decides on what `observed` found and carries the decision out (a refusal becomes
/// [`PrepareError::Refused`]).
fn act(run: &Run, observed: Observed) -> Result<Preparation> {
    let Observed {
        seen,
        renewed_snapshot,
        found,
    } = observed;
    let decision = decide(found);
    let mut report = report(run, &seen, &decision);
    match decision {
        Decision::Skip => skip(run),
        Decision::Clone => clone_and_prepare(run),
        Decision::UpToDate => {
            keep_renewed_snapshot(run, renewed_snapshot, &mut report);
            Ok(report)
        }
        Decision::Refuse { .. } => Err(PrepareError::Refused(Box::new(report))),
        Decision::Prepare { plan, tree } => execute(run, tree, &plan, report),
        Decision::FetchNeeded(what) => Err(PrepareError::FetchNeeded { what }),
        // Only `status` leaves a journal where it is; a preparation dealt with it first.
        Decision::FinishInterrupted { .. } => Err(PrepareError::Journal {
            journal: journal::dir_of(&run.settings.root.join(".git")),
            why: "another preparation left it while this one observed the tree".to_string(),
        }),
    }
}

/// No checkout: clones the superproject and acts on what observing the clone finds. A first
/// preparation that fails leaves no checkout: the clone is this run's own.
fn clone_and_prepare(run: &Run) -> Result<Preparation> {
    let settings = run.settings;
    let was_empty_dir = settings.root.is_dir();
    // The first clone's journal travels with the rename: a run killed before the tree is
    // written finds it and finishes the clone, instead of taking the unwritten tree for local
    // edits.
    let repo = clone_superproject(
        &run.fetcher(),
        &settings.clone_url,
        &settings.root,
        &|git_dir| {
            journal::Journal::begin(git_dir, journal::Kind::Clone, "clone", run.hooks.clone())
                .map(drop)
        },
    )?;
    run.hooks.step("superproject-clone");
    let prepared = observe(run, Some(repo), Resumed::None).and_then(|observed| act(run, observed));
    match prepared {
        Ok(mut report) => {
            let cloned = Why::NoCheckout {
                root: settings.root.clone(),
                url: settings.clone_url.clone(),
                cloned: true,
            };
            report.reasons.insert(0, cloned.reason());
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&settings.root);
            if was_empty_dir {
                let _ = std::fs::create_dir(&settings.root);
            }
            Err(e)
        }
    }
}

/// Prepares with every setting from the environment and the manifest (see the crate docs).
pub fn prepare_aiter() -> Result<Preparation> {
    Prepare::new().try_prepare()
}

/// The report of a decision, before anything is executed.
fn report(run: &Run, seen: &Seen, decision: &Decision<Compared>) -> Preparation {
    let settings = run.settings;
    let (action, whys, edited): (Action, Vec<Why>, &[String]) = match decision {
        Decision::Skip | Decision::UpToDate => (Action::UpToDate, Vec::new(), &[]),
        Decision::Clone => (
            Action::Clone,
            vec![Why::NoCheckout {
                root: settings.root.clone(),
                url: settings.clone_url.clone(),
                cloned: false,
            }],
            &[],
        ),
        Decision::FetchNeeded(what) => (Action::Resync, vec![Why::FetchNeeded(what.clone())], &[]),
        Decision::FinishInterrupted { clone, changes } => (
            Action::Recover,
            vec![Why::JournalPending {
                clone: *clone,
                changes: *changes,
            }],
            &[],
        ),
        Decision::Refuse { whys, edited } => (Action::Refused, whys.clone(), edited),
        Decision::Prepare { plan, .. } => (plan.action, plan.whys.clone(), &plan.edited),
    };
    let mut warnings = match decision {
        Decision::Prepare { tree, .. } => tree.tree.applied.notes.clone(),
        _ => Vec::new(),
    };
    warnings.extend(seen.warnings.iter().cloned());
    warnings.extend(run.series.warnings.iter().cloned());
    Preparation {
        action,
        reasons: whys.iter().map(Why::reason).collect(),
        commit: seen.commit.clone(),
        key: seen.key.clone(),
        fingerprint: seen.fingerprint.clone(),
        expected_fingerprint: seen.expected_fingerprint.clone(),
        edited_paths: edited.iter().map(|p| shown(p)).collect(),
        untracked_paths: seen.untracked.clone(),
        warnings,
        inputs: inputs(settings, &run.series),
        ..empty_report(settings)
    }
}

fn empty_report(settings: &Settings) -> Preparation {
    Preparation {
        action: Action::UpToDate,
        reasons: Vec::new(),
        root: settings.root.clone(),
        commit: String::new(),
        key: String::new(),
        fingerprint: String::new(),
        expected_fingerprint: None,
        edited_paths: Vec::new(),
        untracked_paths: Vec::new(),
        backup: None,
        warnings: Vec::new(),
        inputs: Vec::new(),
    }
}

/// What a preparation depends on: the manifest, the patch directory, each patch (qola's own
/// series is part of qola, not an input).
fn inputs(settings: &Settings, series: &crate::prepare::patch::Series) -> Vec<std::path::PathBuf> {
    let mut inputs: Vec<std::path::PathBuf> = settings.manifest_path.iter().cloned().collect();
    if !series.bundled {
        inputs.extend(series.dir.iter().cloned());
        inputs.extend(series.patches.iter().map(|p| p.path.clone()));
    }
    inputs
}

/// A note for a tree prepared for AITER `prepared` when the manifest pins another commit (`pin`, a
/// SHA or its prefix; a branch or tag is not compared): `None` when they agree.
fn other_pin(prepared: &str, pin: Option<&str>) -> Option<String> {
    let pin = pin?;
    let is_sha = pin.len() >= 7 && pin.chars().all(|c| c.is_ascii_hexdigit());
    (is_sha && !prepared.starts_with(&pin.to_ascii_lowercase())).then(|| {
        format!(
            "; it was prepared for AITER {}, not the {pin} the manifest pins",
            &prepared[..prepared.len().min(12)]
        )
    })
}

/// `QOLA_SKIP_PREPARE=1`: report how the tree differs from the prepared state, write nothing.
fn skip(run: &Run) -> Result<Preparation> {
    let (settings, directives) = (run.settings, run.directives);
    let root = &settings.root;
    let Some(repo) = open_checkout(root)? else {
        return Err(PrepareError::SkipWithoutCheckout { root: root.clone() });
    };
    let stamp = QolaDir::new(repo.path()).read_stamp();
    let now = scan(root, false, &stamp_submodules(stamp.as_ref()))?;
    let commit = now.heads.get("").cloned().flatten().unwrap_or_default();
    let fingerprint = now.fingerprint();
    let pin = stamp
        .as_ref()
        .and_then(|s| other_pin(&s.components.commit, settings.commit.as_deref()))
        .unwrap_or_default();
    let message = match &stamp {
        None => format!(
            "QOLA_SKIP_PREPARE=1: using {} as it is; it has never been prepared (no stamp)",
            root.display()
        ),
        Some(stamp) if stamp.fingerprint == fingerprint => format!(
            "QOLA_SKIP_PREPARE=1: using {} as it is (it is the prepared state){pin}",
            root.display()
        ),
        Some(stamp) => {
            let mut differing: Vec<String> = stamp
                .heads
                .iter()
                .filter(|(r, h)| now.heads.get(*r) != Some(*h))
                .map(|(r, _)| format!("HEAD of {}", if r.is_empty() { "AITER" } else { r }))
                .collect();
            let paths: BTreeSet<&String> = now.paths.keys().chain(stamp.paths.keys()).collect();
            differing.extend(
                paths
                    .into_iter()
                    .filter(|p| now.paths.get(*p) != stamp.paths.get(*p))
                    .cloned(),
            );
            format!(
                "QOLA_SKIP_PREPARE=1: using {} as it is; {} path(s) differ from the prepared state: {}{pin}",
                root.display(),
                differing.len(),
                name_some(&differing, LIST_LIMIT)
            )
        }
    };
    directives.warning(&message);
    Ok(Preparation {
        action: Action::SkipRequested,
        reasons: vec![Reason::new(ReasonKind::Differs, message.clone())],
        commit,
        key: stamp.as_ref().map(|s| s.key.clone()).unwrap_or_default(),
        fingerprint,
        expected_fingerprint: stamp.map(|s| s.fingerprint),
        warnings: vec![message],
        inputs: inputs(settings, &run.series),
        ..empty_report(settings)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_file_is_outside_the_checkout() {
        let root = std::path::Path::new("/cache/checkouts/aiter-0123");
        assert!(!crate::prepare::git::lock::lock_path(root).starts_with(root));
    }

    #[test]
    fn build_script_directives_name_every_variable_read_and_only_inputs() {
        let tmp = tempfile::tempdir().unwrap();
        let demo = qola_tests::Demo::create(tmp.path());
        let root = tmp.path().join("checkout");
        let directives = Directives::new(true);
        let mut options = Prepare::new();
        options
            .root(&root)
            .url(demo.aiter.to_string_lossy())
            .commit(&demo.commit)
            .patches_dir(&demo.patches)
            .cache_dir(tmp.path().join("cache"));
        options.prepare_emitting(&directives).unwrap();
        let lines = directives.emitted();
        for name in [
            "QOLA_MANIFEST",
            "CARGO_MANIFEST_DIR",
            "QOLA_SKIP_PREPARE",
            "QOLA_FORCE_PREPARE",
            "QOLA_OFFLINE",
            "CARGO_NET_OFFLINE",
            "QOLA_GIT",
        ] {
            assert!(
                lines.contains(&format!("cargo:rerun-if-env-changed={name}")),
                "{name}: {lines:?}"
            );
        }
        // Explicit arguments are not read from the environment.
        assert!(
            !lines.iter().any(|l| l.ends_with("=QOLA_AITER_ROOT")),
            "{lines:?}"
        );
        let watched: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("cargo:rerun-if-changed="))
            .collect();
        assert_eq!(
            watched.len(),
            1 + qola_tests::DEMO_PATCHES.len(),
            "{watched:?}"
        );
        for path in watched {
            let path = std::path::Path::new(path);
            assert!(path.exists(), "{}", path.display());
            assert!(
                path.starts_with(&demo.patches),
                "only inputs are watched: {}",
                path.display()
            );
        }
    }

    #[test]
    fn name_some_counts_the_rest() {
        let items: Vec<String> = (0..12).map(|i| i.to_string()).collect();
        assert_eq!(name_some(&items[..2], 10), "0, 1");
        assert!(name_some(&items, 10).ends_with("(+2 more)"));
    }
}
