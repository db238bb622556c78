//! Observing the checkout: everything the decision needs, gathered without writing in it.
//!
//! In order, cheapest first: the series, the checkout, the commit, the key and the stamp; then
//! the stat snapshot (the common case, in milliseconds); then the full fingerprint scan; only when
//! neither proves the tree up to date, the pinned repositories, the series applied in memory and
//! every candidate path's states. The only writes are in qola's cache (a renewed snapshot, kept
//! for the executor) and, when a submodule was never cloned, its clone.

use std::collections::{BTreeMap, BTreeSet};

use git2::Repository;

use crate::build_script::{Directives, Env};
use crate::common::tree_path::on_disk;
use crate::prepare::decision::{Checkout, Facts, PathFacts, RepoFacts, StampFacts};
use crate::prepare::git::checkout::open_checkout;
use crate::prepare::git::fetch::{Network, resolve_commit};
use crate::prepare::git::pinned::{Pinned, Pristine};
use crate::prepare::git::state::{Entry, PathState, workdir_entry};
use crate::prepare::git::untracked::untracked;
use crate::prepare::patch::{Applied, FileContent, Series, apply_series, load_series};
use crate::prepare::record::fingerprint::{TreeScan, fingerprint_of, scan};
use crate::prepare::record::key::KeyComponents;
use crate::prepare::record::snapshot::Snapshot;
use crate::prepare::record::stamp::{QolaDir, Stamp};
use crate::prepare::report::error::{PrepareError, Result};
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
pub(crate) struct Context<'a> {
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
}

