//! Every row of the decision table and the situations that lead to it, on real git repositories
//! (a superproject with a real submodule) in temp dirs.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use qola_build::{Action, Error, ManifestError, PrepareError, ReasonKind};

#[test]
fn first_prepare_clones_and_applies_the_series_to_both_repositories() {
    let s = setup();
    let p = s.prepare();
    assert_action(&p, Action::Clone);
    assert_eq!(p.commit, s.demo.commit);
    assert_eq!(
        p.expected_fingerprint.as_deref(),
        Some(p.fingerprint.as_str())
    );
    assert_prepared(&s);
    // The submodule is detached at the commit the superproject records.
    assert_eq!(git(&s.ck(), &["rev-parse", "HEAD"]), s.demo.ck_commit);
    // The created file is staged, so it is tracked.
    let staged = git(&s.root, &["diff", "--cached", "--name-only"]);
    assert_eq!(staged, CREATED);
    assert!(s.stamp().is_file());
    assert_eq!(git(&s.root, &["config", "core.autocrlf"]), "false");
    assert_eq!(git(&s.ck(), &["config", "core.filemode"]), "true");
}

#[test]
fn up_to_date_changes_no_mtime_and_writes_nothing() {
    let s = setup();
    s.prepare();
    let before = mtimes(&s.root);
    tick();
    let p = s.prepare();
    assert_action(&p, Action::UpToDate);
    assert!(p.reasons.is_empty());
    assert_nothing_written(&before, &s.root);
}

#[test]
fn reset_hard_after_prepare_triggers_resync() {
    let s = setup();
    s.prepare();
    git(&s.root, &["reset", "-q", "--hard"]);
    assert!(
        !s.root.join(CREATED).exists(),
        "reset --hard drops the staged new file"
    );
    let before = mtimes(&s.root);
    tick();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::PatchReverted), "{p}");
    assert_prepared(&s);
    // Only what the reset undid was rewritten.
    let rewritten = changed(&before, &mtimes(&s.root));
    assert!(!rewritten.contains(&s.root.join(UNTOUCHED)));
    assert!(
        !rewritten.contains(&s.root.join(PATCHED_CK)),
        "the submodule was not reset"
    );
    assert!(rewritten.contains(&s.root.join(PATCHED_SUPER)));
}

#[test]
fn reset_hard_in_the_submodule_triggers_resync() {
    let s = setup();
    s.prepare();
    git(&s.ck(), &["reset", "-q", "--hard"]);
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::PatchReverted), "{p}");
    assert_prepared(&s);
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn checkout_of_one_file_restores_only_that_file() {
    let s = setup();
    s.prepare();
    git(&s.root, &["checkout", "--", PATCHED_SUPER]);
    let before = mtimes(&s.root);
    tick();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    let mut rewritten: Vec<_> = changed(&before, &mtimes(&s.root))
        .into_iter()
        .filter(|p| !p.starts_with(s.root.join(".git")))
        .collect();
    rewritten.sort();
    // The file, and its directory (the new content is renamed into place).
    assert_eq!(
        rewritten,
        vec![s.root.join("csrc/include"), s.root.join(PATCHED_SUPER)]
    );
    assert_prepared(&s);
}

#[test]
fn hand_edit_is_refused_and_nothing_changes() {
    let s = setup();
    s.prepare();
    s.write(UNTOUCHED, "# my edit\n");
    let before = mtimes(&s.root);
    let p = s.refused();
    assert_action(&p, Action::Refused);
    assert_eq!(p.edited_paths, vec![UNTOUCHED.to_string()]);
    assert_nothing_written(&before, &s.root);
    assert_eq!(s.read(UNTOUCHED), "# my edit\n");
    let message = PrepareError::Refused(Box::new(p)).to_string();
    for way in [
        "QOLA_SKIP_PREPARE=1",
        "qola diff",
        "QOLA_FORCE_PREPARE=1",
        UNTOUCHED,
    ] {
        assert!(message.contains(way), "{message}");
    }
}

