//! Benchmark: a build a second machine gets for free. Machine A builds with empty caches and
//! fills a shared Redis through ccache (qola's compiler launcher); machine B, at another path
//! with its own empty local ccache and qola cache, builds the same units. One run, side by side:
//!
//! * qola-sys's 10 built-in kernel units, Debian's hipcc for gfx90a;
//! * the narrow real-AITER `libmha_fwd` + `libmha_bwd` (16 units) with the sid toolchain for
//!   gfx942 (`tools/sid-hipcc-setup`), each machine with its own prepared checkout.
//!
//! ```text
//! apt-get install -y redis-server ccache
//! cargo run --release -p qola-examples --example bench_team_cache
//! ```
//!
//! ccache settings: the ones docs/team-builds.md gives teams, `compiler_check = %compiler%
//! --version` and Redis as `remote_storage`; no `base_dir` or `hash_dir` (qola sets them). Works
//! in `target/qola-fixtures/bench-team` (the checkouts are kept).

mod common;

use std::path::Path;
use std::time::Duration;

use qola_build::{CompileReport, HipBuild, LauncherHits};
use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER, RedisServer};

const JOBS: usize = 2;

/// Points this process's environment (which qola's compiles and `ccache --print-stats`
/// inherit) at `machine`'s caches and the shared Redis, and makes `machine` the current
/// directory.
fn become_machine(machine: &Path, redis: &RedisServer) {
    let _ = std::fs::remove_dir_all(machine.join("ccache"));
    let _ = std::fs::remove_dir_all(machine.join("qola-cache"));
    std::fs::create_dir_all(machine).unwrap();
    std::env::set_current_dir(machine).unwrap();
    let vars = [
        ("CCACHE_DIR", machine.join("ccache").display().to_string()),
        ("CCACHE_REMOTE_STORAGE", redis.url()),
        ("CCACHE_COMPILERCHECK", "%compiler% --version".to_string()),
    ];
    for (name, value) in vars {
        // SAFETY: called between builds, while this process runs no other thread.
        unsafe { std::env::set_var(name, value) };
    }
}

/// Units compiled, launcher hits and wall time of `reports`.
fn totals(reports: &[CompileReport]) -> (usize, LauncherHits, Duration) {
    let mut hits = LauncherHits::default();
    let (mut compiled, mut elapsed) = (0, Duration::ZERO);
    for r in reports {
        compiled += r.compiled();
        elapsed += r.elapsed;
        if let Some(h) = r.launcher_hits {
            hits.hits += h.hits;
            hits.remote_hits += h.remote_hits;
            hits.misses += h.misses;
        }
    }
    (compiled, hits, elapsed)
}

/// qola-sys's built-in kernels, copied into `machine`, built through ccache.
fn builtin(machine: &Path, arch: &str) -> Vec<CompileReport> {
    let kernels = machine.join("kernels");
    qola_tests::copy_tracked(&common::workspace().join("qola-sys/kernels"), &kernels);
    let sources = qola_tests::files_with_extension(&kernels, "hip");
    let report = HipBuild::new()
        .files(&sources)
        .include(kernels.join("include"))
        .root("kernels", &kernels)
        .flag("-std=c++17")
        .flag("-fvisibility=hidden")
        .arch(arch)
        .jobs(JOBS)
        .launcher("ccache")
        .cache_dir(machine.join("qola-cache"))
        .out_dir(machine.join("out-builtin"))
        .cargo_metadata(false)
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    vec![report]
}

/// The narrow AITER forward and backward from `machine`'s own checkout, through ccache.
fn narrow_aiter(machine: &Path, hipcc: &Path) -> Vec<CompileReport> {
    let root = machine.join("aiter");
    common::prepare_real(&root, &machine.join("prepare-cache"));
    let manifest = common::manifest();
    [
        ("libmha_fwd", NARROW_FWD_FILTER),
        ("libmha_bwd", NARROW_BWD_FILTER),
    ]
    .map(|(name, filter)| {
        let m = common::aiter_module(
            &root,
            &common::module(&manifest, name),
            "gfx942",
            Some(filter),
            &machine.join("gen"),
            &machine.join("qola-cache"),
            hipcc,
        );
        m.hip_build()
            .arch("gfx942")
            .jobs(JOBS)
            .launcher("ccache")
            .cache_dir(machine.join("qola-cache"))
            .out_dir(machine.join("out").join(name))
            .cargo_metadata(false)
            .try_compile(name)
            .unwrap_or_else(|e| panic!("{e}"))
    })
    .into()
}

fn main() {
    qola_tests::tool("ccache", "ccache").expect("ccache");
    let redis_server = qola_tests::tool("redis-server", "redis-server").expect("redis-server");
    let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain: run tools/sid-hipcc-setup");
    let arch = std::env::var("GPU_ARCHS").unwrap_or_else(|_| "gfx90a".to_string());
    let work = qola_tests::fixtures_dir().join("bench-team");
    std::fs::create_dir_all(&work).unwrap();
    println!(
        "| build | machine A: compiled, ccache hits (remote), time | machine B: compiled, ccache hits (remote), time | time ratio B/A |"
    );
    println!("|---|---|---|---|");
    type Build<'a> = Box<dyn Fn(&Path) -> Vec<CompileReport> + 'a>;
    let builds: [(&str, &str, Build); 2] = [
        (
            "qola-sys built-in kernels (Debian hipcc)",
            "builtin",
            Box::new(|m: &Path| builtin(m, &arch)),
        ),
        (
            "narrow AITER libmha_fwd + libmha_bwd (sid toolchain, gfx942)",
            "aiter",
            Box::new(|m: &Path| narrow_aiter(m, &hipcc)),
        ),
    ];
    for (label, dir, build) in builds {
        // A fresh Redis per build: A starts from nothing anywhere.
        let base = work.join(dir);
        let redis = RedisServer::start(&redis_server, &base.join("redis"));
        let mut row = Vec::new();
        for machine in ["A", "B"] {
            let machine = base.join(machine);
            become_machine(&machine, &redis);
            let (compiled, hits, elapsed) = totals(&build(&machine));
            row.push((compiled, hits, elapsed));
        }
        let cell = |(c, h, t): (usize, LauncherHits, Duration)| {
            format!(
                "{c}, {} ({}), {:.1} s",
                h.hits,
                h.remote_hits,
                t.as_secs_f64()
            )
        };
        println!(
            "| {label} | {} | {} | {:.3} |",
            cell(row[0]),
            cell(row[1]),
            row[1].2.as_secs_f64() / row[0].2.as_secs_f64()
        );
    }
}
