//! Benchmark: checking and preparing the real AITER tree (9,095 tracked paths with
//! composable_kernel), one run, everything side by side:
//!
//! * `qola status` (a process), `qola prepare` on an up-to-date tree (a process), both answered by
//!   the stat snapshot;
//! * the same two on a second checkout where one file was just touched (mtime changed, content
//!   not): the snapshot no longer matches and the full fingerprint scan (libgit2 status) decides
//!   (`prepare` then renews the snapshot, so the file is touched again before every run);
//! * `git status --porcelain` (with its submodule), the baseline;
//! * a QoLA-style resync: `git reset --hard`, `git submodule update --init --recursive --force`,
//!   then `git apply --3way` (plain `git apply` when that fails) for each of our 3 patches.
//!
//! ```text
//! cargo build --release -p qola-build --features cli
//! cargo run --release -p qola-examples --example bench_prepare [-- RUNS]
//! ```
//!
//! Runs are interleaved (one of each per round) so that machine noise hits all alike; the table
//! gives medians and each one's ratio to `git status --porcelain`, plus how many work-tree files
//! each approach rewrote (mtime changed) per run.
//!
//! With `QOLA_BENCH_BASELINE_QOLA=/path/to/an/older/qola`, that binary's `status` and up-to-date
//! `prepare` on the same checkout (with a cache of its own) are timed in the same rounds, so a
//! change's cost on the no-op path is measured against the code before it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use qola_tests::{git, git_command, real_aiter};

fn qola_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/release/examples/bench_prepare -> target/release/qola
    let qola = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("qola"))
        .expect("target dir");
    if !qola.is_file() {
        eprintln!(
            "{} is missing: run `cargo build --release -p qola-build --features cli` first",
            qola.display()
        );
        std::process::exit(2);
    }
    qola
}

fn run(command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn timed(f: &mut dyn FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// mtimes of the work-tree files (not `.git`).
fn mtimes(dir: &Path) -> BTreeMap<PathBuf, SystemTime> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            if entry.file_name() == ".git" {
                continue;
            }
            let meta = entry.path().symlink_metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                out.insert(entry.path(), meta.modified().unwrap());
            }
        }
    }
    out
}

