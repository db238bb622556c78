//! Benchmark: what reading qola's object cache costs a build that compiles nothing, on qola-sys's
//! 11 built-in kernel units (Debian's hipcc, gfx90a): a **no-op** build (the library is up to
//! date: nothing is linked, nothing checked) and an **all-hits** build (a new output directory
//! with a warm cache: every object is taken from the cache, checked, and linked). After one cold
//! build, `QOLA_BENCH_ROUNDS` rounds (default 15) of each, interleaved; prints the medians.
//!
//! ```text
//! cargo run --release -p qola-examples --example bench_cache
//! ```
//!
//! Run it in two worktrees one after the other (this commit and the one before a change) to
//! compare them in one run: it uses only `HipBuild`'s public builder.

use std::path::Path;
use std::time::{Duration, Instant};

use qola_build::HipBuild;
use qola_tests::BuiltinKernels;

fn build(kernels: &BuiltinKernels, cache: &Path, out: &Path) -> (usize, Duration) {
    let start = Instant::now();
    let report = HipBuild::new()
        .files(&kernels.sources)
        .include(&kernels.include)
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .arch(&std::env::var("GPU_ARCHS").unwrap_or_else(|_| "gfx90a".to_string()))
        .export("qola_mha_fwd")
        .jobs(2)
        .cache_dir(cache)
        .out_dir(out)
        .cargo_metadata(false)
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    (report.compiled(), start.elapsed())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("QOLA_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15);
    let tmp = tempfile::tempdir().unwrap();
    let kernels = BuiltinKernels::of_qola_sys();
    let cache = tmp.path().join("cache");
    let (cold, cold_time) = build(&kernels, &cache, &tmp.path().join("out-0"));
    let (mut noop, mut all_hits) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let (compiled, time) = build(&kernels, &cache, &tmp.path().join("out-0"));
        assert_eq!(compiled, 0);
        noop.push(time);
        let (compiled, time) = build(&kernels, &cache, &tmp.path().join(format!("out-{round}")));
        assert_eq!(compiled, 0);
        all_hits.push(time);
    }
    println!(
        "cold build: {cold} units in {:.2} s; {rounds} rounds: no-op median {:.1} ms, all-hits (new output directory) median {:.1} ms",
        cold_time.as_secs_f64(),
        median(noop).as_secs_f64() * 1e3,
        median(all_hits).as_secs_f64() * 1e3
    );
}
