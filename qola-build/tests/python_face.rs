//! TransformerEngine switches from QoLA with `pip install`: qola's wheel (maturin, the `qola`
//! binary plus the `qola` Python package) built here, installed in a fresh venv, and run the way
//! TE runs QoLA: `python -m qola.cli checkout ...`, then `python -m qola.cli build --manifest
//! ... --aiter-root ... --output-dir ... --arch ... --skip-checkout`, from TE's QoLA submodule
//! directory, which is empty (the submodule dropped) and first on `PYTHONPATH`, as TE's CMake
//! sets it. No QoLA is anywhere on the path; the narrow AITER forward with the sid toolchain.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{NARROW_FWD_FILTER, fixtures_dir};

const QOLA: &str = env!("CARGO_BIN_EXE_qola");

/// The wheel, built once for this file's tests (dev profile, in the tests' shared nested target
/// directory, kept between runs). `None` (the test skips) without maturin, outside CI.
fn wheel() -> Option<&'static Path> {
    static WHEEL: std::sync::OnceLock<Option<(tempfile::TempDir, PathBuf)>> =
        std::sync::OnceLock::new();
    WHEEL
        .get_or_init(|| {
            let maturin = qola_tests::tool("maturin", "python3 -m pip install maturin")?;
            let dir = tempfile::tempdir().unwrap();
            let wheel = build_wheel(&maturin, dir.path());
            Some((dir, wheel))
        })
        .as_ref()
        .map(|(_, wheel)| wheel.as_path())
}

/// Builds the wheel into `dir` and returns its path.
fn build_wheel(maturin: &Path, dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut command = Command::new(maturin);
    command
        .args(["build", "--profile", "dev", "--quiet", "-o"])
        .arg(dir)
        .current_dir(&root);
    qola_tests::run_ok(qola_tests::nested_cargo(&mut command));
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    wheels[0].clone()
}

/// A fresh venv with the wheel installed (nothing from an index), and its Python. The wheel's
/// dependencies (what AITER's generators need: pandas, numpy, packaging, setuptools, which the
/// `qola` in the venv runs them with) are the outer Python's, seen through
/// `--system-site-packages`, as `pip install` would bring them.
fn venv_with(wheel: &Path, dir: &Path) -> PathBuf {
    qola_tests::run_ok(
        Command::new("python3")
            .args(["-m", "venv", "--system-site-packages"])
            .arg(dir),
    );
    let python = dir.join("bin/python");
    qola_tests::run_ok(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--no-index", "--no-deps"])
            .arg(wheel),
    );
    python
}