#[test]
fn hand_edit_of_a_patched_file_and_inside_the_submodule_is_refused() {
    let s = setup();
    s.prepare();
    s.write(PATCHED_SUPER, "// rewritten\n");
    s.write(
        "3rdparty/composable_kernel/include/ck_tile/core/config.hpp",
        "// mine\n",
    );
    let p = s.refused();
    assert_eq!(
        p.edited_paths,
        vec![
            "3rdparty/composable_kernel/include/ck_tile/core/config.hpp".to_string(),
            PATCHED_SUPER.to_string()
        ]
    );
}

#[test]
fn refusal_lists_twenty_paths_and_counts_the_rest() {
    let s = setup();
    s.prepare();
    for i in 0..25 {
        s.write(&format!("csrc/new_{i:02}.cpp"), "int x;\n");
        git(&s.root, &["add", &format!("csrc/new_{i:02}.cpp")]);
    }
    let p = s.refused();
    assert_eq!(p.edited_paths.len(), 25);
    let message = PrepareError::Refused(Box::new(p)).to_string();
    assert!(message.contains("and 5 more"), "{message}");
    assert!(!message.contains("new_24"), "{message}");
}

#[test]
fn untracked_files_decide_nothing() {
    let s = setup();
    s.prepare();
    s.write("build/log.txt", "generator output\n");
    s.write("3rdparty/composable_kernel/__pycache__/x.pyc", "bytecode");
    assert_action(&s.prepare(), Action::UpToDate);
    let status = s.options().try_status().unwrap();
    assert_action(&status, Action::UpToDate);
    assert!(
        status.untracked_paths.contains(&"build/".to_string()),
        "{:?}",
        status.untracked_paths
    );
    assert!(
        status
            .untracked_paths
            .contains(&"3rdparty/composable_kernel/__pycache__/".to_string()),
        "{:?}",
        status.untracked_paths
    );
}

#[test]
fn skip_uses_the_tree_as_it_is_and_names_the_differences() {
    let s = setup();
    s.prepare();
    s.write(UNTOUCHED, "# debugging\n");
    git(&s.ck(), &["reset", "-q", "--hard"]);
    let before = mtimes(&s.root);
    let p = s.options().skip(true).try_prepare().unwrap();
    assert_action(&p, Action::SkipRequested);
    assert_nothing_written(&before, &s.root);
    assert_eq!(p.warnings.len(), 1);
    let warning = &p.warnings[0];
    for path in [UNTOUCHED, PATCHED_CK] {
        assert!(warning.contains(path), "{warning}");
    }
    assert_ne!(
        p.expected_fingerprint.as_deref(),
        Some(p.fingerprint.as_str())
    );

    // A manifest pinning another commit: said, the tree still used as it is.
    let other = "1111111111111111111111111111111111111111";
    let p = s.options().commit(other).skip(true).try_prepare().unwrap();
    assert_action(&p, Action::SkipRequested);
    assert!(
        p.warnings[0].ends_with(&format!(
            "; it was prepared for AITER {}, not the {other} the manifest pins",
            &s.demo.commit[..12]
        )),
        "{}",
        p.warnings[0]
    );
    assert_nothing_written(&before, &s.root);
}

#[test]
fn skip_without_a_checkout_is_an_error() {
    let s = setup();
    let e = s.options().skip(true).try_prepare().unwrap_err();
    assert!(matches!(e, PrepareError::SkipWithoutCheckout { .. }), "{e}");
}

#[test]
fn force_saves_the_edits_then_prepares() {
    let s = setup();
    s.prepare();
    s.write(UNTOUCHED, "# my edit\n");
    s.write(PATCHED_CK, "# replaced\n");
    let p = s.options().force(true).try_prepare().unwrap();
    assert_action(&p, Action::Forced);
    assert_prepared(&s);
    assert_eq!(s.read(UNTOUCHED), "# AITER (qola demo)\n");
    let backup = p.backup.expect("a backup patch");
    assert!(backup.starts_with(s.root.join(".git/qola/backups")));
    let text = std::fs::read_to_string(&backup).unwrap();
    assert!(text.contains("+# my edit"), "{text}");
    assert!(text.contains("+# replaced"), "{text}");
    // The backup brings the edits back.
    s.add_patch("0004-restored.patch", &text);
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert_eq!(s.read(UNTOUCHED), "# my edit\n");
    assert_eq!(s.read(PATCHED_CK), "# replaced\n");
}

