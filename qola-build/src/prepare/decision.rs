//! The decision, as a value: what the observed tree needs ([`decide`], a pure function of what
//! observing [`Found`]), before anything acts on it.
//!
//! The table it implements is in the crate docs, one [`Decision`] per row: a skip that was asked
//! for skips; no checkout clones; a run that never fetches and would need to says so; a tree
//! proved to be the prepared state for the current key is up to date; otherwise every candidate
//! path is classified (prepared, back at the pinned commit, or a local edit: content, in the work
//! tree or staged, that differs from every state qola or git put there); local edits refuse the
//! run unless it is forced or recovers an interrupted one; the rest prepares, naming why, and
//! adopts a tree that already is the prepared state. A preparation carries the compared tree
//! it acts on (`T`), so acting needs nothing the decision did not see.

use crate::prepare::git::PathState;
use crate::prepare::report::Action;
pub(crate) use crate::prepare::report::Resumed;
use crate::prepare::report::{Difference, How, Why};

/// How the checkout was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checkout {
    /// Cloned by this run: its work tree is still empty.
    Cloned,
    /// There, as the user left it.
    Present,
}

/// What the stamp says about the last preparation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StampFacts {
    /// None: the first preparation of this checkout.
    Missing,
    /// Corrupt or from another qola.
    Unreadable,
    /// The key's components changed this way since (empty: the same key).
    Present(Vec<Why>),
}

/// One repository of the pinned state, as the tree has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RepoFacts {
    /// Its path ("" for AITER).
    pub path: String,
    /// Its `HEAD` now (`None`: not checked out).
    pub head: Option<String>,
    /// The commit the pinned state records for it.
    pub pinned: String,
}

/// One candidate path: every state it has or had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathFacts {
    /// Superproject-relative key.
    pub path: String,
    /// Its work-tree state now.
    pub now: PathState,
    /// Its prepared state.
    pub prepared: PathState,
    /// Its state at the pinned commit.
    pub at_pin: PathState,
    /// Every other state qola or git put there (the stamp's, an old pin's, `HEAD`'s).
    pub known: Vec<PathState>,
    /// Its index entry, when staged apart from the work tree.
    pub staged: Option<PathState>,
    /// The series changes it.
    pub patched: bool,
    /// The last preparation had patched it (or there is no stamp to say).
    pub was_patched: bool,
    /// Its repository is checked out (a deinit-ed submodule is not).
    pub repo_checked_out: bool,
    /// It is its prepared content with ck-jit's codegen hints and nothing else: the residue of a
    /// ck-jit run that did not end (see `ck_jit_hints`), not an edit.
    pub ck_jit_hints: bool,
}

/// Everything the decision needs about a tree compared path by path, gathered by `observe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    /// The checkout.
    pub checkout: Checkout,
    /// What an interrupted run left, and what became of it.
    pub resumed: Resumed,
    /// `QOLA_FORCE_PREPARE=1`.
    pub force: bool,
    /// The stamp.
    pub stamp: StampFacts,
    /// The fingerprint of the tree differs from the prepared state's.
    pub differs: bool,
    /// The repositories (superproject first).
    pub repos: Vec<RepoFacts>,
    /// The candidate paths.
    pub paths: Vec<PathFacts>,
}

/// What observing found, the decision's input; `T` is what a preparation acts on (the compared tree).
#[derive(Debug)]
pub(crate) enum Found<T> {
    /// `QOLA_SKIP_PREPARE=1`: nothing was looked at.
    Skip,
    /// No checkout at the root.
    Missing,
    /// A run that never fetches cannot answer without a fetch (what for).
    NeedsFetch(String),
    /// The snapshot or the fingerprint proved the tree is the prepared state for this key.
    Unchanged,
    /// `status`: a journal an interrupted preparation left (its kind, how many changes); the
    /// tree is in between, so it is not compared.
    Pending {
        /// Whose journal.
        kind: crate::prepare::journal::Kind,
        /// How many changes it records.
        changes: usize,
    },
    /// The tree, compared path by path with the prepared state.
    Compared {
        /// The decision's input.
        facts: Facts,
        /// What a preparation acts on.
        tree: T,
    },
}

