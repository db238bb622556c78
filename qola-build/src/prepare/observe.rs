//! Observing the checkout: everything the decision needs, gathered without writing in it.
//!
//! In order, cheapest first, each step its own function: [`open_checkout_of`] (is there one?),
//! [`key_and_stamp`] (the commit, the key, the stamp), [`proved_by_snapshot`] (the common case,
//! in milliseconds), [`proved_by_scan`] (the full fingerprint scan), and only when neither
//! proves the tree up to date, [`compare`]: the pinned repositories, the series applied in
//! memory and every candidate path's states. The only writes are in qola's cache (a renewed
//! snapshot, kept for the executor) and, when a submodule was never cloned, its clone.
//!
//! What observing found is a value, [`Found`]: a skip that was asked for, no checkout, what a
//! run that never fetches would need to fetch, a tree proved unchanged, or the [`Facts`] of a
//! tree compared path by path together with that tree ([`Compared`]), which the decision hands
//! on to the executor.

use std::collections::{BTreeMap, BTreeSet};

use git2::{Oid, Repository};

use crate::build_script::{Directives, Env};
use crate::common::hooks::Hooks;
use crate::common::tree_path::on_disk;
use crate::prepare::ck_jit_hints::left_by_ck_jit;
use crate::prepare::decision::{Checkout, Facts, Found, PathFacts, RepoFacts, Resumed, StampFacts};
use crate::prepare::git::open_checkout;
use crate::prepare::git::untracked_paths;
use crate::prepare::git::{Entry, PathState, workdir_content, workdir_entry};
use crate::prepare::git::{Fetcher, Network, Reach, resolve_commit};
use crate::prepare::git::{Pinned, Pristine};
use crate::prepare::journal;
use crate::prepare::patch::{
    Applied, FileContent, Series, apply_series, load_series, spec_excluded, written_for,
};
use crate::prepare::record::KeyComponents;
use crate::prepare::record::Snapshot;
use crate::prepare::record::{QolaDir, Stamp};
use crate::prepare::record::{TreeScan, fingerprint_of, scan};
use crate::prepare::report::{PrepareError, Result};
use crate::prepare::settings::Settings;

/// What a run may do: `prepare` writes, `status` and `diff` only read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// `prepare`: may clone and fetch.
    Prepare,
    /// `status`: never fetches, lists untracked paths.
    Status,
    /// `diff`: never fetches.
    Diff,
}

/// One run's inputs.
pub(crate) struct Run<'a> {
    /// The resolved settings.
    pub settings: &'a Settings,
    /// The tracked environment.
    pub env: &'a Env<'a>,
    /// Cargo's directives.
    pub directives: &'a Directives,
    /// What the run may do.
    pub mode: Mode,
    /// The series on disk.
    pub series: Series,
    /// Tests' hooks (empty otherwise).
    pub hooks: Hooks,
}

impl<'a> Run<'a> {
    /// Reads the series (telling Cargo to watch it).
    pub(crate) fn new(settings: &'a Settings, env: &'a Env<'a>, mode: Mode) -> Result<Run<'a>> {
        let directives = env.directives();
        let series = load_series(&settings.series)?;
        // qola's own series pinned to a commit it is not written for: refused before anything
        // is cloned or fetched when the spec is a SHA (a name is checked once resolved).
        if series.bundled
            && !settings.skip
            && let Some(spec) = &settings.commit
            && spec_excluded(spec)
        {
            return Err(series_not_for(settings, spec.clone()));
        }
        for warning in &series.warnings {
            directives.cargo_warning(warning);
        }
        if let Some(dir) = &series.dir {
            directives.rerun_if_changed(dir);
            for patch in &series.patches {
                directives.rerun_if_changed(&patch.path);
            }
        }
        let mut hooks = Hooks::from_env(|name| env.var(name).ok().flatten());
        if let Some(n) = settings.fail_after_writes {
            hooks.fail_after_writes = Some(n);
        }
        Ok(Run {
            settings,
            env,
            directives,
            mode,
            series,
            hooks,
        })
    }

    /// The commit spec, which every run but a skip needs.
    pub(crate) fn spec(&self) -> Result<&str> {
        self.settings
            .commit
            .as_deref()
            .ok_or_else(|| PrepareError::NoCommit {
                manifest: self
                    .settings
                    .manifest_path
                    .as_ref()
                    .map_or("none found".to_string(), |p| p.display().to_string()),
            })
    }

    /// What a preparation fetches with.
    pub(crate) fn fetcher(&self) -> Fetcher<'_> {
        Fetcher {
            env: self.env,
            offline: self.settings.offline,
            hooks: &self.hooks,
        }
    }

