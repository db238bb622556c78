//! `qola switch-te` on TransformerEngine-shaped checkouts: the CMake of both shapes TE's has had
//! (`qola-build/tests/te-shapes`, written from what TE's files do: 34fb4d82 includes
//! `${NVTE_QOLA_DIR}/cmake/QoLA.cmake`, its default the QoLA submodule; e94d7e58 runs QoLA's
//! command line with the submodule first on `PYTHONPATH` and includes its module by a fixed
//! path for the FP4 GEMM), with a stand-in for QoLA's checkout as their submodule (a `qola`
//! package and a module that stop the configure if they are used). Real git, real CMake, the
//! real tree and the sid toolchain.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use qola_tests::{NARROW_FWD_FILTER, fixtures_dir};

const QOLA: &str = env!("CARGO_BIN_EXE_qola");

fn git(dir: &Path, args: &[&str]) -> String {
    qola_tests::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "protocol.file.allow=always"])
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args),
    )
}

/// A stand-in for QoLA's repository: its `qola` package and its CMake module stop whoever uses
/// them; its series for AITER has one patch.
fn qola_repository(dir: &Path) -> PathBuf {
    let repo = dir.join("QoLA");
    for (path, text) in [
        (
            "qola/__init__.py",
            "raise SystemExit(\"QoLA's own qola package was imported\")\n",
        ),
        (
            "qola/cli.py",
            "raise SystemExit(\"QoLA's own qola.cli was run\")\n",
        ),
        (
            "cmake/QoLA.cmake",
            "message(FATAL_ERROR \"QoLA's own module was included\")\n",
        ),
        ("patches/aiter/0001-a-fix.patch", "QoLA's patch, kept\n"),
    ] {
        qola_tests::write(&repo, path, text);
    }
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "QoLA"]);
    repo
}

/// A TransformerEngine-shaped checkout of `shape` in `dir`, `manifest` its
/// `transformer_engine/common/qola_manifest.toml`, QoLA's repository its submodule.
fn te_checkout(shape: &str, dir: &Path, qola: &Path, manifest: &str) -> PathBuf {
    let te = dir.join(shape);
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/te-shapes")
        .join(shape);
    qola_tests::run_ok(Command::new("cp").arg("-r").arg(&source).arg(&te));
    qola_tests::write(
        &te,
        "transformer_engine/common/qola_manifest.toml",
        manifest,
    );
    git(&te, &["init", "-q"]);
    git(&te, &["add", "-A"]);
    git(&te, &["commit", "-qm", "TE"]);
    git(
        &te,
        &[
            "submodule",
            "-q",
            "add",
            &qola.display().to_string(),
            "3rdparty/QoLA",
        ],
    );
    git(&te, &["commit", "-qm", "QoLA as a submodule"]);
    te
}

fn switch_te(te: &Path) -> std::process::Output {
    let mut command = common::qola_command(&[]);
    command.arg("switch-te").arg(te);
    command.output().unwrap()
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Both shapes of TransformerEngine's CMake, after `qola switch-te`: QoLA's checkout dropped
/// (refused, nothing changed, while it holds an untracked file), its series kept, the forwarding
/// module written (and not again); each shape configures with the installed qola (here the
/// repository's Python face on `PYTHONPATH`): TE's checkout and its ahead-of-time attention
/// through QoLA's command line or functions, and, for the fixed path, the FP4 GEMM through
/// `qola_add_modules`; ninja then takes the build files (the fixed path names the manifest a
/// configure dependency through `..`, as TE e94d7e58 does, and qola's own entry for it does not
/// clash).
#[test]
fn switch_te_makes_both_shapes_of_te_s_cmake_configure_with_the_installed_qola() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let Some(cmake) = qola_tests::tool("cmake", "cmake") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let qola = qola_repository(tmp.path());
    let Some(ninja) = qola_tests::tool("ninja", "ninja-build") else {
        return;
    };
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .module(
            "libmha_fwd",
            "group = \"ck_fused_attn\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n",
        )
        .module("libgemm_a4w4_asm", "group = \"aiter_gemm\"\nmode = \"cpp_itfs\"\n")
        .write(tmp.path().join("qola_manifest.toml"));
    let manifest = std::fs::read_to_string(&manifest).unwrap();
    let tree = fixtures_dir().join("aiter-narrow");
    let python_face = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python");
    for shape in ["nvte-qola-dir", "fixed-path"] {
        let te = te_checkout(shape, tmp.path(), &qola, &manifest);
        let submodule = te.join("3rdparty/QoLA");

        std::fs::write(submodule.join("mine.txt"), "not QoLA's").unwrap();
        let out = switch_te(&te);
        assert_eq!(out.status.code(), Some(3), "{shape}: {}", said(&out));
        assert!(said(&out).contains("nothing was changed"), "{}", said(&out));
        assert!(
            submodule.join("qola/__init__.py").is_file() && submodule.join("mine.txt").is_file()
        );
        std::fs::remove_file(submodule.join("mine.txt")).unwrap();

        let out = switch_te(&te);
        let text = said(&out);
        assert!(out.status.success(), "{shape}: {text}");
        assert!(text.contains("dropped QoLA's checkout"), "{text}");
        assert!(
            text.contains("kept QoLA's patch series (1 files)"),
            "{text}"
        );
        assert!(!submodule.join("qola").exists(), "{text}");
        assert_eq!(
            std::fs::read_to_string(submodule.join("patches/aiter/0001-a-fix.patch")).unwrap(),
            "QoLA's patch, kept\n"
        );
        let module = submodule.join("cmake/QoLA.cmake");
        let written = std::fs::metadata(&module).unwrap().modified().unwrap();
        common::tick();
        let again = switch_te(&te);
        assert!(
            again.status.success() && said(&again).contains("already there"),
            "{}",
            said(&again)
        );
        assert_eq!(
            std::fs::metadata(&module).unwrap().modified().unwrap(),
            written
        );

        let build = tmp.path().join(format!("build-{shape}"));
        let mut configure = Command::new(&cmake);
        qola_tests::without_caller_env(&mut configure, &["NVTE_"], &["GPU_ARCHS", "PYTHONPATH"]);
        configure
            .args(["-G", "Ninja", "-S"])
            .arg(te.join("transformer_engine/common"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DQOLA_TEST_AITER_DIR={}", tree.display()))
            .env("PYTHONPATH", &python_face)
            .env("QOLA_EXECUTABLE", QOLA)
            .env("HIPCC", &hipcc)
            .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
            .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
        if shape == "fixed-path" {
            // The GEMM's qola_add_modules names no tree (as TE's): this one, as it is.
            configure.env("NVTE_AITER_SOURCE_DIR", &tree);
        }
        let text = qola_tests::run_ok(&mut configure);
        assert!(
            text.contains("TE-shaped: ck_fused_attn at"),
            "{shape}: {text}"
        );
        if shape == "fixed-path" {
            assert!(
                text.contains("TE-shaped: aiter_gemm: te_libgemm_a4w4_asm.so"),
                "{text}"
            );
        }
        assert!(!text.contains("QoLA's own"), "{text}");
        qola_tests::run_ok(Command::new(&ninja).arg("-C").arg(&build).arg("-n"));
    }
}
