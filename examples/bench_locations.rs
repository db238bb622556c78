//! Benchmark: where a build can move to, and what it compiles there. For this workspace and a
//! baseline workspace (another qola, e.g. a `git worktree` of an earlier commit), in one run,
//! the same `cargo build`s of a crate depending on each one's qola-sys, sharing one qola cache
//! per side:
//!
//! 1. the first build (debug);
//! 2. `cargo build --release` right after;
//! 3. another `CARGO_TARGET_DIR`;
//! 4. the workspace copied to another path, built there.
//!
//! For each: the units qola compiled and the seconds qola's compiles took (the sum of the
//! summary lines its build scripts printed, one per library that compiled something).
//!
//! ```text
//! git worktree add /tmp/qola-baseline <commit>
//! QOLA_BENCH_BASELINE=/tmp/qola-baseline cargo run --release -p qola-examples --example bench_locations -- builtin
//! QOLA_BENCH_BASELINE=/tmp/qola-baseline cargo run --release -p qola-examples --example bench_locations -- aiter
//! ```
//!
//! `builtin`: qola-sys's built-in kernels with Debian's hipcc for gfx90a. `aiter`: the narrow
//! AITER forward (`QOLA_KERNELS=aiter`, `NARROW_FWD_FILTER`) with the sid toolchain for gfx942,
//! from the real AITER tree.

#![allow(clippy::disallowed_methods)] // a benchmark reads and sets its own environment

use std::path::{Path, PathBuf};
use std::process::Command;

use qola_tests::{NARROW_FWD_FILTER, fixtures_dir};

/// (units compiled, seconds in qola) of one `cargo build`: the sum over every summary line its
/// build scripts printed (`warning: ...: qola compiled N of M HIP units ... in Xs`: one per
/// library that compiled something; none when nothing compiled).
fn compiled_in(cargo_stderr: &str) -> (usize, f64) {
    cargo_stderr
        .lines()
        .filter_map(|l| l.split_once(": qola compiled ").map(|(_, rest)| rest))
        .map(|rest| figures(&format!("qola compiled {rest}")))
        .fold((0, 0.0), |(n, s), (dn, ds)| (n + dn, s + ds))
}

/// (units compiled, seconds in qola) from a summary.
fn figures(summary: &str) -> (usize, f64) {
    let compiled = summary
        .strip_prefix("qola compiled ")
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("units compiled");
    let seconds = summary
        .split(" in ")
        .nth(1)
        .and_then(|s| s.split('s').next())
        .and_then(|n| n.parse().ok())
        .expect("seconds");
    (compiled, seconds)
}

/// The four builds for `workspace`; returns (units compiled, seconds) of each.
fn scenarios(workspace: &Path, work: &Path, env: &[(&str, PathBuf)]) -> Vec<(usize, f64)> {
    let (t1, t2) = (
        fixtures_dir().join("bench-locations-target-1"),
        fixtures_dir().join("bench-locations-target-2"),
    );
    let here = work.join("here");
    qola_tests::qola_sys_dependent(&here, workspace);
    let clone = work.join("elsewhere/workspace");
    qola_tests::copy_tracked(workspace, &clone);
    let there = work.join("elsewhere/dependent");
    qola_tests::qola_sys_dependent(&there, &clone);
    let cache = work.join("qola-cache");
    let mut out = Vec::new();
    for (dir, target, release) in [
        (&here, &t1, false),
        (&here, &t1, true),
        (&here, &t2, false),
        (&there, &t2, false),
    ] {
        let mut command = Command::new("cargo");
        command
            .current_dir(dir)
            .args(["build", "--offline"])
            .args(release.then_some("--release"))
            .env("CARGO_TARGET_DIR", target)
            .env("QOLA_CACHE_DIR", &cache);
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().expect("run cargo");
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprint!("{stderr}");
        assert!(output.status.success());
        out.push(compiled_in(&stderr));
    }
    out
}

fn main() {
    let kernels = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "builtin".to_string());
    let baseline = PathBuf::from(
        std::env::var("QOLA_BENCH_BASELINE").expect("QOLA_BENCH_BASELINE: a baseline workspace"),
    );
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut env: Vec<(&str, PathBuf)> = Vec::new();
    match kernels.as_str() {
        "builtin" => env.push(("GPU_ARCHS", PathBuf::from("gfx90a"))),
        "aiter" => {
            let real = qola_tests::real_aiter().expect("the AITER wheel");
            let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain");
            env.extend([
                ("QOLA_KERNELS", PathBuf::from("aiter")),
                ("QOLA_AITER_URL", real.upstream.clone()),
                ("QOLA_AITER_COMMIT", PathBuf::from(&real.commit)),
                ("QOLA_AITER_MODULES", PathBuf::from("libmha_fwd")),
                (
                    "QOLA_CK_FILTER_LIBMHA_FWD",
                    PathBuf::from(NARROW_FWD_FILTER),
                ),
                ("HIPCC", hipcc),
                ("GPU_ARCHS", PathBuf::from("gfx942")),
                ("QOLA_AITER_ROOT", fixtures_dir().join("aiter-narrow")),
            ]);
        }
        other => panic!("{other}: expected builtin or aiter"),
    }
    // Under the fixtures, which the sid toolchain's sandbox sees.
    let work = tempfile::tempdir_in(fixtures_dir()).unwrap();
    let ours = scenarios(&workspace, &work.path().join("ours"), &env);
    let base = scenarios(&baseline, &work.path().join("baseline"), &env);
    println!(
        "| scenario ({kernels}) | this qola: units compiled | seconds | baseline: units compiled | seconds | ratio (this / baseline) |"
    );
    println!("|---|---|---|---|---|---|");
    for (i, name) in [
        "first build (debug)",
        "`cargo build --release` after it",
        "another `CARGO_TARGET_DIR`",
        "the workspace at another path",
    ]
    .iter()
    .enumerate()
    {
        // Nothing compiled on either side: no ratio to give.
        let ratio = if base[i].1 > 0.0 {
            format!("{:.3}", ours[i].1 / base[i].1)
        } else {
            "—".to_string()
        };
        println!(
            "| {name} | {} | {:.1} | {} | {:.1} | {ratio} |",
            ours[i].0, ours[i].1, base[i].0, base[i].1
        );
    }
}