fn rewritten(before: &BTreeMap<PathBuf, SystemTime>, dir: &Path) -> usize {
    let after = mtimes(dir);
    after
        .iter()
        .filter(|(p, t)| before.get(*p) != Some(*t))
        .count()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|r| r.parse().expect("RUNS is a number"))
        .unwrap_or(30);
    let qola = qola_binary();
    let real = real_aiter()
        .expect("the AITER wheel is needed (pip download amd-aiter==0.1.7.post2.dev18)");
    let patches = Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-build/patches/aiter");
    let tmp = tempfile::tempdir().unwrap();
    let url = real.upstream.to_string_lossy().to_string();

    let baseline_qola = std::env::var_os("QOLA_BENCH_BASELINE_QOLA").map(PathBuf::from);
    // `qola <verb>` on the checkout at `at`, by `binary` with its own cache.
    let qola_by = |binary: &Path, cache: &str, at: &Path, verb: &str| {
        let mut c = Command::new(binary);
        c.env("QOLA_CACHE_DIR", tmp.path().join(cache))
            .args([verb, "--root"])
            .arg(at)
            .args(["--url", &url, "--commit", &real.commit, "--patches"])
            .arg(&patches);
        c
    };
    let qola_at = |at: &Path, verb: &str| qola_by(&qola, "cache", at, verb);
    // qola's checkout, and a second one whose snapshot a touch defeats.
    let root = tmp.path().join("qola/aiter");
    let touched = tmp.path().join("touched/aiter");
    let qola_cmd = |verb: &str| qola_at(&root, verb);
    let touched_cmd = |verb: &str| qola_at(&touched, verb);
    run(&mut qola_cmd("prepare"));
    run(&mut touched_cmd("prepare"));
    let touch = || {
        std::fs::File::options()
            .write(true)
            .open(touched.join("csrc/cpp_itfs/utils.py"))
            .unwrap()
            .set_modified(SystemTime::now())
            .unwrap();
    };

    // The baseline's checkout: a plain recursive clone with the same patches applied.
    let base = tmp.path().join("baseline/aiter");
    std::fs::create_dir_all(base.parent().unwrap()).unwrap();
    run(&mut git_command(
        tmp.path(),
        &["clone", "-q", &url, &base.to_string_lossy()],
    ));
    run(&mut git_command(
        &base,
        &["checkout", "-q", "--detach", &real.commit],
    ));
    let series = qola_tests::files_with_extension(&patches, "patch");
    let mut resync = || {
        run(&mut git_command(&base, &["reset", "-q", "--hard"]));
        run(&mut git_command(
            &base,
            &[
                "submodule",
                "update",
                "-q",
                "--init",
                "--recursive",
                "--force",
            ],
        ));
        for patch in &series {
            let p = patch.to_string_lossy();
            let three_way = git_command(&base, &["apply", "--3way", &p])
                .output()
                .unwrap();
            if !three_way.status.success() {
                run(&mut git_command(&base, &["apply", &p]));
            }
        }
    };
    resync();
    // Both trees refreshed once, as a developer's would be.
    git(&root, &["status", "--porcelain"]);
    git(&base, &["status", "--porcelain"]);

    let baseline_cmd = |verb: &str| {
        let binary = baseline_qola.as_deref().expect("a baseline binary");
        qola_by(binary, "baseline-cache", &root, verb)
    };
    if baseline_qola.is_some() {
        run(&mut baseline_cmd("prepare"));
    }
    let mut times: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut files: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..runs {
        if baseline_qola.is_some() {
            for (name, verb) in [
                ("baseline qola status", "status"),
                ("baseline qola prepare (up-to-date)", "prepare"),
            ] {
                let before = mtimes(&root);
                times
                    .entry(name)
                    .or_default()
                    .push(timed(&mut || run(&mut baseline_cmd(verb))));
                *files.entry(name).or_default() += rewritten(&before, &root);
            }
        }
        for (name, verb) in [
            ("qola status", "status"),
            ("qola prepare (up-to-date)", "prepare"),
        ] {
            let before = mtimes(&root);
            times
                .entry(name)
                .or_default()
                .push(timed(&mut || run(&mut qola_cmd(verb))));
            *files.entry(name).or_default() += rewritten(&before, &root);
        }
        for (name, verb) in [
            ("qola status, full scan (one file touched)", "status"),
            (
                "qola prepare (up-to-date), full scan (one file touched)",
                "prepare",
            ),
        ] {
            touch();
            let before = mtimes(&touched);
            times
                .entry(name)
                .or_default()
                .push(timed(&mut || run(&mut touched_cmd(verb))));
            *files.entry(name).or_default() += rewritten(&before, &touched);
        }
        times
            .entry("git status --porcelain")
            .or_default()
            .push(timed(&mut || {
                let mut git_status = Command::new("git");
                git_status
                    .arg("-C")
                    .arg(&root)
                    .args(["status", "--porcelain"]);
                run(&mut git_status)
            }));
        files.entry("git status --porcelain").or_default();
        let before = mtimes(&base);
        times
            .entry("QoLA-style resync")
            .or_default()
            .push(timed(&mut resync));
        *files.entry("QoLA-style resync").or_default() += rewritten(&before, &base);
    }
    let baseline = median(times["git status --porcelain"].clone());
    println!(
        "real AITER tree, {} runs each, interleaved; medians\n",
        runs
    );
    println!(
        "| operation | median | ratio to `git status --porcelain` | files rewritten per run |"
    );
    println!("|---|---|---|---|");
    for name in [
        "qola status",
        "qola prepare (up-to-date)",
        "baseline qola status",
        "baseline qola prepare (up-to-date)",
        "qola status, full scan (one file touched)",
        "qola prepare (up-to-date), full scan (one file touched)",
        "git status --porcelain",
        "QoLA-style resync",
    ] {
        if !times.contains_key(name) {
            continue;
        }
        let m = median(times[name].clone());
        println!(
            "| {name} | {:.1} ms | {:.2} | {} |",
            m.as_secs_f64() * 1e3,
            m.as_secs_f64() / baseline.as_secs_f64(),
            files[name] / runs
        );
    }
    if baseline_qola.is_some() {
        for (new, old) in [
            ("qola status", "baseline qola status"),
            (
                "qola prepare (up-to-date)",
                "baseline qola prepare (up-to-date)",
            ),
        ] {
            let ratio =
                median(times[new].clone()).as_secs_f64() / median(times[old].clone()).as_secs_f64();
            println!("\n{new}: this build / baseline build = {ratio:.3}");
        }
    }
}