/// What to do; a preparation carries `T`, what it acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision<T> {
    /// `QOLA_SKIP_PREPARE=1`: use the tree as it is, write nothing.
    Skip,
    /// No checkout: clone, then decide on the clone.
    Clone,
    /// A run that never fetches (`status`, `diff`) cannot answer without a fetch (what for).
    FetchNeeded(String),
    /// `status`: prepare first finishes what an interrupted preparation left (see `journal`).
    FinishInterrupted {
        /// It is a first clone's.
        clone: bool,
        /// How many changes its journal records.
        changes: usize,
    },
    /// Nothing: the tree is the prepared state.
    UpToDate,
    /// Local edits: change nothing.
    Refuse {
        /// Why the tree is not the prepared state.
        whys: Vec<Why>,
        /// The edited paths.
        edited: Vec<String>,
    },
    /// Write the prepared state.
    Prepare {
        /// How and why.
        plan: Plan,
        /// The compared tree to write it into.
        tree: T,
    },
}

/// A preparation to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `clone`, `recover`, `forced` or `resync`.
    pub action: Action,
    /// Why.
    pub whys: Vec<Why>,
    /// Paths to save before writing (forced: local edits; recover: what the run left).
    pub edited: Vec<String>,
    /// Of those, content staged apart from the work tree (saved separately).
    pub staged: Vec<(String, PathState)>,
}

/// A candidate path, judged.
#[derive(Debug, Default)]
struct Verdicts {
    edited: Vec<String>,
    ck_jit_hints: Vec<String>,
    staged: Vec<(String, PathState)>,
    reverted: Vec<String>,
    differing: Vec<Difference>,
}

/// How `now` differs from `prepared`, or how the index does (`staged`), if at all.
fn how_differs(now: &PathState, prepared: &PathState, staged: Option<&PathState>) -> Option<How> {
    match (now, prepared) {
        (None, Some(_)) => return Some(How::Missing),
        (Some(_), None) => return Some(How::Extra),
        (Some(n), Some(p)) if n.id == p.id && n.mode != p.mode => return Some(How::Mode),
        (Some(n), Some(p)) if n != p => return Some(How::Content),
        _ => {}
    }
    match staged {
        Some(None) => Some(How::Unstaged),
        Some(s) if s != now => Some(How::Staged),
        _ => None,
    }
}

/// The decision for what observing found (pure: it looks, and hands the tree on).
pub(crate) fn decide<T>(found: Found<T>) -> Decision<T> {
    match found {
        Found::Skip => Decision::Skip,
        Found::Missing => Decision::Clone,
        Found::NeedsFetch(what) => Decision::FetchNeeded(what),
        Found::Unchanged => Decision::UpToDate,
        Found::Pending { kind, changes } => Decision::FinishInterrupted {
            clone: kind == crate::prepare::journal::Kind::Clone,
            changes,
        },
        Found::Compared { facts, tree } => match judge_tree(&facts) {
            Ok(plan) => Decision::Prepare { plan, tree },
            Err((whys, edited)) => Decision::Refuse { whys, edited },
        },
    }
}

/// A tree compared path by path: the plan that prepares it, or why and which local edits
/// refuse it.
fn judge_tree(facts: &Facts) -> Result<Plan, (Vec<Why>, Vec<String>)> {
    let cloned = facts.checkout == Checkout::Cloned;
    let verdicts = judge(facts, cloned);
    let mut whys = Vec::new();
    if facts.resumed != Resumed::None {
        whys.push(Why::Interrupted(facts.resumed));
    }
    if !verdicts.ck_jit_hints.is_empty() {
        whys.push(Why::CkJitHints(verdicts.ck_jit_hints.clone()));
    }
    if !cloned {
        whys.extend(tree_whys(facts, &verdicts.reverted));
        if whys.is_empty() && facts.differs && !verdicts.differing.is_empty() {
            whys.push(Why::Differs(verdicts.differing.clone()));
        }
    }
    let unjournaled = facts.resumed == Resumed::Unjournaled;
    if !verdicts.edited.is_empty() && !facts.force && !unjournaled {
        return Err((whys, verdicts.edited));
    }
    let heads_at_pin = facts
        .repos
        .iter()
        .all(|r| r.head.as_deref() == Some(r.pinned.as_str()));
    // The work tree is the new prepared state: only index entries (of known content, or they
    // would be edits) and the stamp are written.
    let tree_prepared = facts.paths.iter().all(|p| p.now == p.prepared);
    if !cloned && tree_prepared && heads_at_pin {
        whys.push(Why::Adopted);
    }
    let action = if facts.resumed != Resumed::None {
        Action::Recover
    } else if cloned {
        Action::Clone
    } else if facts.force {
        Action::Forced
    } else {
        Action::Resync
    };
    Ok(Plan {
        action,
        whys,
        edited: verdicts.edited,
        staged: verdicts.staged,
    })
}

