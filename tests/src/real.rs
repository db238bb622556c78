//! The real AITER source tree (upstream commit 05a0d1f060af14e789696479de71a2fc2fbaada9, CK
//! e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40), rebuilt as git repositories from the PyPI wheel
//! `amd-aiter==0.1.7.post2.dev18`: repo root = the wheel's `aiter_meta/` plus its `aiter/`
//! package, `3rdparty/composable_kernel` a real submodule (URL `../composable_kernel`).
//!
//! The wheel is downloaded with pip once (or taken from `QOLA_AITER_WHEEL`), and the repositories
//! are built once under `target/qola-fixtures/real/`. Commits use fixed identities and dates, so
//! their ids are the same on every machine. Nothing here is ever committed to qola.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{add_gitlink, fixtures_dir, git, in_ci};

/// The wheel's pinned version.
pub const WHEEL_VERSION: &str = "0.1.7.post2.dev18";
const WHEEL_FILE: &str = "amd_aiter-0.1.7.post2.dev18-py3-none-any.whl";
/// Bumped when the way the repositories are built changes.
const LAYOUT: &str = "qola-real-aiter-2";

/// The real AITER upstream, as local repositories.
#[derive(Debug, Clone)]
pub struct RealAiter {
    /// The superproject repository (the URL to clone).
    pub upstream: PathBuf,
    /// The composable_kernel repository.
    pub ck: PathBuf,
    /// The superproject commit.
    pub commit: String,
    /// The composable_kernel commit it records.
    pub ck_commit: String,
}

/// The real tree, building it on first use. `None` (with a note on stderr) when the wheel cannot
/// be had outside CI; in CI (`CI=true`) that is a panic, so the test fails instead of skipping.
/// Tests in one process share one answer; test processes take turns through a file lock.
pub fn real_aiter() -> Option<RealAiter> {
    static REAL: std::sync::OnceLock<Option<RealAiter>> = std::sync::OnceLock::new();
    REAL.get_or_init(|| {
        let lock_path = fixtures_dir().join("real.lock");
        let lock = std::fs::File::create(&lock_path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", lock_path.display()));
        lock.lock().expect("lock the fixture");
        build_or_reuse()
    })
    .clone()
}

fn build_or_reuse() -> Option<RealAiter> {
    let dir = fixtures_dir().join("real");
    let done = dir.join("DONE");
    if std::fs::read_to_string(&done).is_ok_and(|s| s.trim() == LAYOUT) {
        return Some(read_existing(&dir));
    }
    let wheel = match wheel() {
        Ok(wheel) => wheel,
        Err(why) if in_ci() => panic!("CI: the AITER wheel is required: {why}"),
        Err(why) => {
            eprintln!("skipping: the AITER wheel is not available ({why}); set QOLA_AITER_WHEEL");
            return None;
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    let tmp = fixtures_dir().join(format!("real.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    build(&wheel, &tmp);
    std::fs::write(tmp.join("DONE"), LAYOUT).expect("write the DONE marker");
    std::fs::rename(&tmp, &dir).expect("move the fixture into place");
    Some(read_existing(&dir))
}

fn read_existing(dir: &Path) -> RealAiter {
    let upstream = dir.join("aiter");
    let ck = dir.join("composable_kernel");
    RealAiter {
        commit: git(&upstream, &["rev-parse", "HEAD"]),
        ck_commit: git(&ck, &["rev-parse", "HEAD"]),
        upstream,
        ck,
    }
}

/// The wheel file: `QOLA_AITER_WHEEL`, the cached copy, or a fresh `pip download`.
pub fn wheel() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("QOLA_AITER_WHEEL") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("QOLA_AITER_WHEEL={} is not a file", path.display()))
        };
    }
    let dir = fixtures_dir();
    let path = dir.join(WHEEL_FILE);
    if path.is_file() {
        return Ok(path);
    }
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .arg(format!("amd-aiter=={WHEEL_VERSION}"))
        .arg("-d")
        .arg(&dir)
        .status()
        .map_err(|e| format!("cannot run python3 -m pip: {e}"))?;
    if status.success() && path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "`pip download amd-aiter=={WHEEL_VERSION}` failed ({status})"
        ))
    }
}

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}

fn build(wheel: &Path, tmp: &Path) {
    let unpacked = tmp.join("wheel");
    std::fs::create_dir_all(&unpacked).expect("create the unpack directory");
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(&unpacked));
    let meta = unpacked.join("aiter_meta");
    let ck_src = meta.join("3rdparty").join("composable_kernel");

    // composable_kernel: the submodule's own repository (its `.git` file from the wheel dropped).
    let ck = tmp.join("composable_kernel");
    std::fs::rename(&ck_src, &ck).expect("move composable_kernel out");
    let _ = std::fs::remove_file(ck.join(".git"));
    git(&ck, &["init", "-q"]);
    git(&ck, &["add", "-A", "-f"]);
    git(
        &ck,
        &[
            "commit",
            "-q",
            "-m",
            "composable_kernel e31a7a4f29b371c32ea9daf9211b6ae1fed2fa40 (from the amd-aiter wheel)",
        ],
    );
    let ck_commit = git(&ck, &["rev-parse", "HEAD"]);
    // Packed, like a clone from GitHub.
    git(&ck, &["repack", "-adq"]);

    // AITER: aiter_meta/ plus the aiter/ package, without bytecode caches.
    let aiter = tmp.join("aiter");
    std::fs::rename(&meta, &aiter).expect("move aiter_meta");
    std::fs::rename(unpacked.join("aiter"), aiter.join("aiter")).expect("move the aiter package");
    remove_pycache(&aiter);
    std::fs::create_dir_all(aiter.join("3rdparty/composable_kernel")).expect("submodule dir");
    std::fs::write(
        aiter.join(".gitmodules"),
        "[submodule \"3rdparty/composable_kernel\"]\n\tpath = 3rdparty/composable_kernel\n\turl = ../composable_kernel\n",
    )
    .expect("write .gitmodules");
    git(&aiter, &["init", "-q"]);
    git(&aiter, &["add", "-A", "-f"]);
    add_gitlink(&aiter, &ck_commit, "3rdparty/composable_kernel");
    git(
        &aiter,
        &[
            "commit",
            "-q",
            "-m",
            "AITER 05a0d1f060af14e789696479de71a2fc2fbaada9 (from the amd-aiter wheel)",
        ],
    );
    git(&aiter, &["repack", "-adq"]);
    std::fs::remove_dir_all(&unpacked).expect("remove the unpacked wheel");
}

fn remove_pycache(dir: &Path) {
    for entry in std::fs::read_dir(dir)
        .expect("read a wheel directory")
        .flatten()
    {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if entry.file_name() == "__pycache__" {
                std::fs::remove_dir_all(&path).expect("remove __pycache__");
            } else {
                remove_pycache(&path);
            }
        }
    }
}
