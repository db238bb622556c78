//! Real `cargo build`s of small downstream crates, reading what Cargo did:
//!
//! * a build script that prepares the demo AITER tree and compiles a kernel from it reruns at
//!   most once after a build (because the preparation wrote the files it watches), compiling
//!   nothing in that rerun, and the build after is Fresh;
//! * qola-sys with `QOLA_KERNELS=aiter` stops with a clear error;
//! * qola-sys with `DOCS_RS` set compiles nothing (not even finding a compiler).
//!
//! The crates build in `target/qola-fixtures/downstream-target`, kept between test runs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{DEMO_KERNEL, fixtures_dir, hipcc_available};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Writes a crate with `build_rs`, depending on `deps` (`name = { path = ... }` lines).
fn downstream(dir: &Path, build_deps: &str, deps: &str, build_rs: &str) {
    qola_tests::write(
        dir,
        "Cargo.toml",
        format!(
            "[package]\nname = \"downstream\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n{deps}\n[build-dependencies]\n{build_deps}\n"
        ),
    );
    qola_tests::write(dir, "build.rs", build_rs);
    qola_tests::write(dir, "src/lib.rs", "//! A crate built by qola's tests.\n");
}

/// `cargo build -v` in `dir` with `env`; Cargo's fingerprint log goes to stderr too.
fn cargo(dir: &Path, verb: &str, env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(dir)
        .args([verb, "-v", "--offline"])
        .env("CARGO_TARGET_DIR", fixtures_dir().join("downstream-target"))
        .env("CARGO_LOG", "cargo::core::compiler::fingerprint=info")
        .env("CARGO_TERM_COLOR", "never");
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("QOLA_") || name == "CARGO_NET_OFFLINE" {
            command.env_remove(name);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run cargo")
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// How many times the downstream crate's build script ran.
fn script_runs(log: &str) -> usize {
    log.lines()
        .filter(|l| {
            l.contains("Running")
                && l.contains("/build/downstream-")
                && l.contains("build-script-build")
        })
        .count()
}

const PREPARE_AND_COMPILE: &str = r#"fn main() {
    let aiter = qola_build::prepare_aiter().unwrap_or_else(|e| panic!("{e}"));
    let root = aiter.root;
    qola_build::HipBuild::new()
        .file(root.join("KERNEL"))
        .include(root.join("csrc/include"))
        .include(root.join("3rdparty/composable_kernel/include"))
        .export("qola_demo_scale")
        .try_compile("demo")
        .unwrap_or_else(|e| panic!("{e}"));
}
"#;

#[test]
fn after_a_build_the_script_reruns_at_most_once_compiling_nothing_then_is_fresh() {
    if !hipcc_available() {
        return;
    }
    let s = common::setup();
    let krate = s.tmp.path().join("downstream");
    downstream(
        &krate,
        &format!(
            "qola-build = {{ path = \"{}\" }}",
            workspace().join("qola-build").display()
        ),
        "",
        &PREPARE_AND_COMPILE.replace("KERNEL", DEMO_KERNEL),
    );
    let env: Vec<(&str, PathBuf)> = vec![
        ("QOLA_AITER_URL", s.demo.aiter.clone()),
        ("QOLA_PATCHES_DIR", s.demo.patches.clone()),
        ("QOLA_AITER_ROOT", s.root.clone()),
        ("QOLA_CACHE_DIR", s.cache()),
        ("QOLA_AITER_COMMIT", PathBuf::from(&s.demo.commit)),
    ];
    let env: Vec<(&str, &Path)> = env.iter().map(|(n, v)| (*n, v.as_path())).collect();

    let first = cargo(&krate, "build", &env);
    let log = text(&first);
    assert!(first.status.success(), "{log}");
    assert_eq!(script_runs(&log), 1, "{log}");
    assert!(log.contains("qola compiled 1 of 1 HIP units"), "{log}");

    let second = cargo(&krate, "build", &env);
    let log = text(&second);
    assert!(second.status.success(), "{log}");
    let reruns = script_runs(&log);
    eprintln!("second build: the build script ran {reruns} time(s)");
    assert!(reruns <= 1, "{log}");
    assert!(
        !log.contains("qola compiled"),
        "the rerun compiles nothing: {log}"
    );

    let third = cargo(&krate, "build", &env);
    let log = text(&third);
    assert!(third.status.success(), "{log}");
    assert_eq!(script_runs(&log), 0, "{log}");
    assert!(log.contains("Fresh downstream"), "{log}");
}

fn qola_sys_dependent(dir: &Path) {
    downstream(
        dir,
        "",
        &format!(
            "qola-sys = {{ path = \"{}\" }}",
            workspace().join("qola-sys").display()
        ),
        "fn main() {}\n",
    );
}

#[test]
fn qola_sys_with_aiter_kernels_stops_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    qola_sys_dependent(tmp.path());
    let out = cargo(tmp.path(), "build", &[("QOLA_KERNELS", Path::new("aiter"))]);
    let log = text(&out);
    assert!(!out.status.success(), "{log}");
    assert!(
        log.contains("QOLA_KERNELS=aiter") && log.contains("builtin"),
        "{log}"
    );
}