/// Classifies every candidate path.
fn judge(facts: &Facts, cloned: bool) -> Verdicts {
    let mut verdicts = Verdicts::default();
    for p in &facts.paths {
        if let Some(how) = how_differs(&p.now, &p.prepared, p.staged.as_ref()) {
            verdicts.differing.push(Difference {
                path: p.path.clone(),
                how,
            });
        }
        if p.now != p.prepared {
            // Back at the pinned commit although the previous preparation had patched it.
            if p.now == p.at_pin && p.patched && p.was_patched {
                verdicts.reverted.push(p.path.clone());
            }
        }
        let known = |state: &PathState| {
            *state == p.prepared || *state == p.at_pin || p.known.contains(state)
        };
        // After an interrupted run, a missing file is one it had not written yet; in a
        // repository that is not checked out, one never checked out: restoring it loses nothing.
        let unwritten =
            (facts.resumed == Resumed::Unjournaled || !p.repo_checked_out) && p.now.is_none();
        // Content staged apart from the work tree is the user's too.
        let staged = p.staged.as_ref().filter(|s| **s != p.now && !known(s));
        if let Some(staged) = staged {
            verdicts.staged.push((p.path.clone(), staged.clone()));
        }
        if !cloned && !unwritten && (!known(&p.now) || staged.is_some()) {
            match p.ck_jit_hints && staged.is_none() {
                true => verdicts.ck_jit_hints.push(p.path.clone()),
                false => verdicts.edited.push(p.path.clone()),
            }
        }
    }
    verdicts
}

/// Why the tree is not the prepared state: the key's changes, moved or missing repositories,
/// lost patches.
fn tree_whys(facts: &Facts, reverted: &[String]) -> Vec<Why> {
    let mut whys = match &facts.stamp {
        StampFacts::Missing => vec![Why::NoStamp],
        StampFacts::Unreadable => vec![Why::UnreadableStamp],
        StampFacts::Present(changes) => changes.clone(),
    };
    let commit_changed = whys.iter().any(|w| matches!(w, Why::Commit { .. }));
    for repo in &facts.repos {
        match &repo.head {
            None => whys.push(Why::SubmoduleMissing(repo.path.clone())),
            Some(head) if *head != repo.pinned && !commit_changed => whys.push(Why::HeadMoved {
                repo: repo.path.clone(),
                head: head.clone(),
                pinned: repo.pinned.clone(),
            }),
            Some(_) => {}
        }
    }
    if !reverted.is_empty() {
        whys.push(Why::PatchReverted(reverted.to_vec()));
    }
    whys
}

#[cfg(test)]
mod tests {
    //! The decision table, row by row, on constructed facts (no git).

    use super::*;
    use crate::prepare::git::Entry;

    fn state(id: &str) -> PathState {
        Some(Entry {
            mode: 0o100644,
            id: id.repeat(40 / id.len()),
        })
    }

    /// A prepared path: the series patched it, the tree has the prepared content.
    fn patched(path: &str, now: PathState) -> PathFacts {
        PathFacts {
            path: path.to_string(),
            now,
            prepared: state("b"),
            at_pin: state("a"),
            known: Vec::new(),
            staged: None,
            patched: true,
            was_patched: true,
            repo_checked_out: true,
            ck_jit_hints: false,
        }
    }

