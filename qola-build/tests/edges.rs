//! The edges of qola's promise (issue 9): nothing written outside the checkout, no malformed
//! patch accepted, nothing of the user's lost without a backup, no edit unseen, no half-written
//! tree, one lock per checkout whatever its spelling, and `status` predicting `prepare`. Each
//! test is one scenario of a fault campaign, on real repositories.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;
use qola_build::{Action, PrepareError, ReasonKind};

/// The files under `dir` (relative), `.git` excluded.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.symlink_metadata().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn prepare_err(s: &Setup) -> PrepareError {
    match s.options().try_prepare() {
        Ok(p) => panic!("expected an error, got {p}"),
        Err(e) => e,
    }
}

/// The text of every backup file under the checkout's `.git/qola/backups/`.
fn backups(s: &Setup) -> String {
    let dir = s.root.join(".git/qola/backups");
    let mut text = String::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                text.push_str(&format!("== {}\n", path.display()));
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
        }
    }
    text
}

// 1. Nothing written outside the checkout.

#[test]
fn a_patch_writing_through_a_symlink_it_creates_writes_nothing_anywhere() {
    let s = setup();
    s.prepare();
    let victim = s.tmp.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    s.add_patch(
        "0004-evil.patch",
        "diff --git a/csrc/evil b/csrc/evil\nnew file mode 120000\n--- /dev/null\n+++ b/csrc/evil\n@@ -0,0 +1 @@\n+../../../victim\n\\ No newline at end of file\ndiff --git a/csrc/evil/x b/csrc/evil/x\nnew file mode 100644\n--- /dev/null\n+++ b/csrc/evil/x\n@@ -0,0 +1 @@\n+owned\n",
    );
    let before = mtimes(&s.root);
    let e = prepare_err(&s);
    assert!(matches!(e, PrepareError::UnsafePatchPath { .. }), "{e}");
    assert!(e.to_string().contains("0004-evil.patch"), "{e}");
    assert!(files(&victim).is_empty(), "{:?}", files(&victim));
    assert_nothing_written(&before, &s.root);
    std::fs::remove_file(s.demo.patches.join("0004-evil.patch")).unwrap();
    assert_action(&s.prepare(), Action::UpToDate);
}

// 2. Malformed patches are errors naming the patch and the line.

#[test]
fn a_malformed_patch_is_an_error_naming_patch_and_line_and_writes_nothing() {
    let s = setup();
    s.prepare();
    let before = mtimes(&s.root);
    // A `diff --git` line cut short: the old applier took it for a rename of README.md.
    s.add_patch(
        "0004-truncated.patch",
        "diff --git a/README.md b/READ\nindex 1..2 100644\n@@ -1 +1 @@\n-# AITER (qola demo)\n+# AITER\n",
    );
    let e = prepare_err(&s);
    assert_eq!(e.kind(), qola_build::ErrorKind::Patch);
    let text = e.to_string();
    assert!(text.contains("0004-truncated.patch:1:"), "{text}");
    assert_nothing_written(&before, &s.root);
}

// 3. Nothing of the user's is removed without a backup.

#[test]
fn staged_content_is_a_local_edit_and_a_forced_run_saves_it() {
    let s = setup();
    s.prepare();
    s.write(UNTOUCHED, "# staged by me\n");
    git(&s.root, &["add", UNTOUCHED]);
    s.write(UNTOUCHED, "# AITER (qola demo)\n");
    let p = s.refused();
    assert_eq!(p.edited_paths, vec![UNTOUCHED.to_string()], "{p}");
    let p = s.options().force(true).try_prepare().unwrap();
    assert_action(&p, Action::Forced);
    assert!(backups(&s).contains("# staged by me"), "{}", backups(&s));
    assert_eq!(s.prepare().action, Action::UpToDate);
}

#[test]
fn every_commit_made_in_the_checkout_stays_reachable_from_a_qola_ref() {
    let s = setup();
    s.prepare();
    let mut mine = Vec::new();
    for n in 0..2 {
        git(&s.root, &["stash", "-q"]);
        git(
            &s.root,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("experiment {n}"),
            ],
        );
        mine.push(git(&s.root, &["rev-parse", "HEAD"]));
        let p = s.prepare();
        assert_action(&p, Action::Resync);
        assert!(
            p.reasons.iter().any(|r| r.message.contains(&mine[n][..12])),
            "{p}"
        );
    }
    let refs = git(
        &s.root,
        &["for-each-ref", "--format=%(objectname)", "refs/qola/"],
    );
    for commit in &mine {
        assert!(refs.contains(commit.as_str()), "{commit} not kept: {refs}");
    }
}