#[test]
fn forced_run_on_a_clean_tree_changes_nothing_and_saves_nothing() {
    let s = setup();
    s.prepare();
    let p = s.options().force(true).try_prepare().unwrap();
    assert_action(&p, Action::Forced);
    assert!(p.backup.is_none());
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn diff_added_to_the_series_is_adopted_without_rewriting() {
    let s = setup();
    s.prepare();
    s.write(UNTOUCHED, "# AITER, debugged\n");
    s.write(
        "3rdparty/composable_kernel/include/ck_tile/core/config.hpp",
        "// tuned\n",
    );
    std::fs::remove_file(s.root.join("scripts/build_demo.sh")).unwrap();
    let patch = s.options().try_diff().unwrap();
    s.add_patch("0004-my-debugging.patch", &patch);
    let before = mtimes(&s.root);
    tick();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::Adopted), "{p}");
    assert!(kinds(&p).contains(&ReasonKind::PatchAdded), "{p}");
    let rewritten = changed(&before, &mtimes(&s.root));
    assert!(
        rewritten.iter().all(|p| p.starts_with(s.root.join(".git"))),
        "only git's and qola's files may change: {rewritten:?}"
    );
    assert_action(&s.prepare(), Action::UpToDate);
    assert!(s.options().try_diff().unwrap().is_empty());
}

#[test]
fn patch_created_file_survives_git_clean_and_is_restored_after_deletion() {
    let s = setup();
    s.prepare();
    git(&s.root, &["clean", "-q", "-fdx"]);
    assert!(s.root.join(CREATED).exists());
    assert_action(&s.prepare(), Action::UpToDate);
    std::fs::remove_file(s.root.join(CREATED)).unwrap();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::PatchReverted), "{p}");
    assert!(s.read(CREATED).contains("QOLA_PATCHED"));
}

#[test]
fn binary_change_is_a_local_edit_and_round_trips_through_diff() {
    let s = setup();
    s.prepare();
    let co = "hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co";
    let mut bytes = qola_tests::demo_code_object(9);
    bytes.extend_from_slice(b"\0tuned");
    std::fs::write(s.root.join(co), &bytes).unwrap();
    assert_eq!(s.refused().edited_paths, vec![co.to_string()]);
    let patch = s.options().try_diff().unwrap();
    assert!(patch.windows(16).any(|w| w == b"GIT binary patch"));
    s.add_patch("0004-binary.patch", &patch);
    let p = s.prepare();
    assert!(kinds(&p).contains(&ReasonKind::Adopted), "{p}");
    // From a fresh clone, the series now writes the same bytes.
    let again = s.tmp.path().join("again");
    s.options().root(&again).try_prepare().unwrap();
    assert_eq!(std::fs::read(again.join(co)).unwrap(), bytes);
}

#[test]
fn gitmodules_ignore_all_does_not_hide_submodule_edits() {
    let s = setup();
    let commit = s.demo.commit_aiter(
        ".gitmodules",
        "[submodule \"3rdparty/composable_kernel\"]\n\tpath = 3rdparty/composable_kernel\n\turl = ../composable_kernel\n\tignore = all\n",
        "ignore the submodule",
    );
    s.options().commit(&commit).try_prepare().unwrap();
    s.write("3rdparty/composable_kernel/library/new.txt", "x\n");
    git(&s.ck(), &["add", "library/new.txt"]);
    let p = match s.options().commit(&commit).try_prepare() {
        Err(PrepareError::Refused(p)) => p,
        other => panic!("expected a refusal: {other:?}"),
    };
    assert_eq!(
        p.edited_paths,
        vec!["3rdparty/composable_kernel/library/new.txt".to_string()]
    );
}

#[test]
fn mode_change_is_a_local_edit() {
    let s = setup();
    s.prepare();
    let path = s.root.join(UNTOUCHED);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(s.refused().edited_paths, vec![UNTOUCHED.to_string()]);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn commit_bump_resyncs_the_superproject_and_the_submodule() {
    let s = setup();
    s.prepare();
    let (commit, ck_commit) = s.demo.bump_ck("include/ck_tile/new.hpp", "#pragma once\n");
    let p = s.options().commit(&commit).try_prepare().unwrap();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::Commit), "{p}");
    assert_eq!(git(&s.ck(), &["rev-parse", "HEAD"]), ck_commit);
    assert!(s.ck().join("include/ck_tile/new.hpp").exists());
    assert_prepared(&s);
    let p = s.options().commit(&commit).try_prepare().unwrap();
    assert_action(&p, Action::UpToDate);
}

