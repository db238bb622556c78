//! The real AITER tree (9,095 tracked paths with composable_kernel, from the amd-aiter wheel)
//! prepared with qola's own series in `qola-build/patches/aiter`: one patch for AITER only, one for
//! composable_kernel only, one for both. In CI the wheel is required; elsewhere the test says why
//! it skips.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_finished, assert_nothing_written, changed, git, mtimes};
use qola_build::{Action, Prepare, ReasonKind};

fn series() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-build/patches/aiter")
}

const AITER_ONLY: &str = "csrc/include/aiter_hip_common.h";
const CK_ONLY: &str = "3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py";
const BOTH: [&str; 2] = [
    "csrc/cpp_itfs/mha_fwd_generate.py",
    "3rdparty/composable_kernel/example/ck_tile/01_fmha/generate.py",
];

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

#[test]
fn real_tree_prepares_with_our_series_and_stays_up_to_date() {
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("aiter");
    let options = || {
        let mut o = Prepare::new();
        o.root(&root)
            .url(real.upstream.to_string_lossy())
            .commit(&real.commit)
            .patches_dir(series())
            .cache_dir(tmp.path().join("cache"))
            .cargo_metadata(false)
            .force(false)
            .skip(false)
            .offline(false);
        o
    };
    let p = options().try_prepare().unwrap();
    assert_eq!(p.action, Action::Clone, "{p}");
    let tracked = git(&root, &["ls-files"]).lines().count()
        + git(&root.join("3rdparty/composable_kernel"), &["ls-files"])
            .lines()
            .count();
    // The wheel's 9095 files and the header qola's 0007 adds (csrc/include/aiter_tensor.h).
    assert_eq!(tracked, 9096);
    assert!(read(&root, AITER_ONLY).contains("aiter_embedded_hsa_find"));
    assert!(read(&root, CK_ONLY).contains("receipt == 700"));
    for path in BOTH {
        assert!(
            read(&root, path).contains("--output_dir is required"),
            "{path}"
        );
    }

    // Up to date: not one mtime changes, in the work trees or in .git.
    let before = mtimes(&root);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let p = options().try_prepare().unwrap();
    assert_eq!(p.action, Action::UpToDate, "{p}");
    assert_nothing_written(&before, &root);

    // The command line agrees, and writes nothing either.
    let out = common::qola_command(&[])
        .env("QOLA_CACHE_DIR", tmp.path().join("cache"))
        .args(["status", "--json", "--root"])
        .arg(&root)
        .args([
            "--url",
            &real.upstream.to_string_lossy(),
            "--commit",
            &real.commit,
            "--patches",
        ])
        .arg(series())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["action"], "up-to-date", "{v}");
    assert_nothing_written(&before, &root);

    // A reset inside composable_kernel: only its two patched files come back.
    git(
        &root.join("3rdparty/composable_kernel"),
        &["reset", "-q", "--hard"],
    );
    let before = mtimes(&root);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let p = options().try_prepare().unwrap();
    assert_eq!(p.action, Action::Resync, "{p}");
    assert!(
        p.reasons
            .iter()
            .any(|r| r.kind == ReasonKind::PatchReverted),
        "{p}"
    );
    let mut files: Vec<PathBuf> = changed(&before, &mtimes(&root))
        .into_iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == ".git") && p.is_file())
        .collect();
    files.sort();
    let ck = root.join("3rdparty/composable_kernel/example/ck_tile/01_fmha");
    assert_eq!(
        files,
        vec![
            ck.join("codegen/ops/fmha_bwd.py"),
            ck.join("codegen/ops/fmha_fwd.py"),
            ck.join("generate.py"),
        ]
    );
}

/// The steps of a preparation with qola's series, as the kill hook names them.
fn patch_steps() -> Vec<String> {
    qola_tests::files_with_extension(&series(), "patch")
        .iter()
        .map(|p| format!("patch:{}", p.file_name().unwrap().to_string_lossy()))
        .collect()
}

/// A copy of the real upstream with one more commit in each repository (an edit, a new file, a
/// deletion; the submodule moves), beside each other as `.gitmodules` expects; returns the
/// superproject and its new commit.
fn bumped_upstream(real: &qola_tests::RealAiter, dir: &Path) -> (PathBuf, String) {
    let (ck, aiter) = (dir.join("composable_kernel"), dir.join("aiter"));
    std::fs::create_dir_all(dir).unwrap();
    for (from, to) in [(&real.ck, &ck), (&real.upstream, &aiter)] {
        git(
            dir,
            &[
                "clone",
                "-q",
                &from.to_string_lossy(),
                &to.to_string_lossy(),
            ],
        );
    }
    common::write(&ck, "README.md", "composable_kernel, bumped\n");
    common::write(&ck, "include/ck_tile/qola_bump.hpp", "#pragma once\n");
    git(&ck, &["rm", "-q", "LICENSE"]);
    git(&ck, &["add", "-A"]);
    git(&ck, &["commit", "-q", "-m", "bump"]);
    let ck_commit = git(&ck, &["rev-parse", "HEAD"]);
    common::write(&aiter, "aiter/_version.py", "# AITER, bumped\n");
    common::write(&aiter, "csrc/include/qola_bump.h", "#pragma once\n");
    git(&aiter, &["rm", "-q", "gradlib/setup.py"]);
    git(
        &aiter,
        &["add", "aiter/_version.py", "csrc/include/qola_bump.h"],
    );
    qola_tests::add_gitlink(&aiter, &ck_commit, "3rdparty/composable_kernel");
    git(&aiter, &["commit", "-q", "-m", "bump"]);
    let commit = git(&aiter, &["rev-parse", "HEAD"]);
    (aiter, commit)
}

