//! The decision: what a preparation does with the tree it finds.
//!
//! # Inputs
//!
//! The **key** is a blake3 hash over the stamp schema, qola-build's version, the normalized
//! `aiter_url`, the resolved commit and every patch of the series (name and bytes, in order).
//! The **prepared state** is what the series produces on the pristine pinned tree: each
//! repository's `HEAD` at its pinned commit and the paths the series changes; its fingerprint is
//! computed without touching the tree. The **stamp** records the key and fingerprint of the last
//! successful preparation.
//!
//! # The table
//!
//! | state of the tree | action | JSON `action` |
//! |---|---|---|
//! | `QOLA_SKIP_PREPARE=1` | write nothing; use the tree as it is; one warning naming up to 10 paths that differ from the prepared state | `skip-requested` |
//! | no checkout | clone, prepare | `clone` |
//! | `preparing` marker left by an interrupted run | prepare again from the pinned commit; files it left half-written are saved as a backup patch first | `recover` |
//! | key unchanged, tree == prepared state | nothing: no file written, no mtime changed | `up-to-date` |
//! | no local edits, but the key changed or the tree lost our patches (`reset --hard`, `checkout -- f`, HEAD moved) | prepare; the reasons name what changed | `resync` |
//! | the tree already equals what the new key produces | adopt it: write the stamp, rewrite no file | `resync` (reason `adopted`) |
//! | local edits present | refuse, change nothing; list the edited paths and the three ways on | `refused` |
//! | `QOLA_FORCE_PREPARE=1` | save local edits first (a patch under `.git/qola/backups/`), then prepare | `forced` |
//!
//! A path is a **local edit** only when its work-tree content differs from every state qola or
//! git put there: the prepared state (new key), the state the stamp recorded (old key), the
//! pinned commit (new and old), and the repository's current `HEAD` (commits are not lost by a
//! resync; each old `HEAD` is kept as `refs/qola/kept/<id>`). A path back at the pinned
//! commit's content is our patch undone, not a user's edit.
//!
//! # Cost of the common case
//!
//! `up-to-date` needs: the commit resolved locally (a SHA or tag; a branch costs a fetch), the
//! patches read and hashed, the stamp read, and the stat snapshot checked (see the `snapshot`
//! module): each repository's `HEAD`, a digest of its index entries, an `lstat` per tracked file.
//! Only when the snapshot does not match does the full fingerprint scan (one libgit2 status per
//! repository, in parallel) decide. Neither writes in the checkout: not the index, not the stamp.

pub(crate) mod checkout;
mod diff;
mod fingerprint;
pub(crate) mod git_cli;
mod index_file;
mod key;
mod lock;
mod patch;
pub(crate) mod report;
pub(crate) mod settings;
mod snapshot;
pub(crate) mod stamp;
pub(crate) mod state;
mod sync;
mod tree_path;
mod untracked;

use std::collections::{BTreeMap, BTreeSet};

use crate::build_script::Directives;
use crate::build_script::Env;
use crate::error::{Error, Result};
use crate::prepare::checkout::{
    Network, Pinned, Pristine, clone_superproject, open_checkout, remove_partial_clones,
    resolve_commit,
};
use crate::prepare::diff::{Change, render};
use crate::prepare::fingerprint::{TreeScan, fingerprint_of, scan};
use crate::prepare::key::KeyComponents;
use crate::prepare::lock::lock_checkout;
use crate::prepare::patch::{Applied, FileContent, PristineTree, apply_series, load_series};
use crate::prepare::report::{Action, Preparation, Reason, ReasonKind};
use crate::prepare::settings::{Prepare, Settings};
use crate::prepare::snapshot::Snapshot;
use crate::prepare::stamp::{QolaDir, Stamp};
use crate::prepare::state::{Entry, PathState, workdir_content, workdir_entry};
use crate::prepare::sync::{Target, sync};
use crate::prepare::tree_path::{on_disk, shown};
use crate::prepare::untracked::untracked;
use crate::util::{short_id, unix_now, write_atomic};

/// How many differing paths the skip warning names.
const SKIP_LIST_LIMIT: usize = 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Prepare,
    Status,
    Diff,
}

impl PristineTree for Pinned {
    fn read(&self, path: &str) -> Result<Pristine> {
        Pinned::read(self, path)
    }