#[test]
fn untracked_files_in_a_submodule_the_new_commit_removes_are_backed_up() {
    let s = setup();
    s.prepare();
    s.write("3rdparty/composable_kernel/my_notes.txt", "keep me\n");
    git(
        &s.demo.aiter,
        &["rm", "-q", "--cached", "3rdparty/composable_kernel"],
    );
    git(&s.demo.aiter, &["rm", "-q", ".gitmodules"]);
    git(
        &s.demo.aiter,
        &["commit", "-q", "-m", "drop composable_kernel"],
    );
    let commit = git(&s.demo.aiter, &["rev-parse", "HEAD"]);
    // Only the superproject's patches apply to the new commit.
    let patches = s.tmp.path().join("super-patches");
    std::fs::create_dir_all(&patches).unwrap();
    std::fs::copy(
        s.demo.patches.join("0001-aiter-expose-lse.patch"),
        patches.join("0001-aiter-expose-lse.patch"),
    )
    .unwrap();
    let p = s
        .options()
        .commit(&commit)
        .patches_dir(&patches)
        .try_prepare()
        .unwrap();
    // The submodule's work tree went aside whole, into a backup the report names.
    let dir = p
        .backup
        .as_ref()
        .unwrap_or_else(|| panic!("no backup named: {p}"));
    let saved = dir.join("3rdparty/composable_kernel/my_notes.txt");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "keep me\n", "{p}");
    assert!(kinds(&p).contains(&ReasonKind::MovedAside), "{p}");
    assert!(p.to_string().contains(&dir.display().to_string()), "{p}");
    assert!(!s.ck().exists());
}

// 4. Edits git would show with the index flags cleared are seen.

