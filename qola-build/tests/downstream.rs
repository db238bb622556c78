//! Real `cargo build`s of small downstream crates, reading what Cargo did:
//!
//! * a build script that prepares the demo AITER tree and compiles a kernel from it reruns at
//!   most once after a build (because the preparation wrote the files it watches), compiling
//!   nothing in that rerun, and the build after is Fresh;
//! * qola-sys with `QOLA_KERNELS=aiter` and a module it cannot build stops with a clear error
//!   before preparing anything;
//! * qola-sys builds narrow AITER `libmha_fwd` and `libmha_bwd` for gfx942 that export only the
//!   C API, the forward linking into a program that runs; the next build compiles nothing; this
//!   one and a build of the built-in kernels use the packaged crates (`cargo package`), so
//!   nothing from the repository but what the `.crate` files hold;
//! * qola-sys builds TE's a4w4 GEMMs for gfx950 exporting only `qola_gemm.h`'s functions, and a
//!   Rust program calling their checks links and runs;
//! * qola-sys with `DOCS_RS` set compiles nothing (not even finding a compiler).
//!
//! The crates build as the tests' other nested builds (`qola_tests::nested_cargo_in`) but in a
//! target directory of their own, `target/qola-fixtures/downstream-target`, kept between test
//! runs: their build scripts compile AITER's kernels for minutes, during which cargo's lock on
//! a shared directory would hold `locations.rs`'s builds, which run at the same time. What a
//! build made is read from its own JSON messages.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{
    DEMO_KERNEL, NARROW_BWD_FILTER, NARROW_FWD_FILTER, NARROW_GEMM_FILTER, fixtures_dir,
    hipcc_available,
};

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

/// `cargo build -v` in `dir` with `env`; Cargo's fingerprint log goes to stderr too, its JSON
/// messages to stdout.
fn cargo(dir: &Path, verb: &str, env: &[(&str, &Path)]) -> Output {
    cargo_args(dir, &[verb], env)
}

/// [`cargo`] with `args` (the verb first).
fn cargo_args(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(dir)
        .args(args)
        .args([
            "-v",
            "--offline",
            "--message-format=json-render-diagnostics",
        ])
        .env("CARGO_LOG", "cargo::core::compiler::fingerprint=info")
        .env("CARGO_TERM_COLOR", "never");
    qola_tests::without_caller_env(&mut command, &[], &["CARGO_NET_OFFLINE"]);
    qola_tests::nested_cargo_in(&mut command, &fixtures_dir().join("downstream-target"));
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
    package_script_runs(log, "downstream")
}

/// How many times `package`'s build script ran.
fn package_script_runs(log: &str, package: &str) -> usize {
    log.lines()
        .filter(|l| {
            l.contains("Running")
                && l.contains(&format!("/build/{package}-"))
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

/// qola-build and qola-sys as `cargo package` makes them (the `.crate` files, unpacked), made
/// once per test process under `target/qola-fixtures/packaged`.
fn packaged_crates() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let target = fixtures_dir().join("package-target");
        let out = Command::new(env!("CARGO"))
            .current_dir(workspace())
            .args([
                "package",
                "-p",
                "qola-build",
                "-p",
                "qola-sys",
                "--no-verify",
            ])
            .args(["--allow-dirty", "--offline", "--target-dir"])
            .arg(&target)
            .output()
            .expect("run cargo package");
        assert!(out.status.success(), "{}", text(&out));
        let dir = fixtures_dir().join(format!("packaged-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["qola-build-0.1.0", "qola-sys-0.1.0"] {
            let status = Command::new("tar")
                .current_dir(&dir)
                .arg("xzf")
                .arg(target.join(format!("package/{name}.crate")))
                .status()
                .unwrap();
            assert!(status.success(), "unpack {name}.crate");
        }
        dir
    })
}

/// A crate depending on the packaged qola-sys, whose packaged build-dependency qola-build
/// (`version = "0.1.0"` in its manifest) is patched to the packaged one: nothing from the
/// repository but the two `.crate` files' contents.
fn packaged_qola_sys_dependent(dir: &Path) {
    let crates = packaged_crates();
    downstream(
        dir,
        "",
        &format!(
            "qola-sys = {{ path = \"{}\" }}\n\n[patch.crates-io]\nqola-build = {{ path = \"{}\" }}",
            crates.join("qola-sys-0.1.0").display(),
            crates.join("qola-build-0.1.0").display()
        ),
        "fn main() {}\n",
    );
}

#[test]
fn the_packaged_qola_sys_builds_its_built_in_kernels() {
    if !hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    packaged_qola_sys_dependent(tmp.path());
    let cache = tmp.path().join("cache");
    let out = cargo(
        tmp.path(),
        "build",
        &[
            ("GPU_ARCHS", Path::new("gfx90a")),
            ("QOLA_CACHE_DIR", &cache),
        ],
    );
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("packaged-"),
        "built from the packaged crates: {log}"
    );
    assert!(log.contains("qola compiled 11 of 11 HIP units"), "{log}");
}