    fn files_under(&self, dir: &str) -> Result<Option<Vec<String>>> {
        Pinned::files_under(self, dir).map(Some)
    }
}

impl Prepare {
    /// Prepares the tree (see the table in the crate docs). Local edits give
    /// [`Error::Refused`], which carries the report.
    pub fn try_prepare(&self) -> Result<Preparation> {
        self.prepare_with(&Directives::new(self.cargo_metadata))
    }

    fn prepare_with(&self, directives: &Directives) -> Result<Preparation> {
        let env = Env::new(directives);
        let settings = self.settings(&env, directives)?;
        let _lock = lock_checkout(&settings.root, |lock| {
            directives.warning(&format!(
                "waiting for another qola preparation of {} to finish (lock {})",
                settings.root.display(),
                lock.display()
            ))
        })?;
        remove_partial_clones(&settings.root);
        match decide(&settings, &env, directives, Mode::Prepare)? {
            Decided::Report(report) => Ok(*report),
            Decided::Diff(_) => unreachable!("prepare mode never diffs"),
        }
    }

    /// What [`Prepare::try_prepare`] would do and why. Writes nothing, takes no lock, never
    /// fetches; lists untracked paths too.
    pub fn try_status(&self) -> Result<Preparation> {
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let settings = self.settings(&env, &directives)?;
        match decide(&settings, &env, &directives, Mode::Status) {
            Ok(Decided::Report(report)) => Ok(*report),
            Ok(Decided::Diff(_)) => unreachable!("status mode never diffs"),
            Err(Error::Refused(report)) => Ok(*report),
            Err(Error::FetchNeeded { what }) => Ok(Preparation {
                action: Action::Resync,
                reasons: vec![Reason::new(
                    ReasonKind::FetchNeeded,
                    format!("{what} first; `qola status` never fetches"),
                )],
                ..empty_report(&settings)
            }),
            Err(e) => Err(e),
        }
    }

    /// The local edits relative to the prepared state, as a patch in the series format
    /// (`qola diff`): adding it as the next patch of the series reproduces the edited tree.
    /// Writes nothing, takes no lock, never fetches.
    pub fn try_diff(&self) -> Result<Vec<u8>> {
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let settings = self.settings(&env, &directives)?;
        match decide(&settings, &env, &directives, Mode::Diff)? {
            Decided::Diff(patch) => Ok(patch),
            Decided::Report(_) => unreachable!("diff mode always diffs"),
        }
    }
}

/// Prepares with every setting from the environment and the manifest (see the crate docs).
pub fn prepare_aiter() -> Result<Preparation> {
    Prepare::new().try_prepare()
}

enum Decided {
    Report(Box<Preparation>),
    Diff(Vec<u8>),
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
    }
}