fn assert_edit_seen(s: &Setup, path: &str) {
    let p = s.refused();
    assert!(p.edited_paths.contains(&path.to_string()), "{p}");
    let p = s.options().force(true).try_prepare().unwrap();
    assert_action(&p, Action::Forced);
    assert!(p.backup.is_some(), "{p}");
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn an_edit_hidden_by_assume_unchanged_is_seen() {
    let s = setup();
    s.prepare();
    git(&s.root, &["update-index", "--assume-unchanged", UNTOUCHED]);
    s.write(UNTOUCHED, "# hidden edit\n");
    assert_edit_seen(&s, UNTOUCHED);
    assert_eq!(s.read(UNTOUCHED), "# AITER (qola demo)\n");
}

#[test]
fn an_edit_hidden_by_skip_worktree_is_seen() {
    let s = setup();
    s.prepare();
    git(&s.root, &["update-index", "--skip-worktree", PATCHED_SUPER]);
    s.write(PATCHED_SUPER, "// hidden edit\n");
    assert_edit_seen(&s, PATCHED_SUPER);
    assert_prepared(&s);
}

#[test]
fn a_mode_change_under_the_users_filemode_false_is_seen() {
    let s = setup();
    s.prepare();
    git(&s.root, &["config", "core.filemode", "false"]);
    let script = s.root.join("scripts/build_demo.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_edit_seen(&s, "scripts/build_demo.sh");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "the pinned mode is restored");
}

#[test]
fn a_tracked_directory_replaced_by_a_symlink_is_seen() {
    let s = setup();
    s.prepare();
    let elsewhere = s.tmp.path().join("elsewhere");
    std::fs::rename(s.root.join("scripts"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, s.root.join("scripts")).unwrap();
    let p = s.refused();
    assert!(
        p.edited_paths.iter().any(|e| e.starts_with("scripts")),
        "{p}"
    );
}

#[test]
fn an_edit_of_a_file_whose_name_is_not_utf8_is_seen() {
    use std::os::unix::ffi::OsStrExt;
    let s = setup();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(s.demo.aiter.join(name), "latin-1 name\n").unwrap();
    qola_tests::git_command(&s.demo.aiter, &["add", "--"])
        .arg(name)
        .status()
        .unwrap();
    git(
        &s.demo.aiter,
        &["commit", "-q", "-m", "a latin-1 file name"],
    );
    let commit = git(&s.demo.aiter, &["rev-parse", "HEAD"]);
    let options = || {
        let mut o = s.options();
        o.commit(&commit);
        o
    };
    options().try_prepare().unwrap();
    std::fs::write(s.root.join(name), "edited\n").unwrap();
    let p = match options().try_prepare() {
        Err(PrepareError::Refused(p)) => *p,
        other => panic!("expected a refusal: {other:?}"),
    };
    assert_eq!(p.edited_paths.len(), 1, "{p}");
    let p = options().force(true).try_prepare().unwrap();
    assert!(p.backup.is_some(), "{p}");
    assert_eq!(std::fs::read(s.root.join(name)).unwrap(), b"latin-1 name\n");
    assert_action(&options().try_prepare().unwrap(), Action::UpToDate);
}

// 5. Writes are planned before the first one; qola returns from any state it produced.

const FILE_TO_DIR: &str = "diff --git a/README.md b/README.md\ndeleted file mode 100644\n--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-# AITER (qola demo)\ndiff --git a/README.md/index.md b/README.md/index.md\nnew file mode 100644\n--- /dev/null\n+++ b/README.md/index.md\n@@ -0,0 +1 @@\n+# now a directory\n";

#[test]
fn a_series_that_turned_a_file_into_a_directory_can_be_undone() {
    let s = setup();
    s.add_patch("0004-file-to-dir.patch", FILE_TO_DIR);
    s.prepare();
    assert_eq!(s.read("README.md/index.md"), "# now a directory\n");
    std::fs::remove_file(s.demo.patches.join("0004-file-to-dir.patch")).unwrap();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert_eq!(s.read(UNTOUCHED), "# AITER (qola demo)\n");
    s.add_patch("0004-file-to-dir.patch", FILE_TO_DIR);
    s.prepare();
    assert_eq!(s.read("README.md/index.md"), "# now a directory\n");
}

#[test]
fn a_series_that_turned_a_directory_into_a_symlink_can_be_undone() {
    let s = setup();
    s.add_patch(
        "0004-dir-to-link.patch",
        "diff --git a/scripts/build_demo.sh b/scripts/build_demo.sh\ndeleted file mode 100755\n--- a/scripts/build_demo.sh\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-#!/bin/sh\n-echo building the demo\ndiff --git a/scripts b/scripts\nnew file mode 120000\n--- /dev/null\n+++ b/scripts\n@@ -0,0 +1 @@\n+csrc\n\\ No newline at end of file\n",
    );
    s.prepare();
    assert!(
        s.root
            .join("scripts")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    std::fs::remove_file(s.demo.patches.join("0004-dir-to-link.patch")).unwrap();
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert!(!kinds(&p).contains(&ReasonKind::MovedAside), "{p}");
    assert!(
        s.read("scripts/build_demo.sh")
            .contains("building the demo")
    );
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn an_untracked_file_in_a_directory_a_resync_replaces_is_backed_up_first() {
    let s = setup();
    s.add_patch("0004-file-to-dir.patch", FILE_TO_DIR);
    s.prepare();
    s.write("README.md/notes.txt", "mine\n");
    std::fs::remove_file(s.demo.patches.join("0004-file-to-dir.patch")).unwrap();
    let p = s.prepare();
    assert_eq!(s.read(UNTOUCHED), "# AITER (qola demo)\n");
    let named = p
        .reasons
        .iter()
        .map(|r| r.message.as_str())
        .chain(p.warnings.iter().map(String::as_str))
        .any(|m| m.contains("README.md/notes.txt"));
    assert!(named, "{p}");
    assert!(backups(&s).contains("mine"), "{}", backups(&s));
}

#[test]
fn a_path_that_cannot_be_created_fails_before_anything_is_written() {
    let s = setup();
    s.prepare();
    let long = "x".repeat(300);
    s.add_patch(
        "0004-long-name.patch",
        format!(
            "diff --git a/csrc/include/mha_fwd.h b/csrc/include/mha_fwd.h\n--- a/csrc/include/mha_fwd.h\n+++ b/csrc/include/mha_fwd.h\n@@ -1,3 +1,4 @@\n #pragma once\n+// first\n #include <cstdint>\n \ndiff --git a/{long} b/{long}\nnew file mode 100644\n--- /dev/null\n+++ b/{long}\n@@ -0,0 +1 @@\n+x\n"
        ),
    );
    let before = mtimes(&s.root);
    let e = prepare_err(&s);
    assert!(e.to_string().contains(&long[..40]), "{e}");
    assert_nothing_written(&before, &s.root);
    assert!(!s.read(PATCHED_SUPER).contains("// first"));
}

// 6. Lock, URLs, leftovers, cache.

#[test]
fn a_symlinked_root_and_its_real_path_share_one_lock_outside_the_tree() {
    let s = setup();
    s.prepare();
    let link = s.tmp.path().join("link-to-aiter");
    std::os::unix::fs::symlink(&s.root, &link).unwrap();
    let status = |root: &Path| {
        qola_command(&[])
            .args(["prepare", "--json", "--root"])
            .arg(root)
            .args(["--url", &s.demo.aiter.to_string_lossy()])
            .args(["--commit", &s.demo.commit])
            .arg("--patches")
            .arg(&s.demo.patches)
            .env("QOLA_CACHE_DIR", s.cache())
            .current_dir(s.root.join("csrc"))
            .output()
            .unwrap()
    };
    for root in [link.clone(), PathBuf::from("..")] {
        let out = status(&root);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let locks: Vec<String> = files(s.tmp.path())
        .into_iter()
        .filter(|f| f.ends_with(".qola-lock"))
        .collect();
    assert_eq!(locks, vec!["work/.aiter.qola-lock".to_string()]);
}

/// Moves the demo upstream elsewhere (a changed `aiter_url`); returns where, and options
/// naming the new place.
fn move_upstream(s: &Setup) -> (PathBuf, qola_build::Prepare) {
    let moved = s.tmp.path().join("moved");
    std::fs::rename(&s.demo.dir, &moved).unwrap();
    let mut options = s.options();
    options
        .url(moved.join("aiter").to_string_lossy())
        .patches_dir(moved.join("patches"));
    (moved, options)
}

#[test]
fn a_changed_url_reaches_the_submodule_remotes() {
    let s = setup();
    s.prepare();
    let (moved, options) = move_upstream(&s);
    let p = options.try_prepare().unwrap();
    assert!(kinds(&p).contains(&ReasonKind::ManifestField), "{p}");
    let ck_url = git(&s.ck(), &["remote", "get-url", "origin"]);
    assert_eq!(
        Path::new(&ck_url),
        moved.join("composable_kernel"),
        "the submodule still fetches from the old upstream"
    );
}

#[test]
fn a_killed_clones_temporary_directory_is_removed_by_the_next_run() {
    let s = setup();
    s.prepare();
    let partial = s.root.parent().unwrap().join(".aiter.qola-clone-999999");
    std::fs::create_dir_all(partial.join(".git")).unwrap();
    s.options().offline(true).try_prepare().unwrap();
    assert!(!partial.exists());
}

#[test]
fn an_unusable_cache_never_makes_a_correct_prepare_fail() {
    let s = setup();
    s.prepare();
    let file = s.tmp.path().join("cache-is-a-file");
    std::fs::write(&file, "not a directory\n").unwrap();
    for _ in 0..2 {
        let p = s.options().cache_dir(&file).try_prepare().unwrap();
        assert_action(&p, Action::UpToDate);
    }
    git(&s.root, &["reset", "-q", "--hard"]);
    let p = s.options().cache_dir(&file).try_prepare().unwrap();
    assert_action(&p, Action::Resync);
    assert_prepared(&s);
}

// 8. False refusals, and a refusal writes nothing.

#[test]
fn a_deinit_submodule_is_prepared_again() {
    let s = setup();
    s.prepare();
    git(
        &s.root,
        &[
            "submodule",
            "deinit",
            "-q",
            "-f",
            "3rdparty/composable_kernel",
        ],
    );
    let p = s.prepare();
    assert_action(&p, Action::Resync);
    assert_prepared(&s);
    assert_action(&s.prepare(), Action::UpToDate);
}

#[test]
fn a_linked_worktree_of_the_checkout_is_prepared() {
    let s = setup();
    s.prepare();
    let wt = s.tmp.path().join("work").join("wt");
    git(
        &s.root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &wt.to_string_lossy(),
            &s.demo.commit,
        ],
    );
    let mut options = s.options();
    options.root(&wt);
    let p = options.try_prepare().unwrap();
    assert!(matches!(p.action, Action::Resync | Action::Clone), "{p}");
    assert!(
        std::fs::read_to_string(wt.join(PATCHED_SUPER))
            .unwrap()
            .contains("void* lse;")
    );
    assert_action(&options.try_prepare().unwrap(), Action::UpToDate);
}

#[test]
fn a_refused_run_writes_nothing_even_when_the_url_changed() {
    let s = setup();
    s.prepare();
    s.write(UNTOUCHED, "# my edit\n");
    let before = mtimes(&s.root);
    tick();
    let (_, options) = move_upstream(&s);
    let e = options.try_prepare().unwrap_err();
    assert_eq!(e.kind(), qola_build::ErrorKind::Refused, "{e}");
    assert_nothing_written(&before, &s.root);
}

// 9. `status` predicts `prepare`.

#[test]
fn status_with_a_branch_predicts_prepare_or_says_it_cannot_know() {
    let s = setup();
    s.options().commit("main").try_prepare().unwrap();
    let status = s.options().commit("main").try_status().unwrap();
    let prepared = s.options().commit("main").try_prepare().unwrap();
    assert_action(&prepared, Action::UpToDate);
    assert_action(&status, Action::UpToDate);
    assert!(
        status.warnings.iter().any(|w| w.contains("fetch")),
        "status must say that it did not fetch the branch: {status}"
    );
}

#[test]
fn the_series_is_every_visible_patch_file_and_anything_else_named_so_is_refused() {
    let s = setup();
    // A hidden file named like a patch is no part of the series (QoLA's glob passes over it):
    // not applied, said once.
    s.add_patch(
        ".0004-hidden.patch",
        "diff --git a/HIDDEN b/HIDDEN\nnew file mode 100644\n--- /dev/null\n+++ b/HIDDEN\n@@ -0,0 +1 @@\n+x\n",
    );
    s.add_patch(".patch", "not a patch at all\n");
    let p = s.prepare();
    assert!(!s.root.join("HIDDEN").exists());
    let said: Vec<&String> = p.warnings.iter().filter(|w| w.contains("hidden")).collect();
    assert_eq!(said.len(), 1, "{:?}", p.warnings);
    assert!(said[0].contains(".0004-hidden.patch") && said[0].contains(".patch"));
    // A directory named like a patch is refused, named, before anything is written.
    std::fs::create_dir(s.demo.patches.join("0005-dir.patch")).unwrap();
    let before = mtimes(&s.root);
    let e = prepare_err(&s);
    assert!(
        matches!(e, PrepareError::NotAPatch { .. })
            && e.to_string().contains("0005-dir.patch")
            && e.to_string().contains("a directory"),
        "{e}"
    );
    assert_nothing_written(&before, &s.root);
}

/// An edit that keeps a file's size and mtime (in place: the same inode), which git's weakened
/// stat checks miss; qola's own checks (ctime too, then content) do not.
fn edit_keeping_size_and_mtime(path: &Path) {
    let meta = std::fs::metadata(path).unwrap();
    let mtime = meta.modified().unwrap();
    let mut text = std::fs::read(path).unwrap();
    text[0] = if text[0] == b'#' { b'/' } else { b'#' };
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(path, &text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

#[test]
fn an_edit_git_is_told_not_to_see_is_seen() {
    for (key, value) in [("core.trustctime", "false"), ("core.checkStat", "minimal")] {
        let s = setup();
        s.prepare();
        git(&s.root, &["config", key, value]);
        // A file at its pinned content (a patched file differs from HEAD and is always read).
        edit_keeping_size_and_mtime(&s.root.join(UNTOUCHED));
        let refused = s.refused();
        assert_eq!(
            refused.edited_paths,
            [UNTOUCHED],
            "{key}={value}: {refused}"
        );
    }
}

#[test]
fn a_file_removed_from_the_index_only_is_named_with_what_changed() {
    let s = setup();
    s.prepare();
    git(&s.root, &["rm", "-q", "--cached", CREATED]);
    let p = s.prepare();
    let named: Vec<&String> = p
        .reasons
        .iter()
        .map(|r| &r.message)
        .filter(|m| m.contains(CREATED))
        .collect();
    assert!(
        named
            .iter()
            .any(|m| m.contains("only in the index: removed from it")),
        "{p}"
    );
    assert!(
        !p.reasons
            .iter()
            .any(|r| r.message.trim_end().ends_with(':')),
        "{p}"
    );
    assert_prepared(&s);
    assert_eq!(s.prepare().action, Action::UpToDate);
}

/// Every file and directory under `dir` given to `uid` (as `chown -R`).
fn chown_all(dir: &Path, uid: u32) {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.symlink_metadata().unwrap().is_dir() {
            chown_all(&path, uid);
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid)).unwrap();
        }
    }
}

/// A checkout owned by another user (a container build on a host checkout) is refused as git
/// refuses it: the error names the owner, the current user and `safe.directory`, never "remove
/// it"; git's `safe.directory` allows it, the submodule with its own entry.
#[test]
fn a_checkout_another_user_owns_is_named_so_and_safe_directory_allows_it() {
    let s = setup();
    s.prepare();
    chown_all(&s.root, 4321);
    let home = s.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let prepare = || {
        let out = explicit(&s, "prepare", &[])
            .env("HOME", &home)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = prepare();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{} belongs to uid 4321", s.root.display()))
            && stderr.contains("(root)")
            && stderr.contains(&format!(
                "git config --global --add safe.directory {}",
                s.root.display()
            )),
        "{stderr}"
    );
    assert!(!stderr.contains("remove"), "{stderr}");
    // Allowed for the superproject only: the submodule is named next.
    let gitconfig = |dirs: &[&Path]| {
        let entries: String = dirs
            .iter()
            .map(|d| format!("\tdirectory = {}\n", d.display()))
            .collect();
        std::fs::write(home.join(".gitconfig"), format!("[safe]\n{entries}")).unwrap();
    };
    gitconfig(&[&s.root]);
    let (code, stderr) = prepare();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{} belongs to uid 4321", s.ck().display())),
        "{stderr}"
    );
    gitconfig(&[&s.root, &s.ck()]);
    let (code, stderr) = prepare();
    assert_eq!(code, Some(0), "{stderr}");
    chown_all(&s.root, 0);
}

/// The crate docs' decision table: `qola diff` output added to the series, on a tree that
/// already is the new prepared state, is adopted (the stamp and the index written, no file
/// rewritten), for every kind of edit `qola diff` writes: a submodule edit, deletions (of a
/// pinned file and of a file the series created), a mode change, a binary change, and a new file
/// and a symlink the user added to git.
#[test]
fn qola_diff_added_to_the_series_is_adopted_without_rewriting_a_file() {
    let s = setup();
    s.prepare();
    s.write(
        "3rdparty/composable_kernel/include/ck_tile/core/config.hpp",
        "#define CK_TILE_QOLA 2\n",
    );
    std::fs::remove_file(s.root.join(UNTOUCHED)).unwrap();
    std::fs::remove_file(s.root.join(CREATED)).unwrap();
    let script = s.root.join("scripts/build_demo.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let binary = "3rdparty/composable_kernel/library/blob.bin";
    std::fs::write(s.root.join(binary), [9u8, 0, 1, 2, 3, 200, 0]).unwrap();
    s.write("docs/added.md", "a new file\n");
    std::os::unix::fs::symlink("../README.md", s.root.join("docs/link")).unwrap();
    git(&s.root, &["add", "docs/added.md", "docs/link"]);
    let patch = s.demo.patches.join("0004-local-edits.patch");
    let out = explicit(&s, "diff", &["-o"]).arg(&patch).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&std::fs::read(&patch).unwrap()).into_owned();
    for path in [
        "config.hpp",
        UNTOUCHED,
        CREATED,
        "build_demo.sh",
        "blob.bin",
        "docs/added.md",
        "docs/link",
    ] {
        assert!(text.contains(path), "{path} in the patch:\n{text}");
    }
    let before = mtimes(&s.root);
    let report = s.prepare();
    assert_eq!(
        kinds(&report),
        [ReasonKind::PatchAdded, ReasonKind::Adopted],
        "{report}"
    );
    let rewritten: Vec<PathBuf> = changed(&before, &mtimes(&s.root))
        .into_iter()
        .filter(|p| !p.starts_with(s.root.join(".git")) && !p.ends_with(".git"))
        .collect();
    assert_eq!(rewritten, Vec::<PathBuf>::new(), "{report}");
    assert_action(&s.prepare(), Action::UpToDate);
}