#[test]
fn qola_sys_stops_before_preparing_when_an_aiter_module_cannot_be_built() {
    let tmp = tempfile::tempdir().unwrap();
    qola_sys_dependent(tmp.path());
    // A manifest with modules makes `aiter` the default (no QOLA_KERNELS here). No AITER source
    // is reachable: had preparation run first, it would fail on the fetch instead.
    let manifest = tmp.path().join("aiter.toml");
    qola_tests::ManifestText::new("05a0d1f", tmp.path().join("no-such-upstream"))
        .module("libmha_fwd", "")
        .module("module_rmsnorm", "")
        .write(&manifest);
    for (modules, expected) in [
        (
            "module_rmsnorm",
            "module module_rmsnorm has no qola C API wrapper in this version",
        ),
        (
            "libmha_fwd,libnope",
            "QOLA_AITER_MODULES=libmha_fwd,libnope: the manifest has no module libnope (it has: libmha_fwd, module_rmsnorm)",
        ),
    ] {
        let out = cargo(
            tmp.path(),
            "build",
            &[
                ("QOLA_MANIFEST", &manifest),
                ("QOLA_AITER_MODULES", Path::new(modules)),
            ],
        );
        let log = text(&out);
        assert!(!out.status.success(), "{log}");
        assert!(log.contains(expected), "{log}");
    }
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

/// Calls the AITER backend without a GPU: no arguments, then valid arguments it cannot serve
/// (fp32; a soft cap in the backward), then valid ones it can (fp16, GQA, group mode, dropout).
const CALL_WITHOUT_A_GPU: &str = r#"#include <stdio.h>
#include "qola_mha.h"
static const int32_t starts[3] = {0, 5, 12};
int main(void) {
    int status = qola_mha_fwd(0, 0);
    printf("%d %s\n", status, qola_mha_status_string(status));
    qola_mha_fwd_args f = QOLA_MHA_FWD_ARGS_INIT;
    qola_mha_problem p = {QOLA_DTYPE_FP32, QOLA_MHA_MODE_GROUP, 2, 8, 2, 12, 12, 7, 7, 128, 128,
                          QOLA_MHA_MASK_BOTTOM_RIGHT, -1, 0, QOLA_MHA_BIAS_NONE, 0.088f, 0.0f};
    p.seqlens.seqstart_q = starts;
    p.seqlens.seqstart_k = starts;
    p.dropout.p_drop = 0.1f;
    p.dropout.seed = 1;
    f.problem = p;
    f.q = f.k = f.v = (void*)starts;
    f.o = (void*)starts;
    f.q_strides.seq = f.o_strides.seq = 8 * 128;
    f.q_strides.head = f.o_strides.head = 128;
    f.k_strides.seq = f.v_strides.seq = 2 * 128;
    f.k_strides.head = f.v_strides.head = 128;
    status = qola_mha_fwd_check(&f);
    printf("%d %s\n", status, qola_mha_status_string(status));
    f.problem.dtype = QOLA_DTYPE_FP16;
    printf("%d\n", qola_mha_fwd_check(&f));
    qola_mha_bwd_args b = QOLA_MHA_BWD_ARGS_INIT;
    b.problem = f.problem;
    b.problem.logits_soft_cap = 30.0f;
    b.q = b.k = b.v = b.o = b.dout = f.q;
    b.q_strides = b.o_strides = b.dout_strides = b.dq_strides = f.q_strides;
    b.k_strides = b.v_strides = b.dk_strides = b.dv_strides = f.k_strides;
    b.lse = (const float*)starts;
    b.lse_strides.head = 12;
    b.dq = b.dk = b.dv = b.workspace = (void*)starts;
    status = qola_mha_bwd_check(&b);
    printf("%d %s\n", status, qola_mha_status_string(status));
    b.problem.logits_soft_cap = 0.0f;
    size_t bytes = 0;
    printf("%d %d\n", qola_mha_bwd_check(&b), qola_mha_bwd_workspace_size(&b, &bytes));
    printf("%zu\n", bytes);
    return 0;
}
"#;

/// The forward alone: refuses no arguments by naming them.
const FORWARD_ONLY: &str = r#"#include "qola_mha.h"
int main(void) { return qola_mha_fwd(0, 0) == QOLA_MHA_STATUS_INVALID + QOLA_MHA_FIELD_ARGS ? 0 : 1; }
"#;

#[test]
fn qola_sys_builds_narrow_aiter_fwd_and_bwd_for_gfx942_exporting_only_the_c_api() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // From the packaged crates: their default manifest and patch series, nothing else from
    // the repository (only the AITER source comes from a local mirror, QOLA_AITER_URL).
    packaged_qola_sys_dependent(tmp.path());
    let fixtures = fixtures_dir();
    let commit = PathBuf::from(&real.commit);
    // The checkout and the object cache persist between runs (a warm machine compiles nothing).
    let root = fixtures.join("aiter-narrow");
    let cache = fixtures.join("cache");
    let env: Vec<(&str, &Path)> = vec![
        ("QOLA_KERNELS", Path::new("aiter")),
        ("QOLA_AITER_URL", &real.upstream),
        ("QOLA_AITER_COMMIT", &commit),
        ("QOLA_AITER_MODULES", Path::new("libmha_fwd,libmha_bwd")),
        ("QOLA_CK_FILTER_LIBMHA_FWD", Path::new(NARROW_FWD_FILTER)),
        ("QOLA_CK_FILTER_LIBMHA_BWD", Path::new(NARROW_BWD_FILTER)),
        ("HIPCC", &hipcc),
        ("GPU_ARCHS", Path::new("gfx942")),
        ("QOLA_AITER_ROOT", &root),
        ("QOLA_CACHE_DIR", &cache),
    ];

    let first = cargo(tmp.path(), "build", &env);
    let log = text(&first);
    assert!(first.status.success(), "{log}");
    let built = qola_tests::build_script_out_dir(&first.stdout, "qola-sys");
    let (fwd, bwd, status) = (
        built.join("libmha_fwd.a"),
        built.join("libmha_bwd.a"),
        built.join("libqola_mha_status.a"),
    );
    assert_eq!(
        exported(&fwd),
        ["qola_mha_fwd", "qola_mha_fwd_check"],
        "{}",
        fwd.display()
    );
    assert_eq!(
        exported(&bwd),
        [
            "qola_mha_bwd",
            "qola_mha_bwd_check",
            "qola_mha_bwd_workspace_size"
        ],
        "{}",
        bwd.display()
    );
    assert_eq!(exported(&status), ["qola_mha_status_string"]);
    // The build script made one context (qola_build::BuildScript) for the preparation, both
    // modules and the three compiles: each of qola's directives is printed once (a context of
    // its own per call prints its reads again). cc-rs, which archives each static library,
    // prints its own variables once per archive: those are not qola's.
    let output = fwd.parent().unwrap().with_file_name("output");
    let said = std::fs::read_to_string(&output).unwrap();
    let of_cc = |l: &str| {
        l.strip_prefix("cargo:rerun-if-env-changed=")
            .is_some_and(|name| {
                ["CC_", "CRATE_CC_", "AR", "HOST_", "TARGET_", "RANLIB"]
                    .iter()
                    .any(|p| name.starts_with(p))
            })
    };
    let mut seen = std::collections::BTreeSet::new();
    let again: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("cargo:rerun-if") && !of_cc(l) && !seen.insert(*l))
        .collect();
    assert!(
        again.is_empty() && said.contains("cargo:rerun-if-env-changed=QOLA_CACHE_DIR"),
        "printed more than once by {}: {again:?}",
        output.display()
    );

    // A program links the three libraries (with the same toolchain) and runs (in its root), and
    // the calls answer with qola's statuses: what AITER cannot serve is named, what it can passes
    // the checks. The forward and the status library leave nothing undefined but the HIP and C++
    // runtimes; this narrow backward lacks the asm API's CK pre/post kernels
    // (NARROW_BWD_FILTER), which only a launch would call: the link lets those stay unresolved.
    let include = workspace().join("qola-sys/kernels/include");
    qola_tests::write(tmp.path(), "main.c", CALL_WITHOUT_A_GPU);
    let program = tmp.path().join("calls");
    let link = Command::new(&hipcc)
        .arg("-I")
        .arg(&include)
        .arg(tmp.path().join("main.c"))
        .args(["-x", "none"])
        .arg(&fwd)
        .arg(&bwd)
        .arg(&status)
        .arg("-Wl,--unresolved-symbols=ignore-in-object-files")
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        link.status.success(),
        "{}",
        String::from_utf8_lossy(&link.stderr)
    );
    let run = qola_tests::in_sid_root(&hipcc, &program, &[tmp.path()]);
    // Workspace: d (8 query heads x 12 rows of floats = 384 bytes, aligned to 512), the fp32 dq
    // accumulator (8 x 12 x 128 floats = 49152 bytes) and GQA's per-query-head dk and dv
    // (12 x 8 x 128 halves each = 24576 bytes).
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "1000 args: invalid: must not be NULL\n\
         2002 problem.dtype: not supported by this backend\n\
         0\n\
         2018 problem.logits_soft_cap: not supported by this backend\n\
         0 0\n\
         98816\n",
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // The forward and the status library alone link with nothing left unresolved.
    qola_tests::write(tmp.path(), "forward.c", FORWARD_ONLY);
    let forward = tmp.path().join("forward");
    qola_tests::run_ok(
        Command::new(&hipcc)
            .arg("-I")
            .arg(&include)
            .arg(tmp.path().join("forward.c"))
            .args(["-x", "none"])
            .arg(&fwd)
            .arg(&status)
            .arg("-o")
            .arg(&forward),
    );
    let run = qola_tests::in_sid_root(&hipcc, &forward, &[tmp.path()]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // Fresh (Cargo then replays the first build's warnings), or a rerun that compiles nothing.
    let second = cargo(tmp.path(), "build", &env);
    let log = text(&second);
    assert!(second.status.success(), "{log}");
    assert!(
        package_script_runs(&log, "qola-sys") == 0 || !log.contains("qola compiled"),
        "a second build compiles nothing: {log}"
    );
}

