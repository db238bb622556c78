//! Carrying out a decision: the only place where a preparation writes in the checkout.
//!
//! In order: save what must not be lost (local edits of a forced run, what an older qola's
//! interrupted run left, staged content), drop the snapshot, begin the journal (see `journal`:
//! every write below goes through it, and any error undoes them all), check every write, save
//! git's own files, connect the repositories (origin URLs, submodule links), sync the work tree
//! (see the `sync` module), take a new snapshot, verify the tree's fingerprint, write the stamp
//! (the commit point: the journal goes) and the snapshot.

use std::collections::BTreeMap;

use crate::common::io::write_atomic;
use crate::common::time::unix_now;
use crate::common::tree_path::on_disk;
use crate::prepare::decision::Plan;
use crate::prepare::diff::{Change, render};
use crate::prepare::git::workdir_content;
use crate::prepare::journal::{self, Journal, Kind};
use crate::prepare::observe::{Compared, PinnedTree, Run};
use crate::prepare::patch::{Series, parse_patch};
use crate::prepare::record::Snapshot;
use crate::prepare::record::Stamp;
use crate::prepare::record::scan;
use crate::prepare::report::{Action, Preparation, Reason, ReasonKind};
use crate::prepare::report::{LIST_LIMIT, name_some};
use crate::prepare::report::{PrepareError, Result};
use crate::prepare::sync::{SeriesNames, Target, check_writes, sync};

/// Writes the prepared state as `plan` says; `report` is the status's report, completed here.
/// Every write goes through the preparation's journal: an error after the first one undoes them
/// all before it is reported (see `journal`).
pub(crate) fn execute(
    run: &Run,
    compared: Compared,
    plan: &Plan,
    mut report: Preparation,
) -> Result<Preparation> {
    let settings = run.settings;
    let root = &settings.root;
    if !plan.edited.is_empty() {
        save_edits(run, &compared.tree, plan, &mut report)?;
    }
    let snapshot_file = settings.cache.as_ref().map(|c| Snapshot::file(c, root));
    if let Some(file) = &snapshot_file {
        keep_cache_going(Snapshot::remove(file), &mut report, run);
    }
    let git_dir = compared.tree.pinned.repos[0].repo.path().to_path_buf();
    let mut journal = if compared.fresh && journal::dir_of(&git_dir).exists() {
        Journal::resume(&git_dir, run.hooks.clone())?
    } else {
        let kind = if compared.fresh {
            Kind::Clone
        } else {
            Kind::Prepare
        };
        Journal::begin(&git_dir, kind, &compared.key, run.hooks.clone())?
    };
    match write_prepared(
        run,
        compared,
        plan,
        &mut report,
        &mut journal,
        &snapshot_file,
    ) {
        Ok(()) => {
            journal.commit()?;
            Ok(report)
        }
        Err(error) => Err(roll_back(journal, error, root)),
    }
}

/// Undoes what `journal` records after `error`; the error says what became of the tree (and of
/// files someone changed meanwhile, which the rollback saved first).
fn roll_back(journal: Journal, error: PrepareError, root: &std::path::Path) -> PrepareError {
    let dir = journal.dir().to_path_buf();
    match journal.roll_back() {
        Ok(undone) if !undone.rescued.is_empty() => PrepareError::ChangedWhileWriting {
            root: root.to_path_buf(),
            paths: name_some(&undone.rescued, LIST_LIMIT),
            backup: undone.backup.unwrap_or_default(),
            changes: undone.changes,
        },
        Ok(undone) if undone.changes == 0 => error,
        Ok(undone) => PrepareError::RolledBack {
            error: Box::new(error),
            changes: undone.changes,
        },
        Err(undo) => PrepareError::RollbackFailed {
            error: Box::new(error),
            undo: Box::new(undo),
            journal: dir,
        },
    }
}

/// Everything a preparation writes, through `journal`, up to the stamp (its commit point).
fn write_prepared(
    run: &Run,
    compared: Compared,
    plan: &Plan,
    report: &mut Preparation,
    journal: &mut Journal,
    snapshot_file: &Option<std::path::PathBuf>,
) -> Result<()> {
    let root = &run.settings.root;
    let directives = run.directives;
    let Compared {
        mut tree,
        key,
        components,
        expected_fingerprint,
        ..
    } = compared;
    let pinned_heads = tree.pinned.heads();
    let mut targets = BTreeMap::new();
    for path in &tree.candidates {
        targets.insert(
            path.clone(),
            Target {
                content: tree.expected_content(path)?,
                pinned: tree.pinned.state_at(&pinned_heads, path)?.flatten(),
                observed: tree.current.get(path).cloned(),
            },
        );
    }
    let patch_for = |path: &str| last_patch_touching(&run.series, path);
    // Every write is checked before the first (a refusal leaves the tree untouched).
    let checked = check_writes(root, &tree.pinned, &targets, &patch_for)?;
    save_git_files(&tree, journal)?;
    journal.git_write()?;
    tree.pinned.attach(root)?;
    let patches: Vec<String> = run.series.patches.iter().map(|p| p.name.clone()).collect();
    let synced = sync(
        root,
        &tree.pinned,
        &targets,
        &checked,
        &SeriesNames {
            patches: &patches,
            patch_for: &patch_for,
        },
        tree.qola_dir.backup_dir(unix_now()),
        journal,
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
                name_some(paths, LIST_LIMIT)
            );
            directives.warning(&format!("{}: {message}", root.display()));
            report.reasons.push(Reason::new(kind, message));
            report.backup.get_or_insert(dir.clone());
        }
    }

    let repo_paths: Vec<String> = tree.pinned.repos.iter().map(|r| r.path.clone()).collect();
    let snapshot = snapshot_file
        .as_ref()
        .and_then(|_| Snapshot::take(root, &repo_paths, &key));
    journal.step("verify");
    verify(&tree, &pinned_heads, &expected_fingerprint, root)?;
    tree.qola_dir.write_stamp(&Stamp {
        schema: crate::prepare::record::SCHEMA,
        key,
        components,
        fingerprint: expected_fingerprint.clone(),
        heads: pinned_heads,
        paths: tree.expected_paths,
        prepared_at: unix_now(),
        action: plan.action.as_str().to_string(),
    })?;
    journal.step("stamp");
    if let (Some(snapshot), Some(file)) = (snapshot, snapshot_file) {
        keep_cache_going(snapshot.write(file), report, run);
    }
    // The marker an older qola left is done with too.
    tree.qola_dir.clear_marker()?;
    for warning in &tree.applied.notes {
        directives.cargo_warning(warning);
    }
    report.fingerprint = expected_fingerprint;
    Ok(())
}

