//! Benchmark: what `--timings` costs a build that compiles, on qola-sys's 11 built-in kernel
//! units (Debian's hipcc, gfx90a): cold builds (an empty cache each) with the report and without,
//! `QOLA_BENCH_ROUNDS` rounds (default 7) interleaved; prints the medians, their ratio, and how
//! long writing the report took (the log's `timings: … (written in N ms)`).
//!
//! ```text
//! cargo run --release -p qola-examples --example bench_timings
//! ```

use std::path::Path;
use std::time::{Duration, Instant};

use qola_build::HipBuild;
use qola_tests::BuiltinKernels;

fn build(kernels: &BuiltinKernels, dir: &Path, timings: bool) -> (Duration, Option<f64>) {
    let _ = std::fs::remove_dir_all(dir);
    let start = Instant::now();
    let report = HipBuild::new()
        .files(&kernels.sources)
        .include(&kernels.include)
        .flag("-std=c++17")
        .arch("gfx90a")
        .jobs(2)
        .cache_dir(dir.join("cache"))
        .out_dir(dir.join("out"))
        .timings(timings)
        .cargo_metadata(false)
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    let took = start.elapsed();
    assert_eq!(report.compiled(), 11);
    let log = std::fs::read_to_string(&report.log).unwrap();
    let written = log
        .lines()
        .find_map(|l| l.split("(written in ").nth(1))
        .and_then(|rest| rest.split(' ').next()?.parse().ok());
    (took, written)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("QOLA_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(7);
    let tmp = tempfile::tempdir().unwrap();
    let kernels = BuiltinKernels::of_qola_sys();
    let (mut off, mut on, mut written) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        off.push(build(&kernels, &tmp.path().join("off"), false).0);
        let (took, ms) = build(&kernels, &tmp.path().join("on"), true);
        on.push(took);
        written.extend(ms);
    }
    let (off, on) = (median(off), median(on));
    written.sort_by(f64::total_cmp);
    println!(
        "{rounds} rounds of a cold build of 11 units: without the report median {:.3} s, with it {:.3} s (ratio {:.3}); writing it took a median {:.1} ms",
        off.as_secs_f64(),
        on.as_secs_f64(),
        on.as_secs_f64() / off.as_secs_f64(),
        written[written.len() / 2]
    );
}