/// A Rust program calling qola-sys's GEMM checks (no GPU needed): valid arguments for both
/// kernels, and each kind of argument one of them refuses, with the status and its text.
const GEMM_CHECKS: &str = r#"use qola_sys::gemm::*;

fn matrix(data: usize, rows: i64, cols: i64, dtype: i32) -> qola_gemm_matrix {
    qola_gemm_matrix { data: data as *mut _, rows, cols, row_stride: cols, dtype }
}

fn show(what: &str, status: i32) {
    println!("{what}: {status} {}", gemm_status_string(status));
}

fn main() {
    let (m, n, k) = (256, 256, 1024);
    let mut valid = qola_gemm_a4w4_args::new();
    valid.a = matrix(0x1000, m, k / 2, QOLA_GEMM_DTYPE_FP4X2);
    valid.b = matrix(0x2000, n, k / 2, QOLA_GEMM_DTYPE_FP4X2);
    valid.a_scale = matrix(0x3000, m, k / 32, QOLA_GEMM_DTYPE_E8M0);
    valid.b_scale = matrix(0x4000, n, k / 32, QOLA_GEMM_DTYPE_E8M0);
    valid.out = matrix(0x5000, m, n, QOLA_GEMM_DTYPE_BF16);
    valid.alpha = 1.0;
    valid.b_preshuffled = 1;
    valid.device = -1;
    let both = |what: &str, args: &qola_gemm_a4w4_args| {
        // SAFETY: the checks read the struct (and kernel_name) only, never the matrices.
        let (blockscale, asm) = unsafe {
            (qola_gemm_a4w4_blockscale_check(args), qola_gemm_a4w4_asm_check(args))
        };
        show(&format!("{what}, blockscale"), blockscale);
        show(&format!("{what}, asm"), asm);
    };
    both("valid", &valid);
    let mut fp16 = valid;
    fp16.out.dtype = QOLA_GEMM_DTYPE_FP16;
    both("fp16 out", &fp16);
    let mut odd_k = valid;
    odd_k.a.cols = 8;
    odd_k.b.cols = 8;
    both("K 16", &odd_k);
    let mut small_scale = valid;
    small_scale.a_scale.rows = m - 1;
    both("a_scale short", &small_scale);
    let mut n_100 = valid;
    n_100.b.rows = 100;
    n_100.out.cols = 100;
    n_100.out.row_stride = 100;
    both("N 100", &n_100);
    let mut bias = valid;
    bias.bias = matrix(0x6000, m, n, QOLA_GEMM_DTYPE_FP32);
    both("bias", &bias);
    let mut heuristic = valid;
    heuristic.log2_k_split = -1;
    both("log2_k_split -1", &heuristic);
    let mut unknown = valid;
    unknown.kernel_name = c"no_such_kernel".as_ptr();
    both("unknown kernel", &unknown);
    let mut named = valid;
    named.kernel_name = c"a4w4_blockscale_256x64x128x128_16x16_16x16_8x32x1_8x32x1_1x32x1x8_8_2x2_intrawave_v3".as_ptr();
    both("a generated instance", &named);
    // SAFETY: a null args pointer is refused before it is read.
    show("no args", unsafe { qola_gemm_a4w4_asm_check(std::ptr::null()) });
    show("refused by AITER", QOLA_GEMM_STATUS_KERNEL_ERROR);
}
"#;