/// Saves git's own files that the preparation may rewrite (each repository's `index`, `HEAD`,
/// `config`, a submodule's `.git` link and its directory) into the journal, before the first.
fn save_git_files(tree: &PinnedTree, journal: &mut Journal) -> Result<()> {
    for repo in &tree.pinned.repos {
        let git_dir = repo.repo.path();
        for file in ["index", "HEAD", "config"] {
            journal.save_git_file(&git_dir.join(file))?;
        }
        if !repo.path.is_empty() {
            journal.create_dir_all(&repo.workdir)?;
            journal.save_git_file(&repo.workdir.join(".git"))?;
        }
    }
    Ok(())
}

/// Keeps the snapshot that the scan proved right (`up-to-date` in `prepare`): nothing is written
/// in the checkout, only in qola's cache.
pub(crate) fn keep_renewed_snapshot(
    run: &Run,
    renewed: Option<Snapshot>,
    report: &mut Preparation,
) {
    if let (Some(snap), Some(cache)) = (renewed, &run.settings.cache) {
        let file = Snapshot::file(cache, &run.settings.root);
        keep_cache_going(snap.write(&file), report, run);
    }
}

/// Saves, before anything is written: local edits when forced; after an interrupted run, what
/// differs from every known state (half-written by that run, or edited since); staged content
/// apart from the work tree, in a patch of its own.
fn save_edits(run: &Run, tree: &PinnedTree, plan: &Plan, report: &mut Preparation) -> Result<()> {
    let root = &run.settings.root;
    let mut changes = Vec::new();
    for path in &plan.edited {
        changes.push(Change {
            path: path.clone(),
            from: tree.expected_content(path)?,
            to: workdir_content(&on_disk(root, path))?,
        });
    }
    let backup = tree.qola_dir.backup_path(unix_now());
    write_atomic(&backup, &render(&changes))?;
    let staged_backup = backup.with_extension("staged.patch");
    if !plan.staged.is_empty() {
        let mut changes = Vec::new();
        for (path, state) in &plan.staged {
            changes.push(Change {
                path: path.clone(),
                from: tree.expected_content(path)?,
                to: tree.pinned.blob(path, state.as_ref())?,
            });
        }
        write_atomic(&staged_backup, &render(&changes))?;
    }
    let (kind, what) = if plan.action == Action::Forced {
        (ReasonKind::Forced, "local edits")
    } else {
        (
            ReasonKind::Interrupted,
            "files the interrupted run left half-written (or edited since)",
        )
    };
    let mut message = format!(
        "{what}: {} path(s) saved to {} (apply it with `git apply` or add it to the series), then replaced",
        plan.edited.len(),
        backup.display()
    );
    if !plan.staged.is_empty() {
        message.push_str(&format!(
            "; content staged in the index for {} of them saved to {}",
            plan.staged.len(),
            staged_backup.display()
        ));
    }
    run.directives
        .warning(&format!("{}: {message}", root.display()));
    report.reasons.push(Reason::new(kind, message));
    report.backup = Some(backup);
    Ok(())
}

/// Checks that the tree now has the prepared state's fingerprint; names what differs if not.
fn verify(
    tree: &PinnedTree,
    pinned_heads: &BTreeMap<String, Option<String>>,
    expected: &str,
    root: &std::path::Path,
) -> Result<()> {
    let submodules: Vec<String> = tree.pinned.repos[1..]
        .iter()
        .map(|r| r.path.clone())
        .collect();
    let after = scan(root, false, &submodules)?;
    if after.fingerprint() == expected {
        return Ok(());
    }
    let expected_paths = &tree.expected_paths;
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
    Err(PrepareError::Verify {
        root: root.to_path_buf(),
        paths: name_some(&differing, LIST_LIMIT),
    })
}

/// qola's cache is an optimisation: a failure to use it is a warning, never a failed prepare.
fn keep_cache_going(result: Result<()>, report: &mut Preparation, run: &Run) {
    if let Err(e) = result {
        let message = format!("qola's cache is not usable, so the next no-op check is slower: {e}");
        run.directives.warning(&message);
        report.warnings.push(message);
    }
}

/// The name of the last patch of the series that touches `path` (`None`: none does).
fn last_patch_touching(series: &Series, path: &str) -> Option<String> {
    series
        .patches
        .iter()
        .rev()
        .find(|p| {
            parse_patch(&p.name, &p.bytes).is_ok_and(|parsed| {
                parsed.files.iter().any(|f| {
                    f.new_path.as_deref() == Some(path) || f.old_path.as_deref() == Some(path)
                })
            })
        })
        .map(|p| p.name.clone())
}