#[test]
fn short_sha_tag_and_branch_resolve_and_a_branch_is_refreshed() {
    let s = setup();
    let short = &s.demo.commit[..10];
    assert_eq!(
        s.options().commit(short).try_prepare().unwrap().commit,
        s.demo.commit
    );
    git(&s.demo.aiter, &["tag", "v1.0"]);
    let p = s.options().commit("v1.0").try_prepare().unwrap();
    assert_eq!(p.commit, s.demo.commit);
    assert_eq!(p.action, Action::UpToDate);
    assert_eq!(
        s.options().commit("main").try_prepare().unwrap().commit,
        s.demo.commit
    );
    let newer = s.demo.commit_aiter("NEWS.md", "news\n", "news");
    let p = s.options().commit("main").try_prepare().unwrap();
    assert_eq!(
        p.commit, newer,
        "the branch is fetched again, not read from a stale ref"
    );
    assert!(kinds(&p).contains(&ReasonKind::Commit), "{p}");
}

#[test]
fn each_series_change_names_its_reason() {
    let s = setup();
    s.prepare();
    let patches = &s.demo.patches;
    let first = patches.join("0001-aiter-expose-lse.patch");

    std::fs::rename(&first, patches.join("0009-aiter-expose-lse.patch")).unwrap();
    let p = s.prepare();
    assert!(kinds(&p).contains(&ReasonKind::PatchRenamed), "{p}");
    assert!(kinds(&p).contains(&ReasonKind::Adopted), "{p}");

    std::fs::remove_file(patches.join("0009-aiter-expose-lse.patch")).unwrap();
    let p = s.prepare();
    assert!(kinds(&p).contains(&ReasonKind::PatchRemoved), "{p}");
    assert!(!s.read(PATCHED_SUPER).contains("lse"));

    s.add_patch("0001-aiter-expose-lse.patch", qola_tests::DEMO_PATCHES[0].1);
    let p = s.prepare();
    assert!(kinds(&p).contains(&ReasonKind::PatchAdded), "{p}");
    assert!(s.read(PATCHED_SUPER).contains("void* lse;"));

    s.add_patch(
        "0001-aiter-expose-lse.patch",
        qola_tests::DEMO_PATCHES[0]
            .1
            .replace("void* lse;", "float* lse;"),
    );
    let p = s.prepare();
    assert_eq!(kinds(&p), vec![ReasonKind::PatchChanged], "{p}");
    assert!(s.read(PATCHED_SUPER).contains("float* lse;"));
}

#[test]
fn manifest_field_change_names_the_field() {
    let s = setup();
    let manifest = s.tmp.path().join("qola.toml");
    let write_manifest = |url: &str| {
        qola_tests::ManifestText::new(&s.demo.commit, url)
            .set("patches_dir", "upstream/patches")
            .set("namespace", "te")
            .write(&manifest);
    };
    let options = || {
        let mut o = qola_build::Prepare::new();
        o.manifest(&manifest)
            .root(&s.root)
            .cache_dir(s.cache())
            .cargo_metadata(false)
            .offline(false)
            .force(false)
            .skip(false);
        o
    };
    write_manifest(&s.demo.aiter.to_string_lossy());
    assert_action(&options().try_prepare().unwrap(), Action::Clone);
    assert_prepared(&s);
    write_manifest(&format!("file://{}", s.demo.aiter.display()));
    let p = options().try_prepare().unwrap();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::ManifestField), "{p}");
    assert!(
        p.reasons.iter().any(|r| r.message.contains("aiter_url")),
        "{p}"
    );
    assert!(kinds(&p).contains(&ReasonKind::Adopted), "{p}");
    assert_eq!(
        git(&s.root, &["remote", "get-url", "origin"]),
        format!("file://{}", s.demo.aiter.display())
    );
}

