//! Same content, same work: the places a build can move to, each a real `cargo build` of a crate
//! depending on qola-sys that counts the units compiled the second time. With the built-in
//! kernels (Debian's hipcc) and the narrow AITER forward (the sid toolchain), after a first
//! build:
//!
//! * `cargo build --release` (another profile, another `OUT_DIR`);
//! * a second `CARGO_TARGET_DIR`;
//! * the same workspace cloned at another path (qola-sys's sources elsewhere), built there;
//!
//! each compiles 0 units, sharing one qola cache. (`qola build -o A` then `-o B` is in
//! `qola_build.rs`, a second machine through Redis in `team_cache.rs`, the same project at two
//! paths with byte-identical objects in `compile.rs`.) The two tests share their target
//! directories under `target/qola-fixtures`, so registry crates compile once per profile.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{NARROW_FWD_FILTER, fixtures_dir, hipcc_available};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `cargo build` of `dir` into `target` (`release`: the release profile) with `env`.
fn cargo(dir: &Path, target: &Path, release: bool, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(dir)
        .args(["build", "--offline"])
        .args(release.then_some("--release"))
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_TERM_COLOR", "never");
    qola_tests::without_caller_env(&mut command, &[], &["CARGO_NET_OFFLINE"]);
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().expect("run cargo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The summary of the newest log named `log` of a qola-sys build in `target`'s `profile`: what
/// its last build of that library did.
fn last_summary(target: &Path, profile: &str, log: &str) -> String {
    let build = target.join(profile).join("build");
    let mut logs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&build)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("out").join(log))
        .filter(|p| p.is_file())
        .map(|p| (p.metadata().unwrap().modified().unwrap(), p))
        .collect();
    logs.sort();
    let (_, newest) = logs
        .pop()
        .unwrap_or_else(|| panic!("no {log} under {}", build.display()));
    let text = std::fs::read_to_string(&newest).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("{}: {text}", newest.display()))
        .to_string()
}

/// Builds a qola-sys dependent with `env` and qola's cache `cache` (default: a new one) in every
/// place; asserts the places after the first compile no unit of `log`'s library and returns the
/// summaries.
fn build_everywhere(
    name: &str,
    log: &str,
    cache: Option<&Path>,
    env: &[(&str, &Path)],
) -> Vec<String> {
    // Under target/qola-fixtures, which the sid toolchain's sandbox sees.
    let tmp = tempfile::tempdir_in(fixtures_dir()).unwrap();
    let (t1, t2) = (
        fixtures_dir().join("locations-target-1"),
        fixtures_dir().join("locations-target-2"),
    );
    let here = tmp.path().join("here");
    qola_tests::qola_sys_dependent(&here, &workspace());
    let clone = tmp.path().join("elsewhere/workspace");
    qola_tests::copy_tracked(&workspace(), &clone);
    let there = tmp.path().join("elsewhere/dependent");
    qola_tests::qola_sys_dependent(&there, &clone);
    let new_cache = tmp.path().join("qola-cache");
    let mut env = env.to_vec();
    env.push(("QOLA_CACHE_DIR", cache.unwrap_or(&new_cache)));
    let mut summaries = Vec::new();
    for (place, dir, target, release, profile) in [
        ("first build", &here, &t1, false, "debug"),
        ("release", &here, &t1, true, "release"),
        ("another target directory", &here, &t2, false, "debug"),
        ("the workspace at another path", &there, &t2, false, "debug"),
    ] {
        cargo(dir, target, release, &env);
        let summary = last_summary(target, profile, log);
        eprintln!("{name}, {place}: {summary}");
        if place != "first build" {
            assert!(
                summary.starts_with("qola compiled 0 of "),
                "{name}, {place}: {summary}"
            );
        }
        summaries.push(summary);
    }
    summaries
}

#[test]
fn the_built_in_kernels_compile_once_for_every_profile_target_directory_and_path() {
    if !hipcc_available() {
        return;
    }
    let summaries = build_everywhere(
        "built-in kernels",
        "qola-compile-qola_mha.log",
        None,
        &[("GPU_ARCHS", Path::new("gfx90a"))],
    );
    assert!(
        summaries[0].starts_with("qola compiled 11 of 11 HIP units"),
        "{summaries:?}"
    );
}

#[test]
fn the_narrow_aiter_forward_compiles_once_for_every_profile_target_directory_and_path() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let commit = PathBuf::from(&real.commit);
    // The checkout and qola's cache the other narrow builds use: a warm machine's first build
    // may already compile nothing.
    let root = fixtures_dir().join("aiter-narrow");
    build_everywhere(
        "narrow AITER forward",
        "qola-compile-mha_fwd.log",
        Some(&fixtures_dir().join("cache")),
        &[
            ("QOLA_KERNELS", Path::new("aiter")),
            ("QOLA_AITER_URL", &real.upstream),
            ("QOLA_AITER_COMMIT", &commit),
            ("QOLA_AITER_MODULES", Path::new("libmha_fwd")),
            ("QOLA_CK_FILTER_LIBMHA_FWD", Path::new(NARROW_FWD_FILTER)),
            ("HIPCC", &hipcc),
            ("GPU_ARCHS", Path::new("gfx942")),
            ("QOLA_AITER_ROOT", &root),
        ],
    );
}
