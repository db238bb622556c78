//! Nothing half-done: every write of a preparation goes through its journal.
//!
//! * A failure injected after the n-th write, for every n of a real bump (file edits, a
//!   deletion, a file turned into a symlink, a file turned into a directory, a new file, the
//!   submodule moving to another commit): the tree, the index files and the `HEAD`s are byte for
//!   byte what they were, and a next preparation ends in the new state.
//! * A kill at every named step (the test hook `QOLA_TEST_KILL_AT`), for a first clone and for a
//!   bump: the next preparation finishes the interrupted one, says so, and never calls anything
//!   qola left a local edit.
//!
//! No test here depends on how fast the machine is: the failures and kills are placed by write
//! count and by step, not by time.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;
use qola_build::{Action, PrepareError, ReasonKind};

/// Everything a rollback must restore: each work-tree entry (file content and mode, symlink
/// target, directory), each repository's index file and `HEAD`.
fn state(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if rel == ".git" {
                continue;
            }
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(
                    format!("{rel} ->"),
                    target.display().to_string().into_bytes(),
                );
            } else if meta.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(path);
            } else {
                let mut bytes = format!("{:o} ", meta.permissions().mode()).into_bytes();
                bytes.extend(std::fs::read(&path).unwrap());
                out.insert(rel, bytes);
            }
        }
    }
    for git_dir in [
        root.join(".git"),
        root.join(".git/modules/3rdparty/composable_kernel"),
    ] {
        for file in ["index", "HEAD"] {
            let at = git_dir.join(file);
            out.insert(
                at.display().to_string(),
                std::fs::read(&at).unwrap_or_default(),
            );
        }
    }
    out
}

/// A new upstream commit that changes every kind of thing: in the submodule an edit, a new file
/// and a deletion (so the submodule moves); in the superproject an edit, a deletion, a file
/// turned into a symlink, a file turned into a directory, a new file. The series still applies.
fn bump(s: &Setup) -> String {
    let (ck, aiter) = (&s.demo.ck, &s.demo.aiter);
    write(
        ck,
        "include/ck_tile/new.hpp",
        "#pragma once // new in the bump\n",
    );
    git(ck, &["rm", "-q", "library/blob.bin"]);
    git(ck, &["add", "-A"]);
    git(ck, &["commit", "-q", "-m", "composable_kernel bump"]);
    let ck_commit = git(ck, &["rev-parse", "HEAD"]);
    write(aiter, "README.md", "# AITER (qola demo), bumped\n");
    git(aiter, &["rm", "-q", "scripts/build_demo.sh"]);
    git(
        aiter,
        &["rm", "-q", "hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co"],
    );
    // (`git rm` took the emptied directory with it.)
    std::fs::create_dir_all(aiter.join("hsa/gfx942/fmha_v3_fwd")).unwrap();
    std::os::unix::fs::symlink(
        "../../../README.md",
        aiter.join("hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co"),
    )
    .unwrap();
    git(aiter, &["rm", "-q", "aiter/jit/optCompilerConfig.json"]);
    write(
        aiter,
        "aiter/jit/optCompilerConfig.json/README",
        "now a directory\n",
    );
    write(aiter, "docs/new.md", "new in the bump\n");
    git(
        aiter,
        &[
            "add",
            "README.md",
            "hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co",
            "aiter/jit/optCompilerConfig.json/README",
            "docs/new.md",
        ],
    );
    qola_tests::add_gitlink(aiter, &ck_commit, "3rdparty/composable_kernel");
    git(aiter, &["commit", "-q", "-m", "the bump"]);
    git(aiter, &["rev-parse", "HEAD"])
}