fn decide(settings: &Settings, env: &Env, directives: &Directives, mode: Mode) -> Result<Decided> {
    let series = load_series(settings.patches_dir.as_deref())?;
    if let Some(dir) = &series.dir {
        directives.rerun_if_changed(dir);
        for patch in &series.patches {
            directives.rerun_if_changed(&patch.path);
        }
    }
    let root = &settings.root;
    if settings.skip && mode != Mode::Diff {
        return skip(settings, directives).map(|r| Decided::Report(Box::new(r)));
    }
    let spec = settings.commit.clone().ok_or_else(|| Error::NoCommit {
        manifest: settings
            .manifest_path
            .as_ref()
            .map_or("none found".to_string(), |p| p.display().to_string()),
    })?;
    let net = match mode {
        Mode::Status | Mode::Diff => Network::Never,
        Mode::Prepare if settings.offline => Network::Offline,
        Mode::Prepare => Network::Online(env),
    };
    let mut reasons = Vec::new();
    let mut warnings = Vec::new();
    let (repo, fresh) = match open_checkout(root)? {
        Some(repo) => (repo, false),
        None => match mode {
            Mode::Diff => return Err(Error::NotPrepared { root: root.clone() }),
            Mode::Status => {
                return Ok(Decided::Report(Box::new(Preparation {
                    action: Action::Clone,
                    reasons: vec![Reason::new(
                        ReasonKind::NoCheckout,
                        format!(
                            "no checkout at {}: prepare will clone {}",
                            root.display(),
                            settings.clone_url
                        ),
                    )],
                    ..empty_report(settings)
                })));
            }
            Mode::Prepare => {
                reasons.push(Reason::new(
                    ReasonKind::NoCheckout,
                    format!(
                        "no checkout at {}: cloned {}",
                        root.display(),
                        settings.clone_url
                    ),
                ));
                (clone_superproject(&net, &settings.clone_url, root)?, true)
            }
        },
    };
    let qola_dir = QolaDir::new(repo.path());
    let interrupted = !fresh && qola_dir.marker_present();
    let (commit, branch_warning) = resolve_commit(&repo, root, &spec, &settings.clone_url, &net)?;
    warnings.extend(branch_warning);
    let components = KeyComponents::new(&settings.url, &commit.to_string(), &series);
    let key = components.key();
    let stamp = qola_dir.read_stamp();

    // The common case, in milliseconds: the snapshot proves the tree unchanged since it was
    // prepared for this key.
    let unchanged = !fresh && !interrupted && !settings.force;
    let snapshot_file = settings
        .cache
        .as_ref()
        .map(|cache| Snapshot::file(cache, root));
    let current_stamp = stamp.as_ref().filter(|s| unchanged && s.key == key);
    if let (Some(stamp), Some(file)) = (current_stamp, &snapshot_file)
        && let Some(snap) = Snapshot::read(file)
    {
        // `status` lists untracked paths too: walk for them while the snapshot is checked.
        let (matches, listed) = std::thread::scope(|scope| {
            let walk = (mode == Mode::Status).then(|| {
                scope.spawn(|| {
                    let (files, repos) = snap.tracked();
                    untracked(root, &files, &repos)
                })
            });
            let matches = snap.matches(root, &key);
            (
                matches,
                walk.map(|w| w.join().expect("the untracked walk panicked")),
            )
        });
        if matches {
            if mode == Mode::Diff {
                return Ok(Decided::Diff(Vec::new()));
            }
            return Ok(Decided::Report(Box::new(Preparation {
                action: Action::UpToDate,
                commit: commit.to_string(),
                key,
                fingerprint: stamp.fingerprint.clone(),
                expected_fingerprint: Some(stamp.fingerprint.clone()),
                untracked_paths: listed.transpose()?.unwrap_or_default(),
                warnings,
                ..empty_report(settings)
            })));
        }
    }

    // The full scan decides. When it may find the tree up to date, a new snapshot is taken
    // first (a snapshot must precede the scan that verifies it), so the next build is fast again.
    let refreshed = match (current_stamp, &snapshot_file) {
        (Some(stamp), Some(_)) if mode == Mode::Prepare => {
            let repos: Vec<String> = stamp.heads.keys().cloned().collect();
            Snapshot::take(root, &repos, &key)
        }
        _ => None,
    };
    let with_untracked = mode == Mode::Status;
    let now = if fresh {
        TreeScan::default()
    } else {
        scan(root, with_untracked, &stamp_submodules(stamp.as_ref()))?
    };
    let base = Preparation {
        commit: commit.to_string(),
        key: key.clone(),
        fingerprint: now.fingerprint(),
        untracked_paths: now.untracked.clone(),
        warnings: warnings.clone(),
        ..empty_report(settings)
    };
    if let Some(stamp) = current_stamp.filter(|s| s.fingerprint == base.fingerprint)
        && mode != Mode::Diff
    {
        // Nothing to do and nothing written in the checkout; only the snapshot in qola's cache.
        let mut report = Preparation {
            action: Action::UpToDate,
            expected_fingerprint: Some(stamp.fingerprint.clone()),
            ..base
        };
        if let (Some(snap), Some(file)) = (refreshed, &snapshot_file) {
            keep_cache_going(snap.write(file), &mut report.warnings, directives);
        }
        return Ok(Decided::Report(Box::new(report)));
    }

    let mut pinned = Pinned::open(root, repo, commit, &settings.clone_url, fresh, &net)?;
    let applied = apply_series(&series, &pinned, &commit.to_string())?;
    let expected_paths: BTreeMap<String, PathState> = applied
        .files
        .iter()
        .map(|(p, c)| (p.clone(), c.as_ref().map(Entry::of)))
        .collect();
    let expected_fingerprint = fingerprint_of(&pinned.heads(), &expected_paths);
    let candidates = candidates(&pinned, &applied, &now, stamp.as_ref())?;

    if mode == Mode::Diff {
        let mut changes = Vec::new();
        for path in &candidates {
            let from = expected_content(&pinned, &applied, path)?;
            let to = workdir_content(&on_disk(root, path))?;
            if from != to {
                changes.push(Change {
                    path: path.clone(),
                    from,
                    to,
                });
            }
        }
        return Ok(Decided::Diff(render(&changes)));
    }

    // Classify every candidate path.
    let mut current: BTreeMap<String, PathState> = BTreeMap::new();
    let mut edited = Vec::new();
    let mut staged_edits = Vec::new();
    let mut reverted = Vec::new();
    let mut all_prepared = true;
    let pinned_heads = pinned.heads();
    for path in &candidates {
        let now_state = match now.paths.get(path) {
            Some(state) => state.clone(),
            None if fresh => None,
            None => workdir_entry(&on_disk(root, path))?,
        };
        let at_pin = pinned.state_at(&pinned_heads, path)?.flatten();
        let prepared = match expected_paths.get(path) {
            Some(state) => state.clone(),
            None => at_pin.clone(),
        };
        if now_state != prepared {
            all_prepared = false;
            // Back at the pinned commit although the previous preparation had patched it.
            let was_patched = stamp.as_ref().is_none_or(|s| s.paths.contains_key(path));
            if now_state == at_pin && expected_paths.contains_key(path) && was_patched {
                reverted.push(path.clone());
            }
        }
        let mut known = vec![prepared, at_pin];
        if let Some(stamp) = &stamp {
            if let Some(state) = stamp.paths.get(path) {
                known.push(state.clone());
            }
            known.extend(pinned.state_at(&stamp.heads, path)?);
        }
        known.extend(pinned.state_at(&now.heads, path)?);
        // After an interrupted run, a missing file is one it had not written yet; in a repository
        // that is not checked out (a deinit-ed submodule, a new worktree), a missing file is one
        // never checked out: restoring either loses nothing.
        let not_checked_out =
            matches!(now.heads.get(&pinned.owner(path).0.path), None | Some(None));
        let unwritten = (interrupted || not_checked_out) && now_state.is_none();
        // Content staged apart from the work tree is the user's too.
        let staged = now
            .staged
            .get(path)
            .filter(|s| **s != now_state && !known.contains(*s));
        if let Some(staged) = staged {
            staged_edits.push((path.clone(), staged.clone()));
        }
        if !fresh && !unwritten && (!known.contains(&now_state) || staged.is_some()) {
            edited.push(path.clone());
        }
        current.insert(path.clone(), now_state);
    }
    let heads_at_pin = pinned
        .repos
        .iter()
        .all(|r| now.heads.get(&r.path) == Some(&Some(r.commit.to_string())));

    // Why.
    let action = if fresh {
        Action::Clone
    } else if interrupted {
        reasons.push(Reason::new(
            ReasonKind::Interrupted,
            "a previous preparation was interrupted (its `preparing` marker is still there)"
                .to_string(),
        ));
        Action::Recover
    } else if settings.force {
        Action::Forced
    } else {
        Action::Resync
    };
    if !fresh {
        reasons.extend(tree_reasons(
            &pinned,
            &now,
            stamp.as_ref(),
            &components,
            &qola_dir,
            &reverted,
        ));
        if reasons.is_empty() && base.fingerprint != expected_fingerprint {
            reasons.push(Reason::new(
                ReasonKind::Differs,
                format!(
                    "the tree differs from the prepared state at: {}",
                    name_some(
                        &candidates_differing(&current, &expected_paths, &pinned)?,
                        SKIP_LIST_LIMIT
                    )
                ),
            ));
        }
    }
    let mut report = Preparation {
        action,
        reasons,
        expected_fingerprint: Some(expected_fingerprint.clone()),
        edited_paths: edited.iter().map(|p| shown(p)).collect(),
        warnings: applied.offsets.clone(),
        ..base
    };
    report.warnings.extend(warnings);

    if !edited.is_empty() && !settings.force && !interrupted {
        report.action = Action::Refused;
        return Err(Error::Refused(Box::new(report)));
    }
    let adopted = !fresh && all_prepared && heads_at_pin;
    if adopted {
        report.reasons.push(Reason::new(
            ReasonKind::Adopted,
            "the tree already is the prepared state: adopted it, no file rewritten".to_string(),
        ));
    }
    if mode == Mode::Status {
        return Ok(Decided::Report(Box::new(report)));
    }

    // From here on the tree is written.
    // Saved before anything is written: local edits when forced; after an interrupted run, what
    // differs from every known state (half-written by that run, or edited since).
    if !edited.is_empty() {
        let mut changes = Vec::new();
        for path in &edited {
            changes.push(Change {
                path: path.clone(),
                from: expected_content(&pinned, &applied, path)?,
                to: workdir_content(&on_disk(root, path))?,
            });
        }
        let backup = qola_dir.backup_path(unix_now());
        write_atomic(&backup, &render(&changes))?;
        let staged_backup = backup.with_extension("staged.patch");
        if !staged_edits.is_empty() {
            let mut changes = Vec::new();
            for (path, state) in &staged_edits {
                changes.push(Change {
                    path: path.clone(),
                    from: expected_content(&pinned, &applied, path)?,
                    to: pinned.blob(path, state.as_ref())?,
                });
            }
            write_atomic(&staged_backup, &render(&changes))?;
        }
        let (kind, what) = if settings.force {
            (ReasonKind::Forced, "local edits")
        } else {
            (
                ReasonKind::Interrupted,
                "files the interrupted run left half-written (or edited since)",
            )
        };
        let mut message = format!(
            "{what}: {} path(s) saved to {} (apply it with `git apply` or add it to the series), then replaced",
            edited.len(),
            backup.display()
        );
        if !staged_edits.is_empty() {
            message.push_str(&format!(
                "; content staged in the index for {} of them saved to {}",
                staged_edits.len(),
                staged_backup.display()
            ));
        }
        directives.warning(&format!("{}: {message}", root.display()));
        report.reasons.push(Reason::new(kind, message));
        report.backup = Some(backup);
    }
    if let Some(file) = &snapshot_file {
        keep_cache_going(Snapshot::remove(file), &mut report.warnings, directives);
    }
    qola_dir.write_marker(&key)?;
    pinned.attach(root)?;
    let mut targets = BTreeMap::new();
    for path in &candidates {
        targets.insert(
            path.clone(),
            Target {
                content: expected_content(&pinned, &applied, path)?,
                pinned: pinned.state_at(&pinned_heads, path)?.flatten(),
                observed: current.get(path).cloned(),
            },
        );
    }
    let patch_for = |path: &str| patch_touching(&series, path);
    let synced = sync(
        root,
        &pinned,
        &targets,
        &patch_for,
        qola_dir.backup_dir(unix_now()),
    )?;
    for (paths, kind, what) in [
        (
            &synced.moved_aside,
            ReasonKind::MovedAside,
            "in the way, moved",
        ),
        (
            &synced.changed_meanwhile,
            ReasonKind::ChangedMeanwhile,
            "changed while qola was deciding, saved",
        ),
    ] {
        if let (false, Some(dir)) = (paths.is_empty(), &synced.backup) {
            let message = format!(
                "{} path(s) {what} to {}: {}",
                paths.len(),
                dir.display(),
                name_some(paths, SKIP_LIST_LIMIT)
            );
            directives.warning(&format!("{}: {message}", root.display()));
            report.reasons.push(Reason::new(kind, message));
            report.backup.get_or_insert(dir.clone());
        }
    }

    let repo_paths: Vec<String> = pinned.repos.iter().map(|r| r.path.clone()).collect();
    let snapshot = snapshot_file
        .as_ref()
        .and_then(|_| Snapshot::take(root, &repo_paths, &key));
    let after = scan(
        root,
        false,
        &pinned.repos[1..]
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>(),
    )?;
    if after.fingerprint() != expected_fingerprint {
        let differing: Vec<String> = after
            .paths
            .iter()
            .filter(|(p, s)| expected_paths.get(*p) != Some(*s))
            .map(|(p, _)| p.clone())
            .chain(
                expected_paths
                    .keys()
                    .filter(|p| !after.paths.contains_key(*p))
                    .cloned(),
            )
            .chain(
                after
                    .heads
                    .iter()
                    .filter(|(r, h)| pinned_heads.get(*r) != Some(*h))
                    .map(|(r, _)| format!("HEAD of {}", if r.is_empty() { "." } else { r })),
            )
            .collect();
        return Err(Error::Verify {
            root: root.clone(),
            paths: name_some(&differing, SKIP_LIST_LIMIT),
        });
    }
    qola_dir.write_stamp(&Stamp {
        schema: crate::prepare::key::SCHEMA,
        key,
        components,
        fingerprint: expected_fingerprint.clone(),
        heads: pinned_heads,
        paths: expected_paths,
        prepared_at: unix_now(),
        action: report.action.as_str().to_string(),
    })?;
    if let (Some(snapshot), Some(file)) = (snapshot, &snapshot_file) {
        keep_cache_going(snapshot.write(file), &mut report.warnings, directives);
    }
    qola_dir.clear_marker()?;
    for warning in &applied.offsets {
        directives.warning(warning);
    }
    report.fingerprint = expected_fingerprint;
    Ok(Decided::Report(Box::new(report)))
}