/// `python -m qola.cli <args>` as TE runs it: from TE's (empty) QoLA submodule directory, that
/// directory first on PYTHONPATH, none of the caller's QOLA_* variables.
fn te_runs(python: &Path, submodule: &Path, args: &[&std::ffi::OsStr]) -> Command {
    let mut command = Command::new(python);
    qola_tests::without_caller_env(&mut command, &[], &["GPU_ARCHS"]);
    command
        .args(["-m", "qola.cli"])
        .args(args)
        .current_dir(submodule)
        .env("PYTHONPATH", submodule);
    command
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn te_builds_with_python_m_qola_cli_from_the_wheel_with_no_qola_on_its_path() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let Some(wheel) = wheel() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let listed = qola_tests::run_ok(
        Command::new("python3")
            .args(["-m", "zipfile", "-l"])
            .arg(wheel),
    );
    for file in [
        "qola/cli.py",
        "qola/__main__.py",
        "qola/cmake/QoLA.cmake",
        ".data/scripts/qola",
    ] {
        assert!(listed.contains(file), "the wheel holds {file}: {listed}");
    }
    let python = venv_with(wheel, &tmp.path().join("venv"));
    let submodule = tmp.path().join("TransformerEngine/3rdparty/qola");
    std::fs::create_dir_all(&submodule).unwrap();

    // The qola package is the wheel's (the empty submodule holds none).
    let imported = qola_tests::run_ok(
        Command::new(&python)
            .args(["-c", "import qola; print(qola.__file__)"])
            .current_dir(&submodule)
            .env("PYTHONPATH", &submodule),
    );
    assert!(
        imported
            .trim()
            .starts_with(&tmp.path().join("venv").display().to_string()),
        "{imported}"
    );

    // Same arguments, output and exit status as the binary: a version, a usage error.
    for args in [&["--version"][..], &["build"][..]] {
        let via_python = te_runs(
            &python,
            &submodule,
            &args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
        )
        .output()
        .unwrap();
        let direct = Command::new(QOLA).args(args).output().unwrap();
        assert_eq!(via_python.status.code(), direct.status.code(), "{args:?}");
        assert_eq!(via_python.stdout, direct.stdout, "{args:?}");
        assert_eq!(via_python.stderr, direct.stderr, "{args:?}");
    }

    // TE's gemm backend: checkout, then build --skip-checkout, with TE's flags.
    let manifest = tmp.path().join("te.toml");
    qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .narrow_forward()
        .write(&manifest);
    let aiter = fixtures_dir().join("aiter-narrow");
    let out = tmp.path().join("qola-out");
    let with_toolchain = |mut command: Command| {
        command
            .env("HIPCC", &hipcc)
            .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
            .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
        command
    };
    let checkout = with_toolchain(te_runs(
        &python,
        &submodule,
        &[
            "checkout".as_ref(),
            "--manifest".as_ref(),
            manifest.as_os_str(),
            "--aiter-root".as_ref(),
            aiter.as_os_str(),
        ],
    ))
    .output()
    .unwrap();
    assert!(checkout.status.success(), "{}", text(&checkout));
    let build = with_toolchain(te_runs(
        &python,
        &submodule,
        &[
            "build".as_ref(),
            "--manifest".as_ref(),
            manifest.as_os_str(),
            "--aiter-root".as_ref(),
            aiter.as_os_str(),
            "--output-dir".as_ref(),
            out.as_os_str(),
            "--arch".as_ref(),
            "gfx942".as_ref(),
            "--skip-checkout".as_ref(),
        ],
    ))
    .output()
    .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    assert!(out.join("lib/te_libmha_fwd.so").is_file());
    assert!(out.join("include/qola_config.h").is_file());
    assert!(out.join("manifest.json").is_file());

    // TE's `--arch "gfx942;gfx950"`: one argument, both architectures (a plan: nothing compiles).
    let plan = with_toolchain(te_runs(
        &python,
        &submodule,
        &[
            "plan".as_ref(),
            "--json".as_ref(),
            "--manifest".as_ref(),
            manifest.as_os_str(),
            "--aiter-root".as_ref(),
            aiter.as_os_str(),
            "--output-dir".as_ref(),
            tmp.path().join("plan-out").as_os_str(),
            "--arch".as_ref(),
            "gfx942;gfx950".as_ref(),
            "--skip-checkout".as_ref(),
        ],
    ))
    .output()
    .unwrap();
    let said = text(&plan);
    assert!(plan.status.success(), "{said}");
    assert!(
        said.contains("--offload-arch=gfx942") && said.contains("--offload-arch=gfx950"),
        "{said}"
    );
}

#[test]
fn a_refusal_through_python_m_qola_cli_exits_three_as_the_binary_does() {
    let Some(wheel) = wheel() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let python = venv_with(wheel, &tmp.path().join("venv"));
    let demo = qola_tests::Demo::create(&tmp.path().join("upstream"));
    let root = tmp.path().join("aiter");
    let prepare = || {
        let mut command = Command::new(&python);
        command
            .args(["-m", "qola.cli", "prepare", "--json", "--root"])
            .arg(&root)
            .arg("--url")
            .arg(&demo.aiter)
            .args(["--commit", &demo.commit, "--patches"])
            .arg(&demo.patches)
            .env("QOLA_CACHE_DIR", tmp.path().join("cache"))
            .env_remove("QOLA_FORCE_PREPARE")
            .env_remove("QOLA_SKIP_PREPARE");
        command.output().unwrap()
    };
    assert_eq!(prepare().status.code(), Some(0));
    std::fs::write(root.join("README.md"), "an edit\n").unwrap();
    let refused = prepare();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("\"refused\""));
}

