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
//! paths with byte-identical objects in `compile.rs`.) The first target directory is the one
//! the tests' other nested builds share (`qola_tests::nested_cargo`), so registry crates compile
//! once for all of them.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{NARROW_FWD_FILTER, TWO_INSTANCE_FWD_FILTER, fixtures_dir, hipcc_available};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `cargo build` of `dir` into `target` (`release`: the release profile) with `env`, as the
/// tests' other nested builds (`qola_tests::nested_cargo_in`).
fn cargo(dir: &Path, target: &Path, release: bool, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(dir)
        .args([
            "build",
            "--offline",
            "--message-format=json-render-diagnostics",
        ])
        .args(release.then_some("--release"))
        // The claim is that another profile compiles no kernel, whatever its Rust options:
        // optimizing qola's own Rust less (still another OPT_LEVEL than debug's) halves the
        // release tree's cost.
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
        .env("CARGO_TERM_COLOR", "never");
    qola_tests::without_caller_env(&mut command, &[], &["CARGO_NET_OFFLINE"]);
    qola_tests::nested_cargo_in(&mut command, target);
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

/// The summary in the log named `log` that the qola-sys build `out` wrote: what that build of
/// the library did.
fn last_summary(out: &Output, log: &str) -> String {
    let path = qola_tests::build_script_out_dir(&out.stdout, "qola-sys").join(log);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("{}: {text}", path.display()))
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
        qola_tests::nested_target(),
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
    for (place, dir, target, release) in [
        ("first build", &here, &t1, false),
        ("release", &here, &t1, true),
        ("another target directory", &here, &t2, false),
        ("the workspace at another path", &there, &t2, false),
    ] {
        let out = cargo(dir, target, release, &env);
        let summary = last_summary(&out, log);
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

/// One object per content, whatever the front door: the narrow AITER forward (two of its
/// instances, `TWO_INSTANCE_FWD_FILTER`: still a batch, and every kind of unit) of one manifest,
/// tree, compiler and architecture built through qola-sys's build script (a Rust binding's) and
/// through `qola build` (what TE's CMake, its Python and ck-jit run), in both orders, each from
/// an empty qola cache (the claim counts compiles, so it cannot start warm): the second door
/// compiles its own API wrapper alone (qola-sys's C wrapper and QoLA's C++ wrapper are different
/// sources), taking every other unit's object from the first.
#[test]
fn the_narrow_aiter_forward_compiles_once_whatever_the_front_door() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir_in(fixtures_dir()).unwrap();
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .narrow_forward()
        .write(tmp.path().join("te.toml"));
    let root = fixtures_dir().join("aiter-narrow");
    let dependent = tmp.path().join("binding");
    qola_tests::qola_sys_dependent(&dependent, &workspace());
    let target = qola_tests::nested_target();
    let through_qola_sys = |cache: &Path| {
        let out = cargo(
            &dependent,
            &target,
            false,
            &[
                ("QOLA_KERNELS", Path::new("aiter")),
                ("QOLA_MANIFEST", &manifest),
                ("QOLA_AITER_MODULES", Path::new("libmha_fwd")),
                (
                    "QOLA_CK_FILTER_LIBMHA_FWD",
                    Path::new(TWO_INSTANCE_FWD_FILTER),
                ),
                ("HIPCC", &hipcc),
                ("QOLA_AITER_ROOT", &root),
                ("QOLA_CACHE_DIR", cache),
            ],
        );
        let summary = last_summary(&out, "qola-compile-mha_fwd.log");
        let compiled: usize = summary
            .strip_prefix("qola compiled ")
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{summary}"));
        (compiled, summary)
    };
    let through_qola_build = |cache: &Path, out: &Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_qola"));
        qola_tests::without_caller_env(&mut command, &[], &["GPU_ARCHS"]);
        let said = qola_tests::run_ok(
            command
                .args(["build", "--skip-checkout", "-m"])
                .arg(&manifest)
                .arg("-a")
                .arg(&root)
                .arg("-o")
                .arg(out)
                .env("HIPCC", &hipcc)
                .env("QOLA_CACHE_DIR", cache)
                .env("QOLA_CK_FILTER_LIBMHA_FWD", TWO_INSTANCE_FWD_FILTER),
        );
        // `qola build: 1/1 modules built, 0 failed; 3 of 4 units compiled; ...`
        let compiled: usize = said
            .lines()
            .filter_map(|l| l.strip_prefix("qola build: "))
            .find_map(|l| l.split("; ").find(|part| part.ends_with(" units compiled")))
            .and_then(|part| part.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{said}"));
        (compiled, said)
    };
    // Each order from an empty cache of its own, not the fixtures' warm one: the claim is what
    // the second door compiles after the first compiled every unit, which a warm cache hides.
    // qola-sys's build script first, then `qola build`.
    let cache = tmp.path().join("cache-1");
    let (first, summary) = through_qola_sys(&cache);
    assert!(first > 1, "{summary}");
    let (second, said) = through_qola_build(&cache, &tmp.path().join("out-1"));
    assert_eq!(second, 1, "qola build compiles its wrapper alone: {said}");
    // `qola build` first, then qola-sys's build script.
    let cache = tmp.path().join("cache-2");
    let (first, said) = through_qola_build(&cache, &tmp.path().join("out-2"));
    assert!(first > 1, "{said}");
    let (second, summary) = through_qola_sys(&cache);
    assert_eq!(second, 1, "qola-sys compiles its wrapper alone: {summary}");
}