impl<'a> Context<'a> {
    /// Reads the series (telling Cargo to watch it).
    pub(crate) fn new(
        settings: &'a Settings,
        env: &'a Env<'a>,
        directives: &'a Directives,
        mode: Mode,
    ) -> Result<Context<'a>> {
        let series = load_series(&settings.series)?;
        if let Some(dir) = &series.dir {
            directives.rerun_if_changed(dir);
            for patch in &series.patches {
                directives.rerun_if_changed(&patch.path);
            }
        }
        Ok(Context {
            settings,
            env,
            directives,
            mode,
            series,
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

    /// How this run may reach the network.
    pub(crate) fn network(&self) -> Network<'a> {
        match self.mode {
            Mode::Status | Mode::Diff => Network::Never,
            Mode::Prepare if self.settings.offline => Network::Offline(self.env),
            Mode::Prepare => Network::Online(self.env),
        }
    }
}

/// What observing found: the facts for the decision and what acting on it needs.
pub(crate) struct Observed {
    /// The decision's input.
    pub facts: Facts,
    /// The resolved commit (empty: no checkout).
    pub commit: String,
    /// The key.
    pub key: String,
    /// Its components (recorded in the stamp).
    pub components: Option<KeyComponents>,
    /// The tree's fingerprint now.
    pub fingerprint: String,
    /// The prepared state's fingerprint, when known.
    pub expected_fingerprint: Option<String>,
    /// Untracked paths (`status`).
    pub untracked: Vec<String>,
    /// Warnings (a branch as last fetched).
    pub warnings: Vec<String>,
    /// A snapshot taken before the scan that proved the tree unchanged (`prepare`): the
    /// executor keeps it so the next build is fast again.
    pub renewed_snapshot: Option<Snapshot>,
    /// The pinned state, when the tree had to be compared path by path.
    pub tree: Option<PinnedTree>,
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
/// cloned there.
pub(crate) fn observe(ctx: &Context, cloned: Option<Repository>) -> Result<Observed> {
    let settings = ctx.settings;
    let spec = ctx.spec()?;
    let root = &settings.root;
    let (repo, fresh) = match cloned {
        Some(repo) => (repo, true),
        None => match open_checkout(root)? {
            Some(repo) => (repo, false),
            None => return Ok(missing()),
        },
    };
    let net = ctx.network();
    let qola_dir = QolaDir::new(repo.path());
    let interrupted = !fresh && qola_dir.marker_present();
    let (commit, branch_warning) = resolve_commit(&repo, root, spec, &settings.clone_url, &net)?;
    let components = KeyComponents::new(&settings.url, &commit.to_string(), &ctx.series);
    let key = components.key();
    let stamp = qola_dir.read_stamp();
    let mut observed = Observed {
        facts: Facts {
            checkout: if fresh {
                Checkout::Cloned
            } else {
                Checkout::Present
            },
            interrupted,
            force: settings.force,
            stamp: match &stamp {
                Some(stamp) => StampFacts::Present(components.changes_from(&stamp.components)),
                None if qola_dir.stamp_exists() => StampFacts::Unreadable,
                None => StampFacts::Missing,
            },
            unchanged: false,
            differs: true,
            repos: Vec::new(),
            paths: Vec::new(),
        },
        commit: commit.to_string(),
        key: key.clone(),
        components: Some(components),
        fingerprint: String::new(),
        expected_fingerprint: None,
        untracked: Vec::new(),
        warnings: branch_warning.into_iter().collect(),
        renewed_snapshot: None,
        tree: None,
    };

    // The common case, in milliseconds: the snapshot proves the tree unchanged since it was
    // prepared for this key.
    let trusted = !fresh && !interrupted && !settings.force;
    let current_stamp = stamp.as_ref().filter(|s| trusted && s.key == key);
    let snapshot_file = settings.cache.as_ref().map(|c| Snapshot::file(c, root));
    if let (Some(stamp), Some(file)) = (current_stamp, &snapshot_file)
        && let Some(snap) = Snapshot::read(file)
    {
        // `status` lists untracked paths too: walk for them while the snapshot is checked.
        let (matches, listed) = std::thread::scope(|scope| {
            let walk = (ctx.mode == Mode::Status).then(|| {
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
            observed.facts.unchanged = true;
            observed.fingerprint = stamp.fingerprint.clone();
            observed.expected_fingerprint = Some(stamp.fingerprint.clone());
            observed.untracked = listed.transpose()?.unwrap_or_default();
            return Ok(observed);
        }
    }

    // The full scan decides. When it may find the tree up to date, a new snapshot is taken
    // first (a snapshot must precede the scan that verifies it), so the next build is fast again.
    if let (Some(stamp), Some(_), Mode::Prepare) = (current_stamp, &snapshot_file, ctx.mode) {
        let repos: Vec<String> = stamp.heads.keys().cloned().collect();
        observed.renewed_snapshot = Snapshot::take(root, &repos, &key);
    }
    let now = if fresh {
        TreeScan::default()
    } else {
        scan(
            root,
            ctx.mode == Mode::Status,
            &stamp_submodules(stamp.as_ref()),
        )?
    };
    observed.fingerprint = now.fingerprint();
    observed.untracked = now.untracked.clone();
    if let Some(stamp) = current_stamp.filter(|s| s.fingerprint == observed.fingerprint)
        && ctx.mode != Mode::Diff
    {
        observed.facts.unchanged = true;
        observed.expected_fingerprint = Some(stamp.fingerprint.clone());
        return Ok(observed);
    }
    observed.renewed_snapshot = None;

    let pinned = Pinned::open(root, repo, commit, &settings.clone_url, fresh, &net)?;
    let applied = apply_series(&ctx.series, &pinned, &commit.to_string())?;
    let expected_paths: BTreeMap<String, PathState> = applied
        .files
        .iter()
        .map(|(p, c)| (p.clone(), c.as_ref().map(Entry::of)))
        .collect();
    let expected_fingerprint = fingerprint_of(&pinned.heads(), &expected_paths);
    observed.facts.differs = observed.fingerprint != expected_fingerprint;
    observed.expected_fingerprint = Some(expected_fingerprint);
    let candidates = candidates(&pinned, &applied, &now, stamp.as_ref())?;
    let mut tree = PinnedTree {
        qola_dir,
        pinned,
        applied,
        expected_paths,
        candidates,
        current: BTreeMap::new(),
    };
    observed.facts.paths = path_facts(&mut tree, &now, stamp.as_ref(), fresh, root)?;
    observed.facts.repos = tree
        .pinned
        .repos
        .iter()
        .map(|r| RepoFacts {
            path: r.path.clone(),
            head: now.heads.get(&r.path).cloned().flatten(),
            pinned: r.commit.to_string(),
        })
        .collect();
    observed.tree = Some(tree);
    Ok(observed)
}

/// No checkout at the root.
fn missing() -> Observed {
    Observed {
        facts: Facts {
            checkout: Checkout::Missing,
            interrupted: false,
            force: false,
            stamp: StampFacts::Missing,
            unchanged: false,
            differs: true,
            repos: Vec::new(),
            paths: Vec::new(),
        },
        commit: String::new(),
        key: String::new(),
        components: None,
        fingerprint: String::new(),
        expected_fingerprint: None,
        untracked: Vec::new(),
        warnings: Vec::new(),
        renewed_snapshot: None,
        tree: None,
    }
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
        known.extend(pinned.state_at(&now.heads, path)?);
        let repo_checked_out =
            !matches!(now.heads.get(&pinned.owner(path).0.path), None | Some(None));
        tree.current.insert(path.clone(), now_state.clone());
        facts.push(PathFacts {
            path: path.clone(),
            now: now_state,
            prepared,
            at_pin,
            known,
            staged: now.staged.get(path).cloned(),
            patched: tree.expected_paths.contains_key(path),
            was_patched: stamp.is_none_or(|s| s.paths.contains_key(path)),
            repo_checked_out: fresh || repo_checked_out,
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