/// The submodule paths a stamp recorded (hints that let a scan start them early).
fn stamp_submodules(stamp: Option<&Stamp>) -> Vec<String> {
    stamp.map_or_else(Vec::new, |s| {
        s.heads.keys().filter(|k| !k.is_empty()).cloned().collect()
    })
}

/// Every path whose state may differ between the tree, the prepared state, the stamp's state and
/// the pinned commits.
fn candidates(
    pinned: &Pinned,
    applied: &Applied,
    now: &TreeScan,
    stamp: Option<&Stamp>,
) -> Result<BTreeSet<String>> {
    let mut paths: BTreeSet<String> = now.paths.keys().cloned().collect();
    paths.extend(applied.files.keys().cloned());
    if let Some(stamp) = stamp {
        paths.extend(stamp.paths.keys().cloned());
    }
    for repo in &pinned.repos {
        if let Some(Some(head)) = now.heads.get(&repo.path)
            && *head != repo.commit.to_string()
        {
            paths.extend(pinned.changed_since_pinned(&repo.path, head)?);
        }
    }
    // Submodule roots are repositories, not files.
    paths.retain(|p| !pinned.repos.iter().any(|r| r.path == *p));
    Ok(paths)
}

/// The prepared content of `path`: the series' result, else the pinned file.
fn expected_content(pinned: &Pinned, applied: &Applied, path: &str) -> Result<Option<FileContent>> {
    if let Some(content) = applied.files.get(path) {
        return Ok(content.clone());
    }
    Ok(match pinned.read(path)? {
        Pristine::File(content) => Some(content),
        _ => None,
    })
}