/// Kills placed by step, not by time (a fixed delay lands in another phase on a loaded machine):
/// a first clone and a bump of the real tree, killed at each of their steps, are finished by the
/// next prepare, which says so and takes nothing qola left for a local edit.
#[test]
fn a_prepare_killed_at_any_step_of_a_first_clone_or_a_bump_is_finished_by_the_next_one() {
    use std::os::unix::process::ExitStatusExt;
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (upstream, bumped) = bumped_upstream(&real, &tmp.path().join("upstream"));
    let qola = |verb: &str, root: &Path, commit: &str, kill_at: Option<&str>| {
        let mut c = common::qola_command(&[]);
        c.env("QOLA_CACHE_DIR", tmp.path().join("cache"))
            .args([verb, "--json", "--root"])
            .arg(root)
            .arg("--url")
            .arg(&upstream)
            .args(["--commit", commit, "--patches"])
            .arg(series());
        if let Some(step) = kill_at {
            c.env("QOLA_TEST_KILL_AT", step);
        }
        c.output().unwrap()
    };
    let finished = |root: &Path, commit: &str, step: &str| {
        assert_finished(&qola("prepare", root, commit, None), step);
        assert!(read(root, CK_ONLY).contains("receipt == 700"), "{step}");
        let status = qola("status", root, commit, None);
        let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(v["action"], "up-to-date", "{step}: {v}");
    };
    let killed = |out: std::process::Output, step: &str| {
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{step}: not killed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let clone_steps = [
        "superproject-clone",
        "superproject-checkout",
        "submodule-clone:3rdparty/composable_kernel",
        "submodule-checkout:3rdparty/composable_kernel",
    ];
    for (i, step) in clone_steps
        .iter()
        .map(|s| s.to_string())
        .chain(patch_steps())
        .chain(["stamp".to_string()])
        .enumerate()
    {
        let root = tmp.path().join(format!("first-{i}"));
        killed(qola("prepare", &root, &real.commit, Some(&step)), &step);
        finished(&root, &real.commit, &format!("first clone, {step}"));
        std::fs::remove_dir_all(&root).unwrap();
    }
    // A bump: from the prepared pin to the bumped commit, killed at each step; then back.
    let root = tmp.path().join("bump");
    assert!(qola("prepare", &root, &real.commit, None).status.success());
    for step in [
        "superproject-checkout",
        "submodule-checkout:3rdparty/composable_kernel",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(patch_steps())
    .chain(["stamp".to_string()])
    {
        killed(qola("prepare", &root, &bumped, Some(&step)), &step);
        finished(&root, &bumped, &format!("bump, {step}"));
        assert_eq!(read(&root, "aiter/_version.py"), "# AITER, bumped\n");
        assert!(!root.join("gradlib/setup.py").exists());
        assert!(
            root.join("3rdparty/composable_kernel/include/ck_tile/qola_bump.hpp")
                .is_file()
        );
        assert!(qola("prepare", &root, &real.commit, None).status.success());
    }
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("qola-clone"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_manifest_without_patches_dir_gets_qolas_own_series_which_is_no_build_input() {
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let manifest = tmp.path().join("qola.toml");
    qola_tests::ManifestText::new(&real.commit, &real.upstream).write(&manifest);
    let root = tmp.path().join("aiter");
    let p = Prepare::new()
        .manifest(&manifest)
        .root(&root)
        .cache_dir(tmp.path().join("cache"))
        .cargo_metadata(false)
        .try_prepare()
        .unwrap();
    assert_eq!(p.action, Action::Clone, "{p}");
    assert!(read(&root, AITER_ONLY).contains("aiter_embedded_hsa_find"));
    assert!(read(&root, CK_ONLY).contains("receipt == 700"));
    // No library code ends the process or reads a null AITER_ASM_DIR: errors are thrown.
    assert!(!read(&root, AITER_ONLY).contains("exit("));
    for loader in [
        "hsa/gfx942/fmha_v3_fwd/codegen.py",
        "hsa/gfx942/fmha_v3_bwd/codegen.py",
        "hsa/gfx950/fmha_v3_fwd/codegen.py",
        "hsa/gfx950/fmha_v3_bwd/codegen.py",
    ] {
        let text = read(&root, loader);
        assert!(
            !text.contains("std::string(std::getenv(\"AITER_ASM_DIR\"))"),
            "{loader}"
        );
        assert!(text.contains("aiter_embedded_hsa_find"), "{loader}");
    }
    // The series is part of qola: only the manifest is an input (for CMake, rerun-if-changed).
    assert_eq!(p.inputs, vec![manifest]);
}