    /// How this run may reach the network.
    pub(crate) fn network(&self) -> Network<'_> {
        match self.mode {
            Mode::Status | Mode::Diff => Network::Never,
            Mode::Prepare => Network::Fetch(self.fetcher()),
        }
    }
}

/// What observing found.
pub(crate) struct Observed<T = Compared> {
    /// What the report shows, whatever was found.
    pub seen: Seen,
    /// A snapshot taken before the scan that proved the tree unchanged (`prepare`): the
    /// executor keeps it so the next build is fast again.
    pub renewed_snapshot: Option<Snapshot>,
    /// What was found: the decision's input.
    pub found: Found<T>,
}

/// What a report shows of an observation.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// The resolved commit (empty: not resolved).
    pub commit: String,
    /// The key.
    pub key: String,
    /// The tree's fingerprint now.
    pub fingerprint: String,
    /// The prepared state's fingerprint, when known.
    pub expected_fingerprint: Option<String>,
    /// Untracked paths (`status`).
    pub untracked: Vec<String>,
    /// Warnings (a branch as last fetched).
    pub warnings: Vec<String>,
}

/// A tree compared path by path: everything a preparation needs to write the prepared state.
pub(crate) struct Compared {
    /// The pinned repositories, the series applied, the candidate paths.
    pub tree: PinnedTree,
    /// The key, recorded in the stamp.
    pub key: String,
    /// Its components (recorded in the stamp).
    pub components: KeyComponents,
    /// The prepared state's fingerprint.
    pub expected_fingerprint: String,
    /// The checkout is a first clone (this run's, or one an interrupted run left): its journal
    /// is finished, not rolled back, when interrupted.
    pub fresh: bool,
}

/// The pinned repositories and the series applied to them, with the tree's candidate paths.
pub(crate) struct PinnedTree {
    /// The checkout's `.git/qola/`.
    pub qola_dir: QolaDir,
    /// The repositories at their pinned commits.
    pub pinned: Pinned,
    /// The series applied in memory.
    pub applied: Applied,
    /// The prepared state of every path the series changes.
    pub expected_paths: BTreeMap<String, PathState>,
    /// Every path whose state may differ.
    pub candidates: BTreeSet<String>,
    /// Each candidate's work-tree state as observed.
    pub current: BTreeMap<String, PathState>,
}

impl PinnedTree {
    /// The prepared content of `path`: the series' result, else the pinned file.
    pub(crate) fn expected_content(&self, path: &str) -> Result<Option<FileContent>> {
        if let Some(content) = self.applied.files.get(path) {
            return Ok(content.clone());
        }
        Ok(match self.pinned.read(path)? {
            Pristine::File(content) => Some(content),
            _ => None,
        })
    }
}