    fn repo(path: &str, head: Option<&str>) -> RepoFacts {
        RepoFacts {
            path: path.to_string(),
            head: head.map(String::from),
            pinned: "p".repeat(40),
        }
    }

    fn facts(paths: Vec<PathFacts>) -> Facts {
        Facts {
            checkout: Checkout::Present,
            resumed: Resumed::None,
            force: false,
            stamp: StampFacts::Present(Vec::new()),
            differs: true,
            repos: vec![repo("", Some(&"p".repeat(40)))],
            paths,
        }
    }

    /// The decision for a tree compared path by path with these facts.
    fn decide_facts(facts: &Facts) -> Decision<()> {
        decide(Found::Compared {
            facts: facts.clone(),
            tree: (),
        })
    }

    fn plan(decision: Decision<()>) -> Plan {
        match decision {
            Decision::Prepare { plan, tree: () } => plan,
            other => panic!("expected a preparation, got {other:?}"),
        }
    }

    #[test]
    fn a_requested_skip_skips() {
        assert_eq!(decide(Found::<()>::Skip), Decision::Skip);
    }

    #[test]
    fn no_checkout_clones() {
        assert_eq!(decide(Found::<()>::Missing), Decision::Clone);
    }

    #[test]
    fn a_needed_fetch_is_a_decision_naming_it() {
        assert_eq!(
            decide(Found::<()>::NeedsFetch("fetch `main`".to_string())),
            Decision::FetchNeeded("fetch `main`".to_string())
        );
    }

    #[test]
    fn a_tree_proved_unchanged_is_up_to_date() {
        assert_eq!(decide(Found::<()>::Unchanged), Decision::UpToDate);
    }

    #[test]
    fn a_fresh_clone_prepares_without_calling_missing_files_edits() {
        let f = Facts {
            checkout: Checkout::Cloned,
            stamp: StampFacts::Missing,
            ..facts(vec![patched("f", None)])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.action, Action::Clone);
        assert!(p.edited.is_empty() && p.whys.is_empty(), "{p:?}");
    }

    #[test]
    fn a_path_back_at_the_pinned_commit_resyncs_as_a_reverted_patch() {
        let p = plan(decide_facts(&facts(vec![patched("f", state("a"))])));
        assert_eq!(p.action, Action::Resync);
        assert_eq!(p.whys, vec![Why::PatchReverted(vec!["f".to_string()])]);
    }

    #[test]
    fn a_changed_key_resyncs_with_its_reasons() {
        let change = Why::PatchAdded("0004.patch".to_string());
        let f = Facts {
            stamp: StampFacts::Present(vec![change.clone()]),
            ..facts(vec![patched("f", state("a"))])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.whys[0], change);
    }

    #[test]
    fn a_tree_that_already_is_the_new_prepared_state_is_adopted() {
        let f = Facts {
            stamp: StampFacts::Present(vec![Why::PatchAdded("0004.patch".to_string())]),
            ..facts(vec![patched("f", state("b"))])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.action, Action::Resync);
        assert_eq!(p.whys.last(), Some(&Why::Adopted));
    }

    #[test]
    fn a_tree_that_is_the_new_prepared_state_with_only_the_index_behind_is_adopted() {
        // A file the series created, deleted by the user and the deletion added to the series:
        // the work tree is the new prepared state, the index still has the file (known content).
        let mut gone = patched("created.h", None);
        gone.prepared = None;
        gone.at_pin = None;
        gone.staged = Some(state("c"));
        gone.known = vec![state("c")];
        let f = Facts {
            stamp: StampFacts::Present(vec![Why::PatchAdded("0004.patch".to_string())]),
            ..facts(vec![gone])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.whys.last(), Some(&Why::Adopted), "{:?}", p.whys);
    }

    #[test]
    fn a_local_edit_refuses_and_names_the_path() {
        let d = decide_facts(&facts(vec![patched("f", state("e"))]));
        assert!(
            matches!(&d, Decision::Refuse { edited, .. } if edited == &["f".to_string()]),
            "{d:?}"
        );
    }