/// Paths whose current state is not the prepared one.
fn candidates_differing(
    current: &BTreeMap<String, PathState>,
    expected: &BTreeMap<String, PathState>,
    pinned: &Pinned,
) -> Result<Vec<String>> {
    let heads = pinned.heads();
    let mut out = Vec::new();
    for (path, state) in current {
        let prepared = match expected.get(path) {
            Some(s) => s.clone(),
            None => pinned.state_at(&heads, path)?.flatten(),
        };
        if *state != prepared {
            out.push(path.clone());
        }
    }
    Ok(out)
}

/// qola's cache is an optimisation: a failure to use it is a warning, never a failed prepare.
fn keep_cache_going(result: Result<()>, warnings: &mut Vec<String>, directives: &Directives) {
    if let Err(e) = result {
        let message = format!("qola's cache is not usable, so the next no-op check is slower: {e}");
        directives.warning(&message);
        warnings.push(message);
    }
}

/// Reasons found by comparing the tree and the stamp with the new key and pinned state.
fn tree_reasons(
    pinned: &Pinned,
    now: &TreeScan,
    stamp: Option<&Stamp>,
    components: &KeyComponents,
    qola_dir: &QolaDir,
    reverted: &[String],
) -> Vec<Reason> {
    let mut reasons = Vec::new();
    match stamp {
        Some(stamp) => reasons.extend(components.changes_from(&stamp.components)),
        None if qola_dir.stamp_exists() => reasons.push(Reason::new(
            ReasonKind::NoStamp,
            "the stamp is corrupt or from another qola: ignored".to_string(),
        )),
        None => reasons.push(Reason::new(
            ReasonKind::NoStamp,
            "no stamp: first preparation of this checkout".to_string(),
        )),
    }
    let commit_changed = stamp.is_some_and(|s| s.components.commit != components.commit);
    for repo in &pinned.repos {
        let name = if repo.path.is_empty() {
            "AITER"
        } else {
            &repo.path
        };
        match now.heads.get(&repo.path) {
            None | Some(None) => reasons.push(Reason::new(
                ReasonKind::SubmoduleMissing,
                format!("{name} is not checked out"),
            )),
            Some(Some(head)) if *head != repo.commit.to_string() && !commit_changed => {
                reasons.push(Reason::new(
                    ReasonKind::HeadMoved,
                    format!(
                        "HEAD of {name} moved to {} (pinned {}); the old HEAD is kept as refs/qola/kept/{head}",
                        short_id(head),
                        short_id(&repo.commit.to_string())
                    ),
                ));
            }
            _ => {}
        }
    }
    if !reverted.is_empty() {
        reasons.push(Reason::new(
            ReasonKind::PatchReverted,
            format!(
                "{} path(s) lost their patches (back at the pinned commit): {}",
                reverted.len(),
                name_some(reverted, SKIP_LIST_LIMIT)
            ),
        ));
    }
    reasons
}