/// QoLA's Python API from the wheel in a fresh venv, as a Python caller (TE's setup.py, QoLA's
/// README) uses it: `qola.build_tools.checkout_aiter` returns the tree's absolute path,
/// `build_kernels` what `manifest.json` holds, `qola.cli.main(argv)` the exit status with QoLA's
/// line on standard output; what stops every module raises `RuntimeError` in qola's words.
#[test]
fn qolas_python_api_runs_qola_and_returns_what_qolas_does() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let Some(wheel) = wheel() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let python = venv_with(wheel, &tmp.path().join("venv"));
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .narrow_forward()
        .write(tmp.path().join("te.toml"));
    let aiter = fixtures_dir().join("aiter-narrow");
    let out = tmp.path().join("qola-out");
    let script = format!(
        r#"
import inspect, json, os
from qola.build_tools import build_kernels, checkout_aiter
from qola.cli import main

import qola
print("VERSION", qola.__version__)
print("SIGNATURES", json.dumps([str(inspect.signature(f)) for f in (build_kernels, checkout_aiter, main)]))
root = checkout_aiter(manifest_path={m:?}, aiter_root={a:?}, groups=["mha"])
print("ROOT", root)
record = build_kernels({m:?}, output_dir={o:?}, aiter_root={a:?}, archs=["gfx942"], skip_checkout=True)
print("SUMMARY", json.dumps(record["summary"], sort_keys=True), record["modules"][0]["md_name"])
print("STATUS", main(["build", "--manifest", {m:?}, "--aiter-root", {a:?}, "--output-dir", {o:?}, "--arch", "gfx942", "--skip-checkout"]), flush=True)
try:
    build_kernels("/nonexistent/qola.toml", output_dir={o:?})
except RuntimeError as e:
    print("RAISED", e)
try:
    checkout_aiter(manifest_path={m:?}, aiter_root={a:?}, groups=["gemm"])
except RuntimeError as e:
    print("RAISED", e)
"#,
        m = manifest.display().to_string(),
        a = aiter.display().to_string(),
        o = out.display().to_string(),
    );
    let mut command = Command::new(&python);
    qola_tests::without_caller_env(&mut command, &[], &["GPU_ARCHS"]);
    let run = command
        .args(["-c", &script])
        .current_dir(tmp.path())
        .env("HIPCC", &hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
        .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{}", text(&run));
    let mut lines: Vec<&str> = said.lines().collect();
    // `qola.__version__` is the installed wheel's, the crate's.
    assert_eq!(
        lines.remove(0),
        format!("VERSION {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        lines[0],
        r#"SIGNATURES ["(manifest_path: str, *, output_dir: str, aiter_root: Optional[str] = None, archs: Optional[List[str]] = None, verbose: bool = False, build_mode: Optional[str] = None, aiter_commit: Optional[str] = None, patches_dir: Optional[str] = None, skip_checkout: bool = False, groups: Optional[List[str]] = None) -> Dict[str, Any]", "(manifest_path: Optional[str] = None, aiter_root: Optional[str] = None, aiter_commit: Optional[str] = None, patches_dir: Optional[str] = None, force: bool = False, groups: Optional[List[str]] = None) -> str", "(argv: Optional[List[str]] = None) -> int"]"#
    );
    assert_eq!(
        lines[1],
        format!("ROOT {}", aiter.canonicalize().unwrap().display())
    );
    assert_eq!(
        lines[2],
        r#"SUMMARY {"failed": 0, "success": 1, "total": 1} te_libmha_fwd"#
    );
    // main() runs the command: QoLA's line reaches standard output, then the status.
    assert_eq!(lines[3], "Build complete: 1/1 succeeded, 0 failed.");
    assert_eq!(lines[4], "STATUS 0");
    assert!(
        lines[5].starts_with("RAISED qola build: cannot read manifest /nonexistent/qola.toml"),
        "{said}"
    );
    assert!(
        lines[6].starts_with("RAISED qola checkout: group gemm"),
        "{said}"
    );
    assert!(out.join("lib/te_libmha_fwd.so").is_file());
}