    #[test]
    fn ck_jit_s_hints_left_applied_are_undone_and_named_not_refused() {
        let mut hinted = patched("ck/ops/fmha_fwd.py", state("h"));
        hinted.ck_jit_hints = true;
        let p = plan(decide_facts(&facts(vec![hinted.clone()])));
        assert_eq!(p.action, Action::Resync);
        assert!(p.edited.is_empty(), "{p:?}");
        assert_eq!(
            p.whys,
            vec![Why::CkJitHints(vec!["ck/ops/fmha_fwd.py".to_string()])]
        );
        // With a user's edit elsewhere the tree is refused as any edit is, naming the edit only.
        let d = decide_facts(&facts(vec![hinted, patched("csrc/mine.h", state("e"))]));
        assert!(
            matches!(&d, Decision::Refuse { edited, whys } if edited == &["csrc/mine.h".to_string()]
                && whys.contains(&Why::CkJitHints(vec!["ck/ops/fmha_fwd.py".to_string()]))),
            "{d:?}"
        );
    }

    #[test]
    fn content_known_from_the_stamp_or_head_is_not_an_edit() {
        let mut path = patched("f", state("e"));
        path.known = vec![state("e")];
        let p = plan(decide_facts(&facts(vec![path])));
        assert!(p.edited.is_empty());
    }

    #[test]
    fn staged_content_apart_from_the_work_tree_is_an_edit() {
        let mut path = patched("f", state("b"));
        path.staged = Some(state("s"));
        let d = decide_facts(&facts(vec![path]));
        assert!(matches!(d, Decision::Refuse { .. }), "{d:?}");
        let f = Facts {
            force: true,
            ..facts(vec![{
                let mut p = patched("f", state("b"));
                p.staged = Some(state("s"));
                p
            }])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.action, Action::Forced);
        assert_eq!(p.staged, vec![("f".to_string(), state("s"))]);
    }

    #[test]
    fn forced_saves_the_edits_then_prepares() {
        let f = Facts {
            force: true,
            ..facts(vec![patched("f", state("e"))])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.action, Action::Forced);
        assert_eq!(p.edited, vec!["f".to_string()]);
    }

    #[test]
    fn an_interrupted_run_recovers_and_saves_what_it_left() {
        let f = Facts {
            resumed: Resumed::Unjournaled,
            ..facts(vec![patched("f", state("half")), patched("g", None)])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.action, Action::Recover);
        assert_eq!(p.whys[0], Why::Interrupted(Resumed::Unjournaled));
        // A missing file is one it had not written yet, not an edit.
        assert_eq!(p.edited, vec!["f".to_string()]);
    }

    #[test]
    fn a_missing_file_of_a_repository_not_checked_out_is_not_an_edit() {
        let mut path = patched("ck/f", None);
        path.repo_checked_out = false;
        let mut f = facts(vec![path]);
        f.repos.push(repo("ck", None));
        let p = plan(decide_facts(&f));
        assert_eq!(p.action, Action::Resync);
        assert!(p.whys.contains(&Why::SubmoduleMissing("ck".to_string())));
    }

    #[test]
    fn a_moved_head_resyncs_and_names_both_commits() {
        let mut f = facts(vec![patched("f", state("b"))]);
        f.repos[0].head = Some("m".repeat(40));
        let p = plan(decide_facts(&f));
        assert!(matches!(&p.whys[0], Why::HeadMoved { head, .. } if head.starts_with('m')));
        assert!(!p.whys.contains(&Why::Adopted), "HEAD must move back first");
    }

    #[test]
    fn a_difference_nothing_else_explains_is_named() {
        let mut path = patched("f", state("a"));
        path.was_patched = false;
        let p = plan(decide_facts(&facts(vec![path])));
        assert_eq!(
            p.whys,
            vec![Why::Differs(vec![Difference {
                path: "f".to_string(),
                how: How::Content
            }])]
        );
    }

    #[test]
    fn an_unreadable_stamp_is_a_reason_not_an_error() {
        let f = Facts {
            stamp: StampFacts::Unreadable,
            ..facts(vec![patched("f", state("b"))])
        };
        let p = plan(decide_facts(&f));
        assert_eq!(p.whys[0], Why::UnreadableStamp);
    }
}