#[test]
fn corrupt_stamp_counts_as_absent() {
    let s = setup();
    s.prepare();
    std::fs::write(s.stamp(), b"{ not json").unwrap();
    let before = mtimes(&s.root);
    tick();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::NoStamp), "{p}");
    assert!(kinds(&p).contains(&ReasonKind::Adopted), "{p}");
    let rewritten = changed(&before, &mtimes(&s.root));
    assert!(
        rewritten
            .iter()
            .all(|p| p.starts_with(s.root.join(".git/qola"))),
        "{rewritten:?}"
    );
    std::fs::write(s.stamp(), br#"{"schema": 999}"#).unwrap();
    assert!(kinds(&s.prepare()).contains(&ReasonKind::NoStamp));
}

#[test]
fn interrupted_prepare_recovers_from_the_pinned_commit() {
    let s = setup();
    s.prepare();
    // What a killed run leaves: its marker, and the tree half written.
    std::fs::write(s.root.join(".git/qola/preparing"), "key\n").unwrap();
    git(&s.ck(), &["checkout", "--", "."]);
    let p = s.prepare();
    assert_action(&p, Action::Recover);
    assert!(kinds(&p).contains(&ReasonKind::Interrupted), "{p}");
    assert!(!s.root.join(".git/qola/preparing").exists());
    assert_prepared(&s);
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn tree_escaping_patch_is_refused_with_the_tree_untouched() {
    let s = setup();
    s.prepare();
    let before = mtimes(&s.root);
    s.add_patch(
        "0004-escape.patch",
        "--- a/../../outside.txt\n+++ b/../../outside.txt\n@@ -0,0 +1 @@\n+owned\n",
    );
    let e = s.options().try_prepare().unwrap_err();
    assert!(matches!(e, PrepareError::UnsafePatchPath { .. }), "{e}");
    assert!(e.to_string().contains("0004-escape.patch"), "{e}");
    assert_nothing_written(&before, &s.root);
    assert!(!s.tmp.path().join("outside.txt").exists());
}

#[test]
fn patch_through_a_symlink_in_the_work_tree_is_refused() {
    let s = setup();
    s.prepare();
    std::fs::create_dir(s.tmp.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(s.tmp.path().join("elsewhere"), s.root.join("linked")).unwrap();
    s.add_patch(
        "0004-through-link.patch",
        "diff --git a/linked/x.txt b/linked/x.txt\nnew file mode 100644\n--- /dev/null\n+++ b/linked/x.txt\n@@ -0,0 +1 @@\n+x\n",
    );
    let e = s.options().try_prepare().unwrap_err();
    assert!(matches!(e, PrepareError::UnsafePatchPath { .. }), "{e}");
    assert!(!s.tmp.path().join("elsewhere/x.txt").exists());
}

#[test]
fn failing_patch_names_patch_file_and_hunk_and_leaves_the_tree() {
    let s = setup();
    s.prepare();
    s.add_patch(
        "0002-ck-te-receipt.patch",
        qola_tests::DEMO_PATCHES[1]
            .1
            .replace("600: \"aiter\"", "700: \"aiter\""),
    );
    let before = mtimes(&s.root);
    let e = s.options().try_prepare().unwrap_err();
    let message = e.to_string();
    let PrepareError::PatchFailed {
        patch,
        file,
        hunk,
        upstream,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(patch, "0002-ck-te-receipt.patch");
    assert_eq!(file, PATCHED_CK);
    assert_eq!(hunk, "@@ -2,4 +2,5 @@");
    assert!(upstream.is_none());
    assert!(message.contains("nothing was written"), "{message}");
    assert_nothing_written(&before, &s.root);
}

#[test]
fn patch_already_applied_upstream_gets_the_drop_hint() {
    let s = setup();
    let header = std::fs::read_to_string(s.demo.aiter.join(PATCHED_SUPER)).unwrap();
    let upstreamed = s.demo.commit_aiter(
        PATCHED_SUPER,
        &header.replace("    void* o;\n", "    void* o;\n    void* lse;\n"),
        "upstream adds lse",
    );
    let e = s.options().commit(&upstreamed).try_prepare().unwrap_err();
    let PrepareError::PatchFailed {
        patch, upstream, ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(patch, "0001-aiter-expose-lse.patch");
    assert_eq!(upstream.as_deref(), Some(upstreamed.as_str()));
    assert!(
        e.to_string().contains("drop 0001-aiter-expose-lse.patch"),
        "{e}"
    );
}

/// A patch made on an older commit whose context moved on: `git apply --3way` (how QoLA applies
/// its series) merges it from the blob its `index` line names; qola makes the same file, says
/// so, and refuses a merge that conflicts, writing nothing.
#[test]
fn a_patch_made_on_an_older_commit_merges_three_way_as_git_apply_3way_does() {
    let s = setup();
    let lines = |edits: &[(usize, &str)]| -> String {
        (1..=9)
            .map(|n| {
                let line = edits
                    .iter()
                    .find(|(at, _)| *at == n)
                    .map_or(format!("line {n}"), |(_, l)| l.to_string());
                format!("{line}\n")
            })
            .collect()
    };
    let old = lines(&[]);
    s.demo.commit_aiter("csrc/notes.txt", &old, "notes");
    // The patch, made on that commit: line 5 changed.
    let hash = |text: &str| {
        let file = s.tmp.path().join("blob");
        std::fs::write(&file, text).unwrap();
        git(s.tmp.path(), &["hash-object", file.to_str().unwrap()])
    };
    let patched = lines(&[(5, "line five")]);
    let patch = format!(
        "diff --git a/csrc/notes.txt b/csrc/notes.txt\nindex {}..{} 100644\n--- a/csrc/notes.txt\n+++ b/csrc/notes.txt\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n",
        &hash(&old)[..12],
        &hash(&patched)[..12]
    );
    s.add_patch("0003-notes.patch", &patch);
    // Upstream moved on: line 2 (the hunk's context) changed.
    let pinned = s.demo.commit_aiter(
        "csrc/notes.txt",
        &lines(&[(2, "line two")]),
        "upstream edits line 2",
    );

    // What git apply --3way makes of it.
    let theirs = s.tmp.path().join("git-apply");
    qola_tests::run_ok(
        std::process::Command::new("git")
            .args(["clone", "-q"])
            .arg(&s.demo.aiter)
            .arg(&theirs),
    );
    write(&theirs, "p.patch", &patch);
    git(&theirs, &["apply", "--3way", "p.patch"]);
    let expected = std::fs::read_to_string(theirs.join("csrc/notes.txt")).unwrap();
    assert_eq!(expected, lines(&[(2, "line two"), (5, "line five")]));

    let p = s
        .options()
        .commit(&pinned)
        .try_prepare()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.read("csrc/notes.txt"), expected);
    assert!(
        p.warnings.iter().any(|w| w.contains("0003-notes.patch")
            && w.contains("merged three-way from the blob")
            && w.contains("git apply --3way")),
        "{:?}",
        p.warnings
    );

    // Upstream changed the patched line itself: the merge conflicts, as git's does.
    let conflicting = s.demo.commit_aiter(
        "csrc/notes.txt",
        &lines(&[(5, "line FIVE")]),
        "upstream edits line 5",
    );
    let before = mtimes(&s.root);
    let e = s.options().commit(&conflicting).try_prepare().unwrap_err();
    let PrepareError::PatchFailed { patch, file, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(
        (patch.as_str(), file.as_str()),
        ("0003-notes.patch", "csrc/notes.txt")
    );
    assert!(
        e.to_string()
            .contains("three-way merge from the blob it was made from")
            && e.to_string().contains("conflicts")
            && e.to_string().contains("nothing was written"),
        "{e}"
    );
    // The new commit was fetched into .git; the work tree is as it was.
    let git_dir = s.root.join(".git");
    let written: Vec<_> = changed(&before, &mtimes(&s.root))
        .into_iter()
        .filter(|p| !p.starts_with(&git_dir))
        .collect();
    assert!(written.is_empty(), "{written:?}");
}

#[test]
fn hunks_at_an_offset_apply_and_are_reported() {
    let s = setup();
    let header = std::fs::read_to_string(s.demo.aiter.join(PATCHED_SUPER)).unwrap();
    let moved = s.demo.commit_aiter(
        PATCHED_SUPER,
        &format!("// line 1\n// line 2\n// line 3\n{header}"),
        "three lines more",
    );
    let p = s.options().commit(&moved).try_prepare().unwrap();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("0001-aiter-expose-lse.patch") && w.contains("+3 lines")),
        "{:?}",
        p.warnings
    );
    assert_prepared(&s);
}

#[test]
fn offline_with_a_missing_commit_is_an_error_unless_the_url_is_a_local_path() {
    let s = setup();
    s.prepare();
    let newer = s.demo.commit_aiter("NEWS.md", "news\n", "news");
    let remote = "https://example.invalid/ROCm/aiter.git";
    let e = s
        .options()
        .url(remote)
        .commit(&newer)
        .offline(true)
        .try_prepare()
        .unwrap_err();
    assert!(matches!(e, PrepareError::Offline { .. }), "{e}");
    assert!(e.to_string().contains("QOLA_OFFLINE"), "{e}");
    // Offline with everything present works.
    assert_action(
        &s.options().offline(true).try_prepare().unwrap(),
        Action::UpToDate,
    );
    let fresh = s.tmp.path().join("fresh");
    let e = s
        .options()
        .url(remote)
        .root(&fresh)
        .offline(true)
        .try_prepare()
        .unwrap_err();
    assert!(matches!(e, PrepareError::Offline { .. }), "{e}");
    assert!(!fresh.exists());
    // A local path needs no network: fetching and cloning from it work offline.
    let p = s
        .options()
        .commit(&newer)
        .offline(true)
        .try_prepare()
        .unwrap();
    assert_eq!(p.commit, newer);
    let p = s
        .options()
        .root(&fresh)
        .offline(true)
        .try_prepare()
        .unwrap();
    assert_action(&p, Action::Clone);
}

#[test]
fn head_moved_triggers_resync_and_keeps_the_old_head() {
    let s = setup();
    s.prepare();
    git(&s.root, &["stash", "-q"]);
    git(
        &s.root,
        &["commit", "-q", "--allow-empty", "-m", "my experiment"],
    );
    let mine = git(&s.root, &["rev-parse", "HEAD"]);
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(kinds(&p).contains(&ReasonKind::HeadMoved), "{p}");
    assert_eq!(git(&s.root, &["rev-parse", "HEAD"]), s.demo.commit);
    assert_eq!(
        git(&s.root, &["rev-parse", "refs/qola/previous-head"]),
        mine
    );
    assert_prepared(&s);
}

#[test]
fn status_writes_nothing_and_says_what_prepare_would_do() {
    let s = setup();
    let status = s.options().try_status().unwrap();
    assert_action(&status, Action::Clone);
    assert!(!s.root.exists());
    s.prepare();
    git(&s.root, &["reset", "-q", "--hard"]);
    let status = s.options().try_status().unwrap();
    assert_action(&status, Action::Resync);
    assert!(kinds(&status).contains(&ReasonKind::PatchReverted));
    s.write(UNTOUCHED, "# edit\n");
    let before_edit = mtimes(&s.root);
    let status = s.options().try_status().unwrap();
    assert_action(&status, Action::Refused);
    assert_eq!(status.edited_paths, vec![UNTOUCHED.to_string()]);
    assert_nothing_written(&before_edit, &s.root);
}

#[test]
fn missing_manifest_file_is_an_error_naming_it() {
    let s = setup();
    let mut options = s.options();
    options.manifest(s.tmp.path().join("none.toml"));
    let e = Error::from(options.try_prepare().unwrap_err());
    assert!(
        matches!(e, Error::Manifest(ManifestError::Read { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("none.toml"), "{e}");
}

#[test]
fn missing_commit_is_an_error_naming_the_ways_to_set_it() {
    let s = setup();
    let manifest = s.tmp.path().join("qola.toml");
    std::fs::write(&manifest, "[qola]\nnamespace = \"te\"\n").unwrap();
    let mut options = qola_build::Prepare::new();
    options
        .manifest(&manifest)
        .root(&s.root)
        .url(s.demo.aiter.to_string_lossy())
        .cargo_metadata(false);
    let e = options.try_prepare().unwrap_err();
    assert!(matches!(e, PrepareError::NoCommit { .. }), "{e}");
    for hint in ["aiter_commit", "QOLA_AITER_COMMIT", "--commit"] {
        assert!(e.to_string().contains(hint), "{e}");
    }
}

#[test]
fn default_manifest_pins_upstream_aiter_and_leaves_the_series_to_qola() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-sys/qola.toml");
    let m = qola_build::Manifest::from_path(&path).unwrap();
    assert_eq!(
        m.qola.aiter_commit.as_deref(),
        Some("05a0d1f060af14e789696479de71a2fc2fbaada9")
    );
    assert_eq!(
        m.qola.aiter_url.as_deref(),
        Some(qola_build::DEFAULT_AITER_URL)
    );
    // No patches_dir: qola's own series (qola-build/patches/aiter, compiled in).
    assert_eq!(m.qola.patches_dir, None);
    assert_eq!(m.modules.len(), 2);
}

#[test]
fn touched_files_are_still_up_to_date_and_nothing_is_written() {
    let s = setup();
    s.prepare();
    tick();
    for path in [UNTOUCHED, PATCHED_SUPER, PATCHED_CK] {
        touch(&s.root.join(path));
    }
    let before = mtimes(&s.root);
    let p = s.prepare();
    assert_action(&p, Action::UpToDate);
    assert_nothing_written(&before, &s.root);
}

#[test]
fn unstaging_a_file_is_noticed_and_restored() {
    let s = setup();
    s.prepare();
    git(&s.root, &["rm", "-q", "--cached", CREATED]);
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    // The reason names the path and what changed (the index only: nothing to adopt).
    assert!(kinds(&p).contains(&ReasonKind::Differs), "{p}");
    assert!(p.to_string().contains(CREATED), "{p}");
    assert_eq!(git(&s.root, &["diff", "--cached", "--name-only"]), CREATED);
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn status_lists_the_same_untracked_paths_on_both_paths_of_the_check() {
    let s = setup();
    s.prepare();
    s.write("build/log.txt", "x\n");
    s.write("3rdparty/composable_kernel/gen/a.cpp", "x\n");
    s.write("csrc/include/new.h", "x\n");
    let fast = s.options().try_status().unwrap().untracked_paths;
    touch(&s.root.join(UNTOUCHED));
    let full = s.options().try_status().unwrap().untracked_paths;
    assert_eq!(fast, full);
    assert_eq!(
        fast,
        [
            "3rdparty/composable_kernel/gen/",
            "build/",
            "csrc/include/new.h"
        ]
    );
}

#[test]
fn a_touched_tree_gets_a_new_snapshot_in_the_cache_and_the_checkout_is_untouched() {
    let s = setup();
    s.prepare();
    let snapshots = s.cache().join("snapshots");
    let snapshot = std::fs::read_dir(&snapshots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let written = std::fs::metadata(&snapshot).unwrap().modified().unwrap();
    tick();
    // Up to date from the snapshot: nothing written anywhere.
    assert_action(&s.prepare(), Action::UpToDate);
    assert_eq!(
        std::fs::metadata(&snapshot).unwrap().modified().unwrap(),
        written
    );
    // A touch defeats the snapshot: the full scan confirms, and only the snapshot is renewed.
    touch(&s.root.join(UNTOUCHED));
    let before = mtimes(&s.root);
    assert_action(&s.prepare(), Action::UpToDate);
    assert_nothing_written(&before, &s.root);
    let renewed = std::fs::metadata(&snapshot).unwrap().modified().unwrap();
    assert!(renewed > written);
    // status reads it, never writes it.
    touch(&s.root.join(UNTOUCHED));
    assert_action(&s.options().try_status().unwrap(), Action::UpToDate);
    assert_eq!(
        std::fs::metadata(&snapshot).unwrap().modified().unwrap(),
        renewed
    );
}

#[test]
fn first_clone_killed_before_checkout_recovers_without_calling_missing_files_edits() {
    let s = setup();
    // What a run killed right after its clone leaves: a clone without files, with the marker.
    std::fs::create_dir_all(s.root.parent().unwrap()).unwrap();
    git(
        s.root.parent().unwrap(),
        &[
            "clone",
            "-q",
            "--no-checkout",
            &s.demo.aiter.to_string_lossy(),
            "aiter",
        ],
    );
    std::fs::create_dir_all(s.root.join(".git/qola")).unwrap();
    std::fs::write(s.root.join(".git/qola/preparing"), "clone\n").unwrap();
    let p = s.prepare();
    assert_action(&p, Action::Recover);
    assert!(p.edited_paths.is_empty());
    assert_prepared(&s);
    assert_action(&s.prepare(), Action::UpToDate);
}
