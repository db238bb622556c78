//! Benchmark: qola's incremental HIP build against a plain `cc::Build` of the same files (which
//! compiles everything every time), on qola-sys's 10 built-in kernel units, one run, side by
//! side, for: a full build, a no-op rebuild, one source edited, one source touched (mtime only),
//! the shared header edited, and a resync that rewrites every file with identical content.
//!
//! ```text
//! cargo run --release -p qola-examples --example bench_compile
//! ```
//!
//! Both sides get the same compiler, flags, architecture (`GPU_ARCHS`, default gfx90a) and
//! parallelism (2 jobs; `cc` with its `parallel` feature).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use qola_build::HipBuild;

const FLAGS: [&str; 2] = ["-std=c++17", "-fvisibility=hidden"];
const JOBS: usize = 2;

fn sources(dir: &Path) -> Vec<PathBuf> {
    qola_tests::files_with_extension(dir, "hip")
}

/// qola: returns (units compiled, wall time).
fn qola(dir: &Path, work: &Path, arch: &str) -> (usize, Duration) {
    let start = Instant::now();
    let report = HipBuild::new()
        .files(sources(dir))
        .include(dir.join("include"))
        .flag(FLAGS[0])
        .flag(FLAGS[1])
        .arch(arch)
        .export("qola_mha_fwd")
        .export("qola_mha_bwd")
        .export("qola_mha_bwd_workspace_size")
        .jobs(JOBS)
        .cache_dir(work.join("qola-cache"))
        .out_dir(work.join("qola-out"))
        .cargo_metadata(false)
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    (report.compiled(), start.elapsed())
}

/// A plain cc::Build of the same files: (units compiled, wall time).
fn plain_cc(dir: &Path, work: &Path, arch: &str, hipcc: &Path) -> (usize, Duration) {
    let files = sources(dir);
    let start = Instant::now();
    let mut build = cc::Build::new();
    build
        .compiler(hipcc)
        .no_default_flags(true)
        .target("x86_64-unknown-linux-gnu")
        .host("x86_64-unknown-linux-gnu")
        .opt_level(3)
        .debug(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .cargo_output(false)
        .out_dir(work.join("cc-out"))
        .flag("-x")
        .flag("hip")
        .flag("-fPIC")
        .flag("-O3")
        .flag(format!("--offload-arch={arch}"))
        .include(dir.join("include"))
        .files(&files);
    for flag in FLAGS {
        build.flag(flag);
    }
    build
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    (files.len(), start.elapsed())
}

fn append(path: &Path, text: &str) {
    let mut content = std::fs::read_to_string(path).unwrap();
    content.push_str(text);
    std::fs::write(path, content).unwrap();
}

fn main() {
    // cc's parallel runner sizes itself from NUM_JOBS outside Cargo.
    // SAFETY: set before any other thread exists.
    unsafe { std::env::set_var("NUM_JOBS", JOBS.to_string()) };
    let arch = std::env::var("GPU_ARCHS").unwrap_or_else(|_| "gfx90a".to_string());
    let hipcc = std::env::var_os("HIPCC")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("hipcc"))
                .find(|p| p.is_file())
        })
        .expect("hipcc (apt-get install hipcc libamdhip64-dev rocm-device-libs)");
    let tmp = tempfile::tempdir().unwrap();
    let kernels = qola_tests::BuiltinKernels::of_qola_sys()
        .copy_to(&tmp.path().join("kernels"))
        .dir;
    let work = tmp.path();
    type Change<'a> = Box<dyn Fn() + 'a>;
    let scenarios: Vec<(&str, Change)> = vec![
        ("full build (empty cache)", Box::new(|| {})),
        ("no-op rebuild", Box::new(|| {})),
        (
            "edit one source",
            Box::new(|| append(&kernels.join("fwd_fp16.hip"), "// edited\n")),
        ),
        (
            "touch one source (mtime only)",
            Box::new(|| {
                std::fs::File::options()
                    .write(true)
                    .open(kernels.join("fwd_bf16.hip"))
                    .unwrap()
                    .set_modified(std::time::SystemTime::now())
                    .unwrap();
            }),
        ),
        (
            "edit the shared header",
            Box::new(|| append(&kernels.join("include/qola_mha_impl.hpp"), "// edited\n")),
        ),
        (
            "resync: every file rewritten, same content",
            Box::new(|| {
                for path in sources(&kernels).into_iter().chain([
                    kernels.join("include/qola_mha.h"),
                    kernels.join("include/qola_mha_impl.hpp"),
                ]) {
                    let bytes = std::fs::read(&path).unwrap();
                    std::fs::remove_file(&path).unwrap();
                    std::fs::write(&path, bytes).unwrap();
                }
            }),
        ),
    ];
    println!("qola-sys built-in kernels (11 units), {arch}, {JOBS} jobs\n");
    println!("| change | qola units | cc units | qola time | cc time | time ratio qola/cc |");
    println!("|---|---|---|---|---|---|");
    for (name, change) in scenarios {
        change();
        let (qu, qt) = qola(&kernels, work, &arch);
        let (cu, ct) = plain_cc(&kernels, work, &arch, &hipcc);
        println!(
            "| {name} | {qu} | {cu} | {:.2} s | {:.2} s | {:.3} |",
            qt.as_secs_f64(),
            ct.as_secs_f64(),
            qt.as_secs_f64() / ct.as_secs_f64()
        );
    }
}