/// Asserts the bump is prepared.
fn assert_bumped(s: &Setup) {
    assert_prepared(s);
    assert_eq!(s.read("README.md"), "# AITER (qola demo), bumped\n");
    assert!(!s.root.join("scripts/build_demo.sh").exists());
    assert!(
        std::fs::symlink_metadata(s.root.join("hsa/gfx942/fmha_v3_fwd/fwd_hd128_bf16.co"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        s.root
            .join("aiter/jit/optCompilerConfig.json/README")
            .is_file()
    );
    assert!(s.ck().join("include/ck_tile/new.hpp").is_file());
    assert!(!s.ck().join("library/blob.bin").exists());
}

#[test]
fn a_failure_after_any_write_of_a_bump_leaves_the_tree_index_and_heads_as_they_were() {
    let s = setup();
    s.prepare();
    let before = state(&s.root);
    let new = bump(&s);
    let (mut failed, mut rolled_back) = (0, 0);
    for n in 0.. {
        let mut options = s.options();
        options.commit(&new).fail_after_writes(n);
        match options.try_prepare() {
            Ok(p) => {
                assert_action(&p, Action::Resync);
                break;
            }
            Err(e) => {
                failed += 1;
                // When the writes so far changed something, the error says it was undone.
                let text = e.to_string();
                assert!(text.contains("a failure injected after"), "{text}");
                if matches!(e, PrepareError::RolledBack { .. }) {
                    rolled_back += 1;
                    assert!(
                        text.contains("the checkout is as it was before this preparation"),
                        "after {n} writes: {text}"
                    );
                }
                let after = state(&s.root);
                let differing: Vec<&String> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|k| before.get(*k) != after.get(*k))
                    .collect();
                assert!(differing.is_empty(), "after {n} writes: {differing:?}");
            }
        }
        assert!(n < 500, "the bump never completed");
    }
    eprintln!(
        "a failure after each of the bump's {failed} writes: the tree as it was every time, {rolled_back} rollbacks"
    );
    assert!(failed > 15, "a real bump makes many writes: {failed}");
    assert!(rolled_back + 3 > failed, "{rolled_back} of {failed}");
    assert_bumped(&s);
    let mut options = s.options();
    options.commit(&new);
    assert_action(&options.try_prepare().unwrap(), Action::UpToDate);
}

/// `qola prepare --json` of `s` at `commit`, killed at `step` when given.
fn prepare_at(s: &Setup, commit: &str, kill_at: Option<&str>) -> std::process::Output {
    let mut command = qola(s, &["prepare", "--json", "--root"]);
    command
        .arg(&s.root)
        .arg("--url")
        .arg(&s.demo.aiter)
        .args(["--commit", commit, "--patches"])
        .arg(&s.demo.patches);
    if let Some(step) = kill_at {
        command.env("QOLA_TEST_KILL_AT", step);
    }
    command.output().unwrap()
}

/// Asserts `out` was killed (the hook reached its step).
fn assert_killed(out: &std::process::Output, step: &str) {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{step}: not killed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_first_clone_killed_at_any_step_is_finished_by_the_next_prepare() {
    for step in [
        "superproject-clone",
        "superproject-checkout",
        "submodule-clone:3rdparty/composable_kernel",
        "submodule-checkout:3rdparty/composable_kernel",
    ]
    .into_iter()
    .map(String::from)
    .chain(patch_steps())
    .chain(["stamp".to_string()])
    {
        let s = setup();
        assert_killed(&prepare_at(&s, &s.demo.commit, Some(&step)), &step);
        let v = assert_finished(&prepare_at(&s, &s.demo.commit, None), &step);
        assert_eq!(v["action"], "recover", "{step}: {v}");
        assert_prepared(&s);
        assert_eq!(
            s.options().try_status().unwrap().action,
            Action::UpToDate,
            "{step}"
        );
    }
}

#[test]
fn a_bump_killed_at_any_step_is_finished_by_the_next_prepare() {
    for step in [
        "superproject-checkout",
        "submodule-checkout:3rdparty/composable_kernel",
    ]
    .into_iter()
    .map(String::from)
    .chain(patch_steps())
    .chain(["stamp".to_string()])
    {
        let s = setup();
        s.prepare();
        let new = bump(&s);
        assert_killed(&prepare_at(&s, &new, Some(&step)), &step);
        // `qola status` says a journal waits, and writes nothing.
        let status = s.options().commit(&new).try_status().unwrap();
        assert_action(&status, Action::Recover);
        assert!(
            kinds(&status).contains(&ReasonKind::Interrupted),
            "{status}"
        );
        let v = assert_finished(&prepare_at(&s, &new, None), &step);
        assert!(
            v["action"] == "recover" || v["action"] == "up-to-date",
            "{step}: {v}"
        );
        assert_bumped(&s);
        let mut options = s.options();
        options.commit(&new);
        assert_eq!(options.try_status().unwrap().action, Action::UpToDate);
    }
}

/// The steps `patch:<name>` of the demo series, in order.
fn patch_steps() -> impl Iterator<Item = String> {
    qola_tests::DEMO_PATCHES
        .iter()
        .map(|(name, _)| format!("patch:{name}"))
}

/// A deep path the file system takes but libgit2 does not read back is refused before any
/// write, naming the patch and the path (it used to fail after the tree had changed).
#[test]
fn a_path_deeper_than_libgit2_reads_is_refused_before_any_write() {
    let s = setup();
    s.prepare();
    let before = state(&s.root);
    let deep: PathBuf = (0..120).map(|i| format!("d{i}")).collect();
    let path = format!("{}/x.txt", deep.display());
    s.add_patch(
        "0004-deep.patch",
        format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
        ),
    );
    let e = s.options().try_prepare().unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, PrepareError::UnsafePatchPath { .. })
            && text.contains("0004-deep.patch")
            && text.contains("directories deep"),
        "{text}"
    );
    assert_eq!(state(&s.root), before);
}

/// An editor saves a file after qola wrote it and before qola checks the tree (the step
/// `verify`): the preparation is undone, the editor's file is saved to a named backup first,
/// and the error says a file changed while qola wrote the tree (not that a git filter rewrites
/// files).
#[test]
fn a_rollback_never_destroys_an_edit_made_while_qola_wrote_the_tree() {
    let s = setup();
    s.prepare();
    // Our patch undone in the tree: the next preparation writes the file again.
    let pristine = git(&s.root, &["show", &format!("HEAD:{PATCHED_SUPER}")]) + "\n";
    std::fs::write(s.root.join(PATCHED_SUPER), &pristine).unwrap();
    let child = explicit(&s, "prepare", &[])
        .env("QOLA_TEST_STOP_AT", "verify")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        qola_tests::wait_until_stopped(&child),
        "stopped before the check"
    );
    let written = s.read(PATCHED_SUPER);
    assert!(
        written.contains("void* lse;"),
        "qola wrote the patched file"
    );
    let edited = format!("{written}// the editor's line\n");
    std::fs::write(s.root.join(PATCHED_SUPER), &edited).unwrap();
    qola_tests::resume(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("another program changed csrc/include/mha_fwd.h")
            && !stderr.contains("git filter"),
        "{stderr}"
    );
    // The tree is as it was before; the editor's version is in the backup the error names.
    assert_eq!(s.read(PATCHED_SUPER), pristine);
    let backup = stderr
        .split("saved to ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the backup is named");
    let saved = std::fs::read_to_string(Path::new(backup).join(PATCHED_SUPER)).unwrap();
    assert_eq!(saved, edited);
}