#[test]
fn qola_sys_on_docs_rs_compiles_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    qola_sys_dependent(tmp.path());
    let out = cargo(
        tmp.path(),
        "build",
        &[
            ("DOCS_RS", Path::new("1")),
            ("HIPCC", Path::new("/nonexistent/hipcc")),
        ],
    );
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    assert!(!log.contains("qola compiled"), "{log}");
}

/// The narrow AITER build: 4 CK forward instances (bf16, head dim 128, batch mode, LSE, with
/// and without the causal mask) plus the generated APIs and qola's wrapper.
const NARROW_FILTER: &str =
    "fmha_fwd_d128_bf16_batch_*_qr_async_vr_ps*ddv_nlogits_nbias_*mask_lse_ndropout_*";

#[test]
fn qola_sys_builds_a_narrow_aiter_libmha_fwd_for_gfx942_exporting_only_the_c_api() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    qola_sys_dependent(tmp.path());
    let fixtures = fixtures_dir();
    let commit = PathBuf::from(&real.commit);
    let env: Vec<(&str, &Path)> = vec![
        ("QOLA_KERNELS", Path::new("aiter")),
        ("QOLA_AITER_URL", &real.upstream),
        ("QOLA_AITER_COMMIT", &commit),
        ("QOLA_AITER_MODULES", Path::new("libmha_fwd")),
        ("QOLA_CK_FILTER", Path::new(NARROW_FILTER)),
        ("HIPCC", &hipcc),
        ("GPU_ARCHS", Path::new("gfx942")),
    ];
    // The checkout and the object cache persist between runs (a warm machine compiles nothing).
    let root = fixtures.join("aiter-narrow");
    let cache = fixtures.join("cache");
    let mut env = env;
    env.push(("QOLA_AITER_ROOT", &root));
    env.push(("QOLA_CACHE_DIR", &cache));

    let first = cargo(tmp.path(), "build", &env);
    let log = text(&first);
    assert!(first.status.success(), "{log}");
    let library = newest_library(
        &fixtures.join("downstream-target/debug/build"),
        "libmha_fwd.a",
    );
    let readelf = Command::new("readelf")
        .args(["-sW"])
        .arg(&library)
        .output()
        .unwrap();
    let symbols = String::from_utf8_lossy(&readelf.stdout);
    let exported: Vec<&str> = symbols
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[4] == "GLOBAL" && f[5] == "DEFAULT" && f[6] != "UND").then(|| f[7])
        })
        .collect();
    assert_eq!(exported, ["qola_mha_fwd"], "{}", library.display());

    let second = cargo(tmp.path(), "build", &env);
    let log = text(&second);
    assert!(second.status.success(), "{log}");
    assert!(
        !log.contains("qola compiled"),
        "a second build compiles nothing: {log}"
    );
}

/// The most recently written file named `name` under `dir`.
fn newest_library(dir: &Path, name: &str) -> PathBuf {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("out").join(name))
        .filter(|p| p.is_file())
        .map(|p| (p.metadata().unwrap().modified().unwrap(), p))
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no {name} under {}", dir.display()))
        .1
}