/// Observes the checkout at the settings' root; with `cloned`, the repository this run just
/// cloned there; `resumed`: what became of a journal an interrupted run left (see `journal`).
pub(crate) fn observe(run: &Run, cloned: Option<Repository>, resumed: Resumed) -> Result<Observed> {
    let found = |seen, found| Observed {
        seen,
        renewed_snapshot: None,
        found,
    };
    if run.settings.skip && run.mode != Mode::Diff {
        return Ok(found(Seen::default(), Found::Skip));
    }
    let spec = run.spec()?;
    let Some((repo, fresh)) = open_checkout_of(run, cloned)? else {
        return Ok(found(Seen::default(), Found::Missing));
    };
    // A first clone an interrupted run left is finished as a fresh one: nothing in it is an
    // edit.
    let fresh = fresh || resumed == Resumed::Clone;
    if run.mode == Mode::Status
        && let Some((kind, changes)) = journal::pending(repo.path())
    {
        return Ok(found(Seen::default(), Found::Pending { kind, changes }));
    }
    let net = run.network();
    let (commit, branch_warning) = match resolve_commit(
        &repo,
        &run.settings.root,
        spec,
        &run.settings.clone_url,
        &net,
    )? {
        Reach::Got(resolved) => resolved,
        Reach::NeedsFetch(what) => return Ok(found(Seen::default(), Found::NeedsFetch(what))),
    };
    if run.series.bundled && !run.series.written_for.contains(&commit.to_string()) {
        return Err(series_not_for(run.settings, format!("{spec} ({commit})")));
    }
    let keyed = key_and_stamp(run, &repo, commit, fresh, resumed);
    let mut seen = Seen {
        commit: commit.to_string(),
        key: keyed.key.clone(),
        warnings: branch_warning.into_iter().collect(),
        ..Seen::default()
    };
    if let Some(proof) = proved_by_snapshot(run, &keyed)? {
        seen.fingerprint = proof.fingerprint.clone();
        seen.expected_fingerprint = Some(proof.fingerprint);
        seen.untracked = proof.untracked;
        return Ok(found(seen, Found::Unchanged));
    }
    let (now, renewed_snapshot) = proved_by_scan(run, &keyed)?;
    seen.fingerprint = now.fingerprint();
    seen.untracked = now.untracked.clone();
    if let Some(stamp) = keyed.current_stamp()
        && stamp.fingerprint == seen.fingerprint
        && run.mode != Mode::Diff
    {
        seen.expected_fingerprint = Some(stamp.fingerprint.clone());
        return Ok(Observed {
            seen,
            renewed_snapshot,
            found: Found::Unchanged,
        });
    }
    let pinned = match Pinned::open(
        &run.settings.root,
        repo,
        commit,
        &run.settings.clone_url,
        fresh,
        &net,
    )? {
        Reach::Got(pinned) => pinned,
        Reach::NeedsFetch(what) => return Ok(found(seen, Found::NeedsFetch(what))),
    };
    let (facts, compared) = compare(run, keyed, pinned, &now, fresh)?;
    seen.expected_fingerprint = Some(compared.expected_fingerprint.clone());
    Ok(found(
        seen,
        Found::Compared {
            facts,
            tree: compared,
        },
    ))
}

/// The refusal of qola's own series for `commit` (see [`PrepareError::SeriesNotForCommit`]).
fn series_not_for(settings: &Settings, commit: String) -> PrepareError {
    PrepareError::SeriesNotForCommit {
        manifest: settings.manifest_path.clone(),
        commit,
        written_for: written_for().into_iter().map(String::from).collect(),
    }
}

/// The repository at the root and whether this run cloned it (`None`: no checkout).
fn open_checkout_of(run: &Run, cloned: Option<Repository>) -> Result<Option<(Repository, bool)>> {
    Ok(match cloned {
        Some(repo) => Some((repo, true)),
        None => open_checkout(&run.settings.root)?.map(|repo| (repo, false)),
    })
}

/// The key of the resolved commit and what the checkout's stamp says.
struct Keyed {
    key: String,
    components: KeyComponents,
    stamp: Option<Stamp>,
    stamp_exists: bool,
    qola_dir: QolaDir,
    /// The checkout was just cloned by this run (or an interrupted clone is finished).
    fresh: bool,
    /// What an interrupted run left, and what became of it.
    resumed: Resumed,
    /// The stamp may prove the tree unchanged: not fresh, not interrupted, not forced.
    trusted: bool,
}

impl Keyed {
    /// The stamp, when it is for this key and may be trusted.
    fn current_stamp(&self) -> Option<&Stamp> {
        self.stamp
            .as_ref()
            .filter(|s| self.trusted && s.key == self.key)
    }
}

