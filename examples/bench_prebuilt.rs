//! Benchmark: the time to a ready narrow AITER library (TE's `libmha_fwd`, `NARROW_FWD_FILTER`,
//! gfx942, the sid toolchain) on a fresh machine, in one run, each machine with its own empty
//! checkout directory, qola cache and output directory:
//!
//! - **cold**: nothing cached. It also fills ccache's HTTP remote storage (ccache as qola's
//!   launcher) and publishes the library (`--publish`), both to nginx on loopback;
//! - **qola's cache copied**: the cold machine's qola cache copied over (clone, generators, link);
//! - **ccache over HTTP**: an empty local ccache reading the cold machine's remote storage;
//! - **prebuilt**: `--prebuilt` from nginx (no clone, no generator, no compile), with the bytes
//!   fetched.
//!
//! ```text
//! apt-get install -y nginx-light ccache
//! tools/sid-hipcc-setup
//! cargo run --release -p qola-examples --example bench_prebuilt
//! ```
//!
//! Works in `target/qola-fixtures/bench-prebuilt`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use qola_build::aiter::prebuilt::StoreOptions;
use qola_build::{OutputBuild, Prepare};
use qola_tests::{HttpCache, NARROW_FWD_FILTER};

/// How one machine builds.
struct Machine<'a> {
    name: &'a str,
    /// ccache's remote storage, with ccache as the launcher.
    ccache_remote: Option<String>,
    prebuilt: Option<&'a str>,
    publish: Option<&'a str>,
}

/// What a machine's build took.
struct Took {
    seconds: f64,
    compiled: usize,
    units: usize,
    fetched: u64,
    cloned: bool,
}

fn build(dir: &Path, manifest: &Path, m: &Machine) -> Took {
    let home = dir.join(m.name);
    // SAFETY: single-threaded here; the library reads these through its environment helper.
    unsafe {
        match &m.ccache_remote {
            Some(remote) => {
                std::env::set_var("QOLA_COMPILER_LAUNCHER", "ccache");
                std::env::set_var("CCACHE_DIR", home.join("ccache"));
                std::env::set_var("CCACHE_REMOTE_STORAGE", remote);
            }
            None => {
                for name in [
                    "QOLA_COMPILER_LAUNCHER",
                    "CCACHE_DIR",
                    "CCACHE_REMOTE_STORAGE",
                ] {
                    std::env::remove_var(name);
                }
            }
        }
    }
    let mut prepare = Prepare::new();
    prepare
        .manifest(manifest)
        .root(home.join("aiter"))
        .cache_dir(home.join("cache"));
    let mut build = OutputBuild::new(prepare, home.join("out"));
    let mut stores = StoreOptions::new();
    if let Some(url) = m.prebuilt {
        stores.fetch(url);
    }
    if let Some(url) = m.publish {
        stores.publish(url);
    }
    build.prebuilt_stores(stores);
    let start = Instant::now();
    let outcome = build
        .try_build()
        .unwrap_or_else(|e| panic!("{}: {e}", m.name));
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(outcome.record.summary.failed, 0, "{}", m.name);
    Took {
        seconds,
        compiled: outcome.compiled,
        units: outcome.units,
        fetched: outcome.prebuilt.iter().map(|(_, b)| b).sum(),
        cloned: home.join("aiter").exists(),
    }
}

/// Copies the files under `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

fn main() {
    let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain: run tools/sid-hipcc-setup");
    let real = qola_tests::real_aiter().expect("the amd-aiter wheel (see README)");
    let nginx = qola_tests::tool("nginx", "nginx-light").expect("nginx");
    qola_tests::tool("ccache", "ccache").expect("ccache");
    let dir: PathBuf = qola_tests::fixtures_dir().join("bench-prebuilt");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // SAFETY: single-threaded here.
    unsafe {
        std::env::set_var("HIPCC", &hipcc);
        std::env::set_var("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
        std::env::remove_var("GPU_ARCHS");
        std::env::remove_var("QOLA_CACHE_DIR");
    }
    let server = HttpCache::start(&nginx, &dir.join("nginx"));
    let store = format!("http://127.0.0.1:{}/cache/prebuilt", server.port);
    let remote = format!("http://127.0.0.1:{}/cache/ccache", server.port);
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .narrow_forward()
        .write(dir.join("te.toml"));

    let cold = build(
        &dir,
        &manifest,
        &Machine {
            name: "cold",
            ccache_remote: Some(remote.clone()),
            prebuilt: None,
            publish: Some(&store),
        },
    );
    copy_dir(&dir.join("cold/cache"), &dir.join("copied/cache"));
    let machines = [
        Machine {
            name: "copied",
            ccache_remote: None,
            prebuilt: None,
            publish: None,
        },
        Machine {
            name: "ccache-http",
            ccache_remote: Some(remote.clone()),
            prebuilt: None,
            publish: None,
        },
        Machine {
            name: "prebuilt",
            ccache_remote: None,
            prebuilt: Some(&store),
            publish: None,
        },
    ];
    let rows: Vec<(&str, Took)> = std::iter::once(("cold", cold))
        .chain(machines.iter().map(|m| (m.name, build(&dir, &manifest, m))))
        .collect();
    let cold_seconds = rows[0].1.seconds;
    println!(
        "| fresh machine | AITER cloned | units compiled | bytes fetched (prebuilt) | wall time | ratio to cold |\n|---|---|---|---|---|---|"
    );
    for (name, t) in &rows {
        println!(
            "| {name} | {} | {} of {} | {} | {:.2} s | {:.4} |",
            if t.cloned { "yes" } else { "no" },
            t.compiled,
            t.units,
            t.fetched,
            t.seconds,
            t.seconds / cold_seconds
        );
    }
}