/// TE's FP4 GEMM from Rust (issue 35): qola-sys with `QOLA_KERNELS=aiter` and TE's GEMM manifest
/// (gfx950, a narrow blockscale filter) builds both a4w4 modules exporting only their C API, a
/// Rust program calling their checks links (with the toolchain's HIP runtime) and runs, and the
/// next build compiles nothing.
#[test]
fn qola_sys_serves_tes_fp4_gemms_whose_rust_checks_link_and_answer() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    packaged_qola_sys_dependent(tmp.path());
    qola_tests::write(tmp.path(), "src/main.rs", GEMM_CHECKS);
    let manifest = qola_tests::ManifestText::te_gemm(&real.commit, &real.upstream)
        .write(tmp.path().join("te_gemm.toml"));
    let fixtures = fixtures_dir();
    let (root, cache) = (fixtures.join("aiter-narrow"), fixtures.join("cache"));
    // The program links with the toolchain's own driver (its HIP 6 runtime and C++ library;
    // Debian bookworm's HIP 5.2 lacks hipGetDevicePropertiesR0600) and runs in its root.
    // RUSTFLAGS with --target reach the program only, not the build scripts.
    let rustflags = PathBuf::from(format!("-C linker={}", hipcc.display()));
    let env: Vec<(&str, &Path)> = vec![
        ("QOLA_KERNELS", Path::new("aiter")),
        ("QOLA_MANIFEST", &manifest),
        (
            "QOLA_CK_FILTER_LIBGEMM_A4W4_BLOCKSCALE",
            Path::new(NARROW_GEMM_FILTER),
        ),
        ("HIPCC", &hipcc),
        ("GPU_ARCHS", Path::new("gfx950")),
        ("QOLA_AITER_ROOT", &root),
        ("QOLA_CACHE_DIR", &cache),
        ("RUSTFLAGS", &rustflags),
    ];
    let build = ["build", "--target", "x86_64-unknown-linux-gnu"];
    let first = cargo_args(tmp.path(), &build, &env);
    let log = text(&first);
    assert!(first.status.success(), "{log}");
    let built = qola_tests::build_script_out_dir(&first.stdout, "qola-sys");
    assert_eq!(
        exported(&built.join("libgemm_a4w4_blockscale.a")),
        [
            "qola_gemm_a4w4_blockscale",
            "qola_gemm_a4w4_blockscale_check"
        ]
    );
    assert_eq!(
        exported(&built.join("libgemm_a4w4_asm.a")),
        ["qola_gemm_a4w4_asm", "qola_gemm_a4w4_asm_check"]
    );
    assert_eq!(
        exported(&built.join("libqola_mha_status.a")),
        ["qola_gemm_status_string", "qola_mha_status_string"]
    );

    let program = qola_tests::built_executable(&first.stdout, "downstream");
    let run = qola_tests::in_sid_root(&hipcc, &program, &[&fixtures]);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "valid, blockscale: 0 success\n\
         valid, asm: 0 success\n\
         fp16 out, blockscale: 0 success\n\
         fp16 out, asm: 2007 out: not supported by this build's kernels\n\
         K 16, blockscale: 1004 a.cols: invalid: K = 2 * a.cols must be a multiple of 32 (one scale per 32 values)\n\
         K 16, asm: 1004 a.cols: invalid: K = 2 * a.cols must be a multiple of 32 (one scale per 32 values)\n\
         a_scale short, blockscale: 1005 a_scale: invalid: E8M0, data set, rows >= M, cols >= K/32, row_stride >= cols\n\
         a_scale short, asm: 1005 a_scale: invalid: E8M0, data set, rows >= M, cols >= K/32, row_stride >= cols\n\
         N 100, blockscale: 0 success\n\
         N 100, asm: 2003 b: not supported by this build's kernels\n\
         bias, blockscale: 2008 bias: not supported by this build's kernels\n\
         bias, asm: 0 success\n\
         log2_k_split -1, blockscale: 1010 log2_k_split: invalid: >= 0 (asm: or -1), and 2^log2_k_split must divide K\n\
         log2_k_split -1, asm: 0 success\n\
         unknown kernel, blockscale: 2011 kernel_name: not supported by this build's kernels\n\
         unknown kernel, asm: 2011 kernel_name: not supported by this build's kernels\n\
         a generated instance, blockscale: 0 success\n\
         a generated instance, asm: 2011 kernel_name: not supported by this build's kernels\n\
         no args: 1000 args: invalid: must not be NULL\n\
         refused by AITER: 3000 the kernel refused the arguments (its message is on standard error)\n",
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // Fresh, or a rerun that compiles nothing.
    let second = cargo_args(tmp.path(), &build, &env);
    let log = text(&second);
    assert!(second.status.success(), "{log}");
    assert!(
        package_script_runs(&log, "qola-sys") == 0 || !log.contains("qola compiled"),
        "a second build compiles nothing: {log}"
    );
}

/// The default-visibility global symbols `library` defines.
fn exported(library: &Path) -> Vec<String> {
    let readelf = Command::new("readelf")
        .args(["-sW"])
        .arg(library)
        .output()
        .unwrap();
    let mut names: Vec<String> = String::from_utf8_lossy(&readelf.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[4] == "GLOBAL" && f[5] == "DEFAULT" && f[6] != "UND")
                .then(|| f[7].to_string())
        })
        .collect();
    names.sort();
    names
}