/// The key for `commit` and the stamp of the checkout.
fn key_and_stamp(
    run: &Run,
    repo: &Repository,
    commit: Oid,
    fresh: bool,
    resumed: Resumed,
) -> Keyed {
    let qola_dir = QolaDir::new(repo.path());
    // The marker an older qola left while it wrote: interrupted, with no journal to undo it.
    let resumed = if resumed == Resumed::None && !fresh && qola_dir.marker_present() {
        Resumed::Unjournaled
    } else {
        resumed
    };
    let components = KeyComponents::new(&run.settings.url, &commit.to_string(), &run.series);
    Keyed {
        key: components.key(),
        components,
        stamp: qola_dir.read_stamp(),
        stamp_exists: qola_dir.stamp_exists(),
        qola_dir,
        fresh,
        trusted: !fresh && resumed == Resumed::None && !run.settings.force,
        resumed,
    }
}

/// What proved a tree unchanged.
struct Proof {
    fingerprint: String,
    untracked: Vec<String>,
}

/// The common case, in milliseconds: the snapshot proves the tree unchanged since it was
/// prepared for this key. `status` lists untracked paths too: walked while the snapshot is
/// checked.
fn proved_by_snapshot(run: &Run, keyed: &Keyed) -> Result<Option<Proof>> {
    let root = &run.settings.root;
    let (Some(stamp), Some(cache)) = (keyed.current_stamp(), &run.settings.cache) else {
        return Ok(None);
    };
    let Some(snap) = Snapshot::read(&Snapshot::file(cache, root)) else {
        return Ok(None);
    };
    let (matches, listed) = std::thread::scope(|scope| {
        let walk = (run.mode == Mode::Status).then(|| {
            scope.spawn(|| {
                let (files, repos) = snap.tracked();
                untracked_paths(root, &files, &repos)
            })
        });
        let matches = snap.matches(root, &keyed.key);
        (
            matches,
            walk.map(|w| w.join().expect("the untracked walk panicked")),
        )
    });
    if !matches {
        return Ok(None);
    }
    Ok(Some(Proof {
        fingerprint: stamp.fingerprint.clone(),
        untracked: listed.transpose()?.unwrap_or_default(),
    }))
}

/// The full scan of the tree's state. When it may find the tree up to date (`prepare`), a new
/// snapshot is taken first (a snapshot must precede the scan that verifies it), so the next
/// build is fast again: returned to be kept only if the scan proves the tree unchanged.
fn proved_by_scan(run: &Run, keyed: &Keyed) -> Result<(TreeScan, Option<Snapshot>)> {
    let root = &run.settings.root;
    let renewed = match (keyed.current_stamp(), &run.settings.cache, run.mode) {
        (Some(stamp), Some(_), Mode::Prepare) => {
            let repos: Vec<String> = stamp.heads.keys().cloned().collect();
            Snapshot::take(root, &repos, &keyed.key)
        }
        _ => None,
    };
    let now = if keyed.fresh {
        TreeScan::default()
    } else {
        scan(
            root,
            run.mode == Mode::Status,
            &stamp_submodules(keyed.stamp.as_ref()),
        )?
    };
    Ok((now, renewed))
}

