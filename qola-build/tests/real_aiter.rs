//! The real AITER tree (9,095 tracked paths with composable_kernel, from the amd-aiter wheel)
//! prepared with qola's own series in `qola-build/patches/aiter`: one patch for AITER only, one for
//! composable_kernel only, one for both. In CI the wheel is required; elsewhere the test says why
//! it skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_nothing_written, changed, git, mtimes};
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
    assert_eq!(tracked, 9095);
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
    let out = Command::new(env!("CARGO_BIN_EXE_qola"))
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

#[test]
fn a_prepare_killed_midway_is_finished_by_the_next_one() {
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("aiter");
    let qola = |verb: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_qola"));
        c.env("QOLA_CACHE_DIR", tmp.path().join("cache"))
            .args([verb, "--json", "--root"])
            .arg(&root)
            .args([
                "--url",
                &real.upstream.to_string_lossy(),
                "--commit",
                &real.commit,
                "--patches",
            ])
            .arg(series());
        c
    };
    // Killed somewhere in the clone, the checkout or the patching (a fresh prepare takes seconds).
    let mut child = qola("prepare")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let out = qola("prepare").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let action = v["action"].as_str().unwrap();
    assert!(["clone", "recover", "up-to-date"].contains(&action), "{v}");
    assert!(read(&root, CK_ONLY).contains("receipt == 700"));
    let out = qola("status").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["action"], "up-to-date", "{v}");
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
    std::fs::write(
        &manifest,
        format!(
            "[qola]\naiter_commit = \"{}\"\naiter_url = \"{}\"\n",
            real.commit,
            real.upstream.display()
        ),
    )
    .unwrap();
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