/// The first `limit` items joined, with a count of the rest.
fn name_some(items: &[String], limit: usize) -> String {
    let mut text = items
        .iter()
        .take(limit)
        .map(|item| shown(item))
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > limit {
        text.push_str(&format!(" (+{} more)", items.len() - limit));
    }
    text
}

/// The name of a patch of the series that touches `path`, for messages.
fn patch_touching(series: &crate::prepare::patch::Series, path: &str) -> String {
    series
        .patches
        .iter()
        .find(|p| {
            crate::prepare::patch::parse_patch(&p.name, &p.bytes).is_ok_and(|parsed| {
                parsed.files.iter().any(|f| {
                    f.new_path.as_deref() == Some(path) || f.old_path.as_deref() == Some(path)
                })
            })
        })
        .map_or_else(
            || "(restoring the pinned tree)".to_string(),
            |p| p.name.clone(),
        )
}

/// `QOLA_SKIP_PREPARE=1`: report how the tree differs from the prepared state, write nothing.
fn skip(settings: &Settings, directives: &Directives) -> Result<Preparation> {
    let root = &settings.root;
    let Some(repo) = open_checkout(root)? else {
        return Err(Error::SkipWithoutCheckout { root: root.clone() });
    };
    let stamp = QolaDir::new(repo.path()).read_stamp();
    let now = scan(root, false, &stamp_submodules(stamp.as_ref()))?;
    let commit = now.heads.get("").cloned().flatten().unwrap_or_default();
    let fingerprint = now.fingerprint();
    let message = match &stamp {
        None => format!(
            "QOLA_SKIP_PREPARE=1: using {} as it is; it has never been prepared (no stamp)",
            root.display()
        ),
        Some(stamp) if stamp.fingerprint == fingerprint => format!(
            "QOLA_SKIP_PREPARE=1: using {} as it is (it is the prepared state)",
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
                "QOLA_SKIP_PREPARE=1: using {} as it is; {} path(s) differ from the prepared state: {}",
                root.display(),
                differing.len(),
                name_some(&differing, SKIP_LIST_LIMIT)
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
        ..empty_report(settings)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_file_is_outside_the_checkout() {
        let root = std::path::Path::new("/cache/checkouts/aiter-0123");
        assert!(!crate::prepare::lock::lock_path(root).starts_with(root));
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
        options.prepare_with(&directives).unwrap();
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
    fn the_environment_is_read_only_through_the_helper() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.file_name().is_some_and(|n| n != "env.rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let needle = ["env::", "var"].concat();
                    assert!(
                        !text.contains(&needle),
                        "{} reads the environment directly",
                        path.display()
                    );
                }
            }
        }
    }

    #[test]
    fn name_some_counts_the_rest() {
        let items: Vec<String> = (0..12).map(|i| i.to_string()).collect();
        assert_eq!(name_some(&items[..2], 10), "0, 1");
        assert!(name_some(&items, 10).ends_with("(+2 more)"));
    }
}