/// The tree compared path by path with the prepared state: the series applied to the pinned
/// repositories, the candidate paths and every state each has or had.
fn compare(
    run: &Run,
    keyed: Keyed,
    pinned: Pinned,
    now: &TreeScan,
    fresh: bool,
) -> Result<(Facts, Compared)> {
    let commit = pinned.repos[0].commit.to_string();
    let applied = apply_series(&run.series, &pinned, &commit)?;
    let expected_paths: BTreeMap<String, PathState> = applied
        .files
        .iter()
        .map(|(p, c)| (p.clone(), c.as_ref().map(Entry::of)))
        .collect();
    let expected_fingerprint = fingerprint_of(&pinned.heads(), &expected_paths);
    let candidates = candidates(&pinned, &applied, now, keyed.stamp.as_ref())?;
    let mut tree = PinnedTree {
        qola_dir: keyed.qola_dir,
        pinned,
        applied,
        expected_paths,
        candidates,
        current: BTreeMap::new(),
    };
    let paths = path_facts(
        &mut tree,
        now,
        keyed.stamp.as_ref(),
        fresh,
        &run.settings.root,
    )?;
    let repos = tree
        .pinned
        .repos
        .iter()
        .map(|r| RepoFacts {
            path: r.path.clone(),
            head: now.heads.get(&r.path).cloned().flatten(),
            pinned: r.commit.to_string(),
        })
        .collect();
    let facts = Facts {
        checkout: if fresh {
            Checkout::Cloned
        } else {
            Checkout::Present
        },
        resumed: keyed.resumed,
        force: run.settings.force,
        stamp: match &keyed.stamp {
            Some(stamp) => StampFacts::Present(keyed.components.changes_from(&stamp.components)),
            None if keyed.stamp_exists => StampFacts::Unreadable,
            None => StampFacts::Missing,
        },
        differs: now.fingerprint() != expected_fingerprint,
        repos,
        paths,
    };
    Ok((
        facts,
        Compared {
            tree,
            key: keyed.key,
            components: keyed.components,
            expected_fingerprint,
            fresh,
        },
    ))
}

/// Every state of every candidate path (and each one's work-tree state, kept in `tree.current`
/// for the executor's last check).
fn path_facts(
    tree: &mut PinnedTree,
    now: &TreeScan,
    stamp: Option<&Stamp>,
    fresh: bool,
    root: &std::path::Path,
) -> Result<Vec<PathFacts>> {
    let pinned = &tree.pinned;
    let pinned_heads = pinned.heads();
    let mut facts = Vec::new();
    for path in &tree.candidates {
        let now_state = match now.paths.get(path) {
            Some(state) => state.clone(),
            None if fresh => None,
            None => workdir_entry(&on_disk(root, path))?,
        };
        let at_pin = pinned.state_at(&pinned_heads, path)?.flatten();
        let prepared = match tree.expected_paths.get(path) {
            Some(state) => state.clone(),
            None => at_pin.clone(),
        };
        let mut known = Vec::new();
        if let Some(stamp) = stamp {
            if let Some(state) = stamp.paths.get(path) {
                known.push(state.clone());
            }
            known.extend(pinned.state_at(&stamp.heads, path)?);
        }
        let at_head = pinned.state_at(&now.heads, path)?;
        known.extend(at_head.clone());
        // A file the status did not list although `HEAD` lacks it is untracked: the index lacks
        // it too (a file the series created, then `git rm --cached`).
        let staged = match now.staged.get(path) {
            Some(state) => Some(state.clone()),
            None if !fresh
                && !now.paths.contains_key(path)
                && now_state.is_some()
                && at_head == Some(None) =>
            {
                Some(None)
            }
            None => None,
        };
        let repo_checked_out =
            !matches!(now.heads.get(&pinned.owner(path).0.path), None | Some(None));
        let ck_jit_hints = now_state.is_some()
            && prepared.is_some()
            && now_state != prepared
            && path.ends_with(".py")
            && left_by_ck_jit(
                tree.expected_content(path)?,
                workdir_content(&on_disk(root, path))?,
            );
        tree.current.insert(path.clone(), now_state.clone());
        facts.push(PathFacts {
            path: path.clone(),
            now: now_state,
            prepared,
            at_pin,
            known,
            staged,
            patched: tree.expected_paths.contains_key(path),
            was_patched: stamp.is_none_or(|s| s.paths.contains_key(path)),
            repo_checked_out: fresh || repo_checked_out,
            ck_jit_hints,
        });
    }
    Ok(facts)
}

/// The submodule paths a stamp recorded (hints that let a scan start them early).
pub(crate) fn stamp_submodules(stamp: Option<&Stamp>) -> Vec<String> {
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
