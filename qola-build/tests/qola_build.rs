//! `qola build` as TransformerEngine's CMake runs it: a QoLA manifest (no `patches_dir`, so
//! qola's own series), the real AITER tree, the sid toolchain for gfx942, a narrow CK filter.
//! The checkout, qola's cache and the output directory persist in the fixtures (a warm machine
//! compiles nothing); each test removes its output directory first, so the layout is written
//! afresh every run.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{assert_nothing_written, mtimes, stderr, tick};
use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER, NARROW_GEMM_FILTER, fixtures_dir};

const QOLA: &str = env!("CARGO_BIN_EXE_qola");

fn manifest(dir: &Path, real: &qola_tests::RealAiter, namespace: &str, extra: &str) -> PathBuf {
    qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", namespace)
        .archs(&["gfx942"])
        .narrow_forward()
        .raw(extra)
        .write(dir.join(format!("{namespace}.toml")))
}

/// `qola <verb> -m manifest -a <fixture checkout> -o out`, with the sid toolchain, qola's
/// cache in the fixtures, the narrow CK filters and none of the caller's QOLA_* variables.
fn qola(verb: &str, hipcc: &Path, manifest: &Path, out: &Path) -> Command {
    qola_at(
        verb,
        hipcc,
        manifest,
        &fixtures_dir().join("aiter-narrow"),
        out,
    )
}

/// [`qola`] with the checkout at `tree`.
fn qola_at(verb: &str, hipcc: &Path, manifest: &Path, tree: &Path, out: &Path) -> Command {
    let fixtures = fixtures_dir();
    let mut command = common::qola_command(&["GPU_ARCHS"]);
    command
        .arg(verb)
        .arg("-m")
        .arg(manifest)
        .arg("-a")
        .arg(tree)
        .arg("-o")
        .arg(out)
        .env("HIPCC", hipcc)
        .env("QOLA_CACHE_DIR", fixtures.join("cache"))
        .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER)
        .env("QOLA_CK_FILTER_LIBMHA_BWD", NARROW_BWD_FILTER)
        .env("QOLA_CK_FILTER_LIBGEMM_A4W4_BLOCKSCALE", NARROW_GEMM_FILTER);
    command
}

/// `qola build` (see [`qola`]), run.
fn qola_build(hipcc: &Path, manifest: &Path, out: &Path) -> Output {
    qola("build", hipcc, manifest, out).output().unwrap()
}

/// A `[[modules]]` entry for the backward (with NARROW_BWD_FILTER: not link-complete, which a
/// shared library may be; enough to check what it exports).
const BACKWARD: &str =
    "\n[[modules]]\nname = \"libmha_bwd\"\ngroup = \"mha\"\nmode = \"cpp_itfs\"\nreceipt = 700\n";

/// The file names of the sources this build compiled, from its progress lines
/// (`qola: compiled <secs>s <memory> <path, spaces and all> (<why>) (<done>/<total> done, ...)`).
fn compiled(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter_map(|l| l.strip_prefix("qola: compiled "))
        .filter_map(|l| {
            // Past the time and the memory fields, up to the progress in parentheses.
            let skip = |t: &str| t.find(char::is_whitespace);
            let l = l.trim_start();
            let rest = l[skip(l)?..].trim_start();
            let rest = rest[skip(rest)?..].trim_start();
            let with_why = &rest[..rest.rfind(" (")?];
            let path = &with_why[..with_why.rfind(" (")?];
            Some(path.rsplit('/').next().unwrap_or(path).to_string())
        })
        .collect()
}

/// What a test on the real tree with the sid toolchain starts from: the tree, the toolchain, a
/// temporary directory, and its output directory `qola-build-out/<name>` in the fixtures,
/// emptied. `None` (the test skips) without the wheel or the toolchain, outside CI.
fn start(name: &str) -> Option<(qola_tests::RealAiter, PathBuf, tempfile::TempDir, PathBuf)> {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return None;
    };
    let out = fixtures_dir().join("qola-build-out").join(name);
    let _ = std::fs::remove_dir_all(&out);
    // Beside the fixtures, which the sid toolchain's sandbox sees: tests copy the prepared
    // trees into it.
    let tmp = tempfile::tempdir_in(fixtures_dir()).unwrap();
    Some((real, hipcc, tmp, out))
}

#[test]
fn qola_build_writes_qolas_layout_and_a_second_build_writes_nothing() {
    let Some((real, hipcc, tmp, out)) = start("layout") else {
        return;
    };
    let te = manifest(tmp.path(), &real, "te", BACKWARD);
    let first = qola_build(&hipcc, &te, &out);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        "Build complete: 2/2 succeeded, 0 failed.\n",
        "QoLA's line, on standard output"
    );
    let library = out.join("lib/te_libmha_fwd.so");
    assert!(library.is_file(), "{}", stderr(&first));
    for header in [
        "qola_common.h",
        "qola_mha_fwd.h",
        "qola_mha_bwd.h",
        "qola_config.h",
    ] {
        assert!(out.join("include").join(header).is_file(), "{header}");
    }
    let config = std::fs::read_to_string(out.join("include/qola_config.h")).unwrap();
    assert!(config.contains("#define QOLA_NAMESPACE te"), "{config}");
    assert!(
        qola_tests::files_with_extension(&out.join("configs"), "csv").len() > 5,
        "AITER's tuning tables are copied"
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(record["gpu_archs"], "gfx942");
    assert_eq!(record["summary"]["success"], 2);
    assert_eq!(record["modules"][0]["md_name"], "te_libmha_fwd");
    assert_eq!(record["modules"][0]["so_path"], library.to_str().unwrap());
    assert!(record["generated_at"].as_str().unwrap().ends_with('Z'));

    // Only qola::te:: is exported: AITER's default-visibility API is hidden.
    let symbols = common::exported(&library);
    assert_eq!(symbols.len(), 1, "{symbols:?}");
    assert!(symbols[0].starts_with("_ZN4qola2te7mha_fwd"), "{symbols:?}");
    let backward = common::exported(&out.join("lib/te_libmha_bwd.so"));
    assert_eq!(backward.len(), 2, "{backward:?}");
    for api in ["_ZN4qola2te7mha_bwd", "_ZN4qola2te22mha_bwd_workspace_size"] {
        assert!(
            backward.iter().any(|s| s.starts_with(api)),
            "{api}: {backward:?}"
        );
    }

    // Nothing changed: nothing compiles, no file under the output directory or the checkout
    // is written (same mtimes, so make and ninja relink nothing), and no Python starts (one
    // that does not exist is never asked for its modules).
    let before = mtimes(&out);
    let tree = mtimes(&fixtures_dir().join("aiter-narrow/csrc"));
    tick();
    let second = qola("build", &hipcc, &te, &out)
        .env("QOLA_PYTHON", tmp.path().join("no-python"))
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(compiled(&second), Vec::<String>::new());
    assert!(
        stderr(&second).contains("2/2 modules built, 0 failed; 0 of 12 units compiled; nothing changed in the output directory"),
        "{}",
        stderr(&second)
    );
    assert_nothing_written(&before, &out);
    assert_nothing_written(&tree, &fixtures_dir().join("aiter-narrow/csrc"));

    // Another output directory, named relative to where qola runs (`qola build -o B`): every
    // unit comes from qola's cache (the wrappers' API include directory is named in full).
    let elsewhere = out.with_file_name("layout, elsewhere");
    let _ = std::fs::remove_dir_all(&elsewhere);
    let third = qola("build", &hipcc, &te, Path::new("layout, elsewhere"))
        .current_dir(out.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        stderr(&third).contains("2/2 modules built, 0 failed; 0 of 12 units compiled; wrote lib/te_libmha_fwd.so, lib/te_libmha_bwd.so and manifest.json"),
        "{}",
        stderr(&third)
    );
    assert!(elsewhere.join("lib/te_libmha_fwd.so").is_file());
}

/// (Its output directory has a space in its name: every path stays one argument.)
#[test]
fn a_new_namespace_recompiles_only_the_api_wrapper_and_both_libraries_load_in_one_process() {
    let Some((real, hipcc, tmp, out)) = start("two namespaces") else {
        return;
    };
    // Namespaces of this run alone: the fixtures' cache (shared by the tests and kept between
    // runs) may hold every other unit, never their wrappers, so each build compiles its wrapper
    // and writes its timings report (asked for by `--timings`, then by QOLA_TIMINGS=1).
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 1_000_000_000;
    let (first, second) = (format!("te{stamp}"), format!("other{stamp}"));
    let one = qola(
        "build",
        &hipcc,
        &manifest(tmp.path(), &real, &first, ""),
        &out,
    )
    .arg("--timings")
    .output()
    .unwrap();
    assert!(one.status.success(), "{}", stderr(&one));
    let two = qola(
        "build",
        &hipcc,
        &manifest(tmp.path(), &real, &second, ""),
        &out,
    )
    .env("QOLA_TIMINGS", "1")
    .output()
    .unwrap();
    assert!(two.status.success(), "{}", stderr(&two));
    let (first_lib, second_lib) = (
        format!("{first}_libmha_fwd"),
        format!("{second}_libmha_fwd"),
    );
    for (run, library) in [(&one, &first_lib), (&two, &second_lib)] {
        let page = out
            .join("_qola/build")
            .join(library)
            .join(format!("qola-timings-{library}.html"));
        assert!(
            page.is_file() && stderr(run).contains(&format!("timings: {}", page.display())),
            "{}",
            stderr(run)
        );
    }
    assert_eq!(
        compiled(&two),
        ["qola_mha_fwd.cpp"],
        "only the wrapper includes qola_config.h"
    );
    let te = out.join(format!("lib/{first_lib}.so"));
    let other = out.join(format!("lib/{second_lib}.so"));
    let (te_symbol, other_symbol) = (common::exported(&te), common::exported(&other));
    assert_eq!(te_symbol.len(), 1, "{te_symbol:?}");
    assert_eq!(other_symbol.len(), 1, "{other_symbol:?}");
    assert_eq!(
        te_symbol[0].replacen(
            &format!("4qola{}{first}", first.len()),
            &format!("4qola{}{second}", second.len()),
            1
        ),
        other_symbol[0]
    );

    // Both load into one process (in the toolchain's root, where the HIP runtime is) and each
    // answers for its own namespace: no symbol clash.
    let program = tmp.path().join("load_both");
    let source = tmp.path().join("load_both.c");
    std::fs::write(
        &source,
        format!(
            "#include <dlfcn.h>\n#include <stdio.h>\nint main(void) {{\n  void* a = dlopen(\"{}\", RTLD_NOW | RTLD_LOCAL);\n  void* b = dlopen(\"{}\", RTLD_NOW | RTLD_LOCAL);\n  if (!a || !b) {{ printf(\"dlopen: %s\\n\", dlerror()); return 1; }}\n  void* fa = dlsym(a, \"{}\");\n  void* fb = dlsym(b, \"{}\");\n  void* cross = dlsym(a, \"{}\");\n  printf(\"%d %d %d\\n\", fa != 0, fb != 0 && fb != fa, cross == 0);\n  return 0;\n}}\n",
            te.display(),
            other.display(),
            te_symbol[0],
            other_symbol[0],
            other_symbol[0]
        ),
    )
    .unwrap();
    qola_tests::run_ok(
        Command::new(&hipcc)
            .arg("-x")
            .arg("c")
            .arg(&source)
            .arg("-o")
            .arg(&program)
            .arg("-ldl"),
    );
    let run = qola_tests::in_sid_root(&hipcc, &program, &[tmp.path(), &fixtures_dir()]);
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "1 1 1",
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_module_that_cannot_build_is_recorded_and_the_others_are_built() {
    let Some((real, hipcc, tmp, out)) = start("failure") else {
        return;
    };
    let te = manifest(
        tmp.path(),
        &real,
        "te",
        "\n[[modules]]\nname = \"module_mha_fwd\"\nmode = \"pybind\"\n",
    );
    let run = qola_build(&hipcc, &te, &out);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    assert!(out.join("lib/te_libmha_fwd.so").is_file());
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    // QoLA's lines, exactly, on standard output (QoLA's cli.py: "Build complete: {success}/
    // {total} succeeded, {failed} failed." and "  FAILED: {md_name}: {error}").
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        format!(
            "Build complete: 1/2 succeeded, 1 failed.\n  FAILED: te_module_mha_fwd: {}\n",
            record["modules"][1]["error"].as_str().unwrap()
        )
    );
    assert_eq!(record["summary"]["failed"], 1);
    // qola's own line counts the units of the modules built, and says so.
    assert!(
        stderr(&run).contains("1/2 modules built, 1 failed; ")
            && stderr(&run).contains(" units compiled in the modules built"),
        "{}",
        stderr(&run)
    );
    assert_eq!(record["modules"][1]["success"], false);
    assert!(
        record["modules"][1]["error"]
            .as_str()
            .unwrap()
            .contains("PyTorch"),
        "{record}"
    );
    assert_eq!(record["modules"][1]["so_path"], serde_json::Value::Null);
}

#[test]
fn a_manifest_with_many_mistakes_gets_every_one_in_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let manifest = tmp.path().join("bad.toml");
    std::fs::write(
        &manifest,
        "[qola]\naiter_commit = 5\nnamespce = \"te\"\n\n[build]\narchitectures = [\"gfx942\"]\nmode = \"debug\"\n\n[[modules]]\nname = \"libmha_fwd\"\nrecipt = 700\n",
    )
    .unwrap();
    let run = common::qola_command(&[])
        .arg("build")
        .arg("-m")
        .arg(&manifest)
        .arg("-o")
        .arg(tmp.path().join("out"))
        .env("QOLA_CACHE_DIR", tmp.path().join("cache"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let text = stderr(&run);
    for (line, key) in [
        (2, "[qola] aiter_commit"),
        (3, "[qola] namespce"),
        (7, "[build] mode"),
        (11, "[[modules]] recipt"),
    ] {
        assert!(
            text.contains(&format!("bad.toml:{line}: {key}:")),
            "{key} on line {line}: {text}"
        );
    }
    assert!(text.contains("4 problems"), "{text}");
    assert!(!tmp.path().join("out").exists(), "nothing is written");
}

/// `cmake` for a consumer's configure or build: the sid toolchain, qola's cache in the fixtures,
/// the narrow forward, none of the caller's QOLA_* variables.
fn cmake_command(cmake: &Path, hipcc: &Path) -> Command {
    let mut command = Command::new(cmake);
    qola_tests::without_caller_env(&mut command, &[], &["GPU_ARCHS"])
        .env("HIPCC", hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
        .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER);
    command
}

/// A consumer shaped like TransformerEngine's ck_fused_attn (`examples/cmake-te`): real CMake
/// configures by running `qola build`, checks `qola_config.h`, compiles a program with the sid
/// toolchain that links `-l:te_libmha_fwd.so` and calls `QOLA_NS(mha_fwd)`, which answers with
/// an error instead of ending the process (no GPU here). A second configure and build do
/// nothing.
#[test]
fn a_te_shaped_cmake_project_configures_builds_links_and_runs_and_a_second_round_does_nothing() {
    let Some((real, hipcc, tmp, build)) = start("cmake-te") else {
        return;
    };
    let Some(cmake) = qola_tests::tool("cmake", "cmake") else {
        return;
    };
    let te = manifest(tmp.path(), &real, "te", "");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cmake-te");
    let cmake_run =
        |args: &[&std::ffi::OsStr]| qola_tests::run_ok(cmake_command(&cmake, &hipcc).args(args));
    // The first configure sets the cache; a later one (as CMake reruns it) only re-runs.
    let reconfigure = || {
        cmake_run(&[
            "-S".as_ref(),
            source.as_os_str(),
            "-B".as_ref(),
            build.as_os_str(),
        ])
    };
    let configure = || {
        cmake_run(&[
            "-S".as_ref(),
            source.as_os_str(),
            "-B".as_ref(),
            build.as_os_str(),
            format!("-DQOLA={QOLA}").as_ref(),
            format!("-DQOLA_MANIFEST={}", te.display()).as_ref(),
            format!(
                "-DQOLA_AITER_ROOT={}",
                fixtures_dir().join("aiter-narrow").display()
            )
            .as_ref(),
            format!("-DCMAKE_CXX_COMPILER={}", hipcc.display()).as_ref(),
            // The sandboxed compiler's depfiles name its own system headers, which do not exist
            // on this machine: make would rebuild every time. CMake's own scanner skips them.
            "-DCMAKE_DEPENDS_USE_COMPILER=OFF".as_ref(),
        ])
    };
    let build_it = || cmake_run(&["--build".as_ref(), build.as_os_str()]);
    configure();
    build_it();
    let program = build.join("call_mha_fwd");
    assert!(program.is_file());
    let run = qola_tests::in_sid_root(&hipcc, &program, &[&build, &fixtures_dir()]);
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        said.starts_with("threw: ") || said.starts_with("returned an error"),
        "the call answers with an error: {said}"
    );

    let before = mtimes(&build.join("qola"));
    let program_before = std::fs::metadata(&program).unwrap().modified().unwrap();
    tick();
    reconfigure();
    let again = build_it();
    assert_nothing_written(&before, &build.join("qola"));
    assert_eq!(
        std::fs::metadata(&program).unwrap().modified().unwrap(),
        program_before,
        "nothing relinked: {again}"
    );
}

/// A consumer written against QoLA's CMake module as QoLA documents it
/// (`examples/cmake-qola-functions`), with qola's module (`python/qola/cmake/QoLA.cmake`): real
/// CMake configures (`qola_add_modules`), builds and links a program against the group's
/// library; a second configure and build write nothing and relink nothing; the two-phase form
/// (`qola_checkout_aiter` on the prepared tree, then `qola_build_modules`) gives the same.
#[test]
fn qola_s_cmake_functions_configure_build_and_link_and_a_second_configure_does_nothing() {
    let Some((real, hipcc, tmp, build)) = start("cmake-functions") else {
        return;
    };
    let Some(cmake) = qola_tests::tool("cmake", "cmake") else {
        return;
    };
    let te = manifest(tmp.path(), &real, "te", "");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source = root.join("examples/cmake-qola-functions");
    let cmake_run = |args: &[&std::ffi::OsStr]| {
        qola_tests::run_ok(
            cmake_command(&cmake, &hipcc)
                .args(args)
                .env("QOLA_EXECUTABLE", QOLA),
        )
    };
    let configure = |dir: &Path, two_phase: bool| {
        cmake_run(&[
            "-S".as_ref(),
            source.as_os_str(),
            "-B".as_ref(),
            dir.as_os_str(),
            format!("-DQOLA_DIR={}", root.join("python/qola").display()).as_ref(),
            format!("-DQOLA_MANIFEST={}", te.display()).as_ref(),
            format!(
                "-DQOLA_AITER_ROOT={}",
                fixtures_dir().join("aiter-narrow").display()
            )
            .as_ref(),
            format!("-DQOLA_TWO_PHASE={}", if two_phase { "ON" } else { "OFF" }).as_ref(),
            format!("-DCMAKE_CXX_COMPILER={}", hipcc.display()).as_ref(),
            "-DCMAKE_DEPENDS_USE_COMPILER=OFF".as_ref(),
        ])
    };
    let build_it = |dir: &Path| cmake_run(&["--build".as_ref(), dir.as_os_str()]);

    let one = build.join("add-modules");
    let said = configure(&one, false);
    assert!(said.contains("te_libmha_fwd.so"), "{said}");
    build_it(&one);
    let program = one.join("call_mha_fwd");
    assert!(program.is_file());

    let before = mtimes(&one.join("qola"));
    let program_before = std::fs::metadata(&program).unwrap().modified().unwrap();
    tick();
    configure(&one, false);
    let again = build_it(&one);
    assert_nothing_written(&before, &one.join("qola"));
    assert_eq!(
        std::fs::metadata(&program).unwrap().modified().unwrap(),
        program_before,
        "nothing relinked: {again}"
    );

    let two = build.join("two-phase");
    let said = configure(&two, true);
    assert!(
        said.contains("up-to-date"),
        "the prepared tree is taken as it is: {said}"
    );
    build_it(&two);
    assert!(two.join("call_mha_fwd").is_file());
}

#[test]
fn groups_select_modules_and_a_prebuilt_group_is_taken_as_it_is() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let te = manifest(tmp.path(), &real, "te", "");
    // A group no module has is an error naming it; nothing is built.
    let run = qola("build", &hipcc, &te, &out)
        .args(["--group", "attention"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(stderr(&run).contains("group attention"), "{}", stderr(&run));
    assert!(!out.join("lib").exists());

    // QOLA_PREBUILT_DIR_MHA: the mha group's library comes from there; nothing compiles.
    let prebuilt = tmp.path().join("prebuilt");
    std::fs::create_dir_all(&prebuilt).unwrap();
    std::fs::write(prebuilt.join("te_libmha_fwd.so"), b"a prebuilt library").unwrap();
    let run = qola("build", &hipcc, &te, &out)
        .env("QOLA_BUILD_GROUPS", "mha")
        .env("QOLA_PREBUILT_DIR_MHA", &prebuilt)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(compiled(&run), Vec::<String>::new());
    assert_eq!(
        std::fs::read(out.join("lib/te_libmha_fwd.so")).unwrap(),
        b"a prebuilt library"
    );
}

/// QoLA's precedence: `--arch` > `[build] architectures` > `GPU_ARCHS`.
#[test]
fn architectures_come_from_arch_then_the_manifest_then_gpu_archs() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let with = manifest(tmp.path(), &real, "te", "");
    let text = std::fs::read_to_string(&with).unwrap();
    let without = tmp.path().join("no-archs.toml");
    std::fs::write(&without, text.replace("architectures = [\"gfx942\"]\n", "")).unwrap();
    let plan = |manifest: &Path, arch: Option<&str>| -> Vec<String> {
        let out_dir = tmp.path().join("out");
        let mut command = qola("plan", &hipcc, manifest, &out_dir);
        command.arg("--json").env("GPU_ARCHS", "gfx950");
        if let Some(arch) = arch {
            command.args(["--arch", arch]);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["modules"][0]["compile"]["archs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(plan(&with, None), ["gfx942"], "the manifest over GPU_ARCHS");
    assert_eq!(
        plan(&with, Some("gfx950;gfx942")),
        ["gfx942", "gfx950"],
        "--arch over both"
    );
    assert_eq!(
        plan(&without, None),
        ["gfx950"],
        "GPU_ARCHS without the manifest's"
    );
}

/// AITER's gfx-conditional flags follow the architecture its `get_gfx()` picks, the last of
/// those given: at 05a0d1f `core.py` adds `-D__Float4_e2m1fn_x2` for gfx950, so TE's default
/// `gfx942;gfx950` gets it on every unit and `gfx950;gfx942` does not; the compiles target both,
/// in one order, either way.
#[test]
fn aiter_s_conditional_flags_follow_the_last_architecture_given_as_aiter_picks_it() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let te = manifest(tmp.path(), &real, "te", "");
    let plan = |archs: &str| {
        let mut command = qola("plan", &hipcc, &te, &tmp.path().join("out"));
        command.args(["--json", "--arch", archs]);
        let out = command.output().unwrap();
        assert!(out.status.success(), "{archs}: {}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let module = &json["modules"][0];
        let fp4 = module["core_flags"]["flags_hip"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "-D__Float4_e2m1fn_x2");
        (fp4, module["compile"]["archs"].clone())
    };
    let both = serde_json::json!(["gfx942", "gfx950"]);
    assert_eq!(plan("gfx942;gfx950"), (true, both.clone()));
    assert_eq!(plan("gfx950;gfx942"), (false, both));
}

/// A plan is how one looks at what a build would do, with a compiler the tree cannot use too:
/// with Debian's HIP 5.2 (too old for composable_kernel, and without gfx942) `qola plan` runs the
/// generators and shows what it can (generators, code objects, library key), says the build
/// would be refused and why (`refused` in the JSON, and why the compiles cannot be planned), and
/// exits 1.
#[test]
fn a_plan_with_a_compiler_the_tree_cannot_use_is_made_as_far_as_it_can_and_names_the_refusal() {
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    if !qola_tests::hipcc_available() {
        return;
    }
    let hipcc = which_hipcc();
    let version = qola_tests::run_ok(Command::new(&hipcc).arg("--version"));
    if !version.contains("HIP version: 5.") {
        assert!(
            !qola_tests::in_ci(),
            "CI: Debian's hipcc (HIP 5.2) on PATH: {version}"
        );
        eprintln!("skipping: the hipcc on PATH is not Debian's HIP 5.2: {version}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let te = manifest(tmp.path(), &real, "te", "");
    let run = |json: bool| {
        let mut command = qola("plan", &hipcc, &te, &tmp.path().join("out"));
        if json {
            command.arg("--json");
        }
        command.output().unwrap()
    };
    let out = run(false);
    let (said, words) = (
        stderr(&out),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    );
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "qola plan: the build would be refused: composable_kernel needs HIP >= 6.0; found 5.2"
        ),
        "{said}"
    );
    assert!(
        said.contains("no compile plan with this compiler"),
        "{said}"
    );
    assert!(
        words.starts_with("qola plan: te_libmha_fwd: 3 generators, 32 hsa code objects"),
        "{words}"
    );
    let out = run(true);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        json["refused"][0]
            .as_str()
            .unwrap()
            .starts_with("composable_kernel needs HIP >= 6.0"),
        "{json}"
    );
    assert!(json["modules"][0]["compile"].is_null(), "{json}");
    assert_eq!(
        json["modules"][0]["generators"].as_array().unwrap().len(),
        3
    );
}

/// The Python that runs the generators is checked against what the tree's generators need
/// before any of them runs: a bare venv (no `packaging`, no `setuptools`, which AITER 05a0d1f's
/// generators import through the tree's `chip_info` and `cpp_extension`) gets one message naming
/// each module, not installed, and the command that installs them; nothing was generated.
#[test]
fn a_generators_python_that_falls_short_is_named_before_any_generator_runs() {
    let Some((real, hipcc, tmp, out)) = start("bare python") else {
        return;
    };
    let venv = tmp.path().join("bare");
    qola_tests::run_ok(
        Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let python = venv.join("bin/python3");
    let te = manifest(tmp.path(), &real, "te", "");
    let run = qola("build", &hipcc, &te, &out)
        .env("QOLA_PYTHON", &python)
        .output()
        .unwrap();
    let said = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{said}");
    for needed in [
        format!(
            "the Python that runs AITER's generators, {}, falls short",
            python.display()
        ),
        "packaging (any version) (found: not installed)".to_string(),
        "setuptools (any version) (found: not installed)".to_string(),
        format!(
            "`{} -m pip install 'packaging' 'setuptools'`",
            python.display()
        ),
    ] {
        assert!(said.contains(&needed), "{needed}: {said}");
    }
    assert!(
        !out.join("_qola/gen/libmha_fwd").exists(),
        "no generator ran: {said}"
    );
}

/// The hipcc on `PATH` (Debian's in CI).
fn which_hipcc() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("hipcc"))
                .find(|p| p.is_file())
        })
        .expect("hipcc on PATH")
}

#[test]
fn another_rocm_than_the_manifest_lists_is_a_warning_and_with_require_rocm_an_error() {
    let Some((real, hipcc, tmp, out)) = start("rocm-versions") else {
        return;
    };
    let text = std::fs::read_to_string(manifest(tmp.path(), &real, "te", "")).unwrap();
    let other = tmp.path().join("rocm5.toml");
    std::fs::write(
        &other,
        text.replace(
            "namespace = \"te\"",
            "namespace = \"te\"\nrocm_versions = [\"5\", \"7.1\"]",
        ),
    )
    .unwrap();
    // As in QoLA, the list is informational: one warning naming both, and the plan is made.
    let plan = qola("plan", &hipcc, &other, &out).output().unwrap();
    let text = stderr(&plan);
    assert_eq!(plan.status.code(), Some(0), "{text}");
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rocm_versions"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].starts_with("qola: warning:")
            && warnings[0].contains("ROCm 5 or 7.1")
            && warnings[0].contains("HIP 6.4")
            && warnings[0].contains("--require-rocm"),
        "{text}"
    );
    // Asked to require it: one error, before anything is built.
    let run = qola("build", &hipcc, &other, &out)
        .arg("--require-rocm")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let text = stderr(&run);
    assert!(
        text.contains("ROCm 5 or 7.1") && text.contains("HIP 6.4") && !text.contains("warning"),
        "{text}"
    );
    assert!(!out.join("lib").exists(), "nothing is built: {text}");
}

/// One `qola plan` (or build) of several modules resolves its settings once: the manifest is
/// read once and the compiler asked its `--version` once (a wrapper around the sid toolchain
/// counts), not once per module and again per library.
#[test]
fn a_plan_of_two_modules_asks_the_compiler_its_version_once() {
    let Some((real, hipcc, tmp, out)) = start("version once") else {
        return;
    };
    let counted = tmp.path().join("versions");
    let wrapper = tmp.path().join("hipcc");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" --version \"*) echo asked >> '{}' ;; esac\nexec '{}' \"$@\"\n",
            counted.display(),
            hipcc.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let te = manifest(tmp.path(), &real, "te", BACKWARD);
    let plan = qola("plan", &wrapper, &te, &out).output().unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    let report = String::from_utf8_lossy(&plan.stdout);
    assert!(report.contains("te_libmha_bwd"), "{report}");
    let asked = std::fs::read_to_string(&counted).unwrap_or_default();
    assert_eq!(asked.lines().count(), 1, "{}", stderr(&plan));
}

/// A user's registry (QoLA's format) and its module's files, under `dir`: AITER's asm bf16
/// GEMM (`module_gemm_a16w16_asm`, not in qola's registry) with its PyTorch sources dropped, a
/// wrapper of its own that counts the configs AITER's generator writes, its header and a
/// version script; `extra` is appended to the entry.
fn registry_dir(dir: &Path, extra: &str) -> PathBuf {
    let files = [
        (
            "registry.toml",
            format!(
                "[defaults]\nversion_script = \"exports.lds\"\n\n[module_gemm_a16w16_asm]\ndrop_srcs = [\"gemm_a16w16_asm_pybind.cu\", \"asm_gemm_a16w16.cu\"]\nadd_srcs = [\"src/bf16gemm_configs.cu\"]\nadd_includes = [\"include\"]\nhsa_subdirs = [\"bf16gemm\"]\npublic_headers = [\"include/bf16gemm_configs.h\"]\n{extra}"
            ),
        ),
        (
            "exports.lds",
            "{\n  global:\n    extern \"C++\" { qola::*; };\n  local:\n    *;\n};\n".to_string(),
        ),
        (
            "include/bf16gemm_configs.h",
            "#pragma once\n#include \"qola_common.h\"\nQOLA_NS_BEGIN\nQOLA_EXPORT int bf16gemm_config_count();\nQOLA_NS_END\n".to_string(),
        ),
        (
            "src/bf16gemm_configs.cu",
            "#include <string>\n#include \"asm_bf16gemm_configs.hpp\"\n#include \"bf16gemm_configs.h\"\nQOLA_NS_BEGIN\nint bf16gemm_config_count() { return (int)cfg_bf16gemm_outf32.size(); }\nQOLA_NS_END\n".to_string(),
        ),
    ];
    for (name, text) in files {
        common::write(dir, name, text);
    }
    dir.join("registry.toml")
}

/// A module qola's registry does not know, added by a registry entry alone (the manifest's
/// `[qola] registry`): its generator runs, its wrapper and header come from the registry, its hsa
/// code objects are embedded, and the library exports only `qola::te::`.
#[test]
fn a_module_added_by_a_registry_entry_alone_builds_with_its_api() {
    let Some((real, hipcc, tmp, out)) = start("registry") else {
        return;
    };
    registry_dir(&tmp.path().join("my registry"), "");
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .set("registry", "my registry/registry.toml")
        .archs(&["gfx942"])
        .module("module_gemm_a16w16_asm", "group = \"gemm\"\n")
        .write(tmp.path().join("gemm.toml"));
    let run = qola_build(&hipcc, &manifest, &out);
    assert!(run.status.success(), "{}", stderr(&run));
    // (The build may have prepared the shared tree; what follows writes nothing in it.)
    let tree = mtimes(&fixtures_dir().join("aiter-narrow/csrc"));
    let library = out.join("lib/te_module_gemm_a16w16_asm.so");
    assert_eq!(
        common::exported(&library),
        ["_ZN4qola2te21bf16gemm_config_countEv"],
        "{}",
        stderr(&run)
    );
    assert!(out.join("include/bf16gemm_configs.h").is_file());
    assert!(
        out.join("include/qola_mha_fwd.h").is_file(),
        "qola's headers too"
    );
    // Its one unit (compiled, or from the fixtures' cache by an earlier run).
    assert!(compiled(&run).iter().all(|c| c == "bf16gemm_configs.cu"));
    let plan = qola("plan", &hipcc, &manifest, &out)
        .arg("--json")
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let module = &plan["modules"][0];
    assert_eq!(module["hsa_blobs"], 4, "hsa/gfx942/bf16gemm's code objects");
    assert_eq!(module["group"], "gemm");
    assert_eq!(module["compile"]["units"].as_array().unwrap().len(), 1);
    assert_nothing_written(&tree, &fixtures_dir().join("aiter-narrow/csrc"));
}

/// A registry's mistakes: every one named with its file, line, key and value, and nothing is
/// built; a source that does not exist stops the build before anything compiles; a generator
/// that fails is the module's failure, naming the registry's line.
#[test]
fn a_registry_mistake_names_its_line_and_nothing_is_built() {
    let Some((real, hipcc, tmp, out)) = start("registry mistakes") else {
        return;
    };
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .module("module_gemm_a16w16_asm", "")
        .write(tmp.path().join("gemm.toml"));
    let run = |registry: &Path| {
        qola("build", &hipcc, &manifest, &out)
            .arg("--registry")
            .arg(registry)
            .output()
            .unwrap()
    };
    let wrong = registry_dir(
        &tmp.path().join("wrong"),
        "add_flags_extra_hip = \"-DX\"\nadd_src = []\n",
    );
    let out1 = run(&wrong);
    let text = stderr(&out1);
    assert_eq!(out1.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "{}:10: [module_gemm_a16w16_asm] add_flags_extra_hip",
            wrong.display()
        )) && text.contains(&format!(
            "{}:11: [module_gemm_a16w16_asm] add_src: unknown key",
            wrong.display()
        )),
        "{text}"
    );
    let missing = registry_dir(&tmp.path().join("missing"), "");
    std::fs::remove_file(missing.with_file_name("src/bf16gemm_configs.cu")).unwrap();
    let out2 = run(&missing);
    let text = stderr(&out2);
    assert_eq!(out2.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "{}:6: add_srcs = \"src/bf16gemm_configs.cu\"",
            missing.display()
        )) && text.contains("does not exist"),
        "{text}"
    );
    assert!(!out.join("lib").exists(), "nothing built: {text}");
    let failing = tmp.path().join("failing");
    std::fs::create_dir_all(&failing).unwrap();
    common::write(
        &failing,
        "fail.py",
        "import sys\nsys.exit('no kernels for you')\n",
    );
    let generator = registry_dir(
        &failing,
        &format!(
            "add_blob_gen_cmd = [\"{} --output_dir {{{{}}}}\"]\n",
            failing.join("fail.py").display()
        ),
    );
    let out3 = run(&generator);
    let text = stderr(&out3);
    assert_eq!(out3.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!("{}:10: add_blob_gen_cmd", generator.display()))
            && text.contains("no kernels for you"),
        "{text}"
    );
    assert!(
        !out.join("lib/te_module_gemm_a16w16_asm.so").exists(),
        "{text}"
    );
}

/// TransformerEngine's GEMM manifest (`transformer_engine/common/aiter_gemm/qola_manifest.toml`:
/// namespace te, gfx950, both a4w4 modules) at the pin qola builds.
fn te_gemm_manifest(dir: &Path, real: &qola_tests::RealAiter, arch: &str) -> PathBuf {
    qola_tests::ManifestText::te_gemm(&real.commit, &real.upstream)
        .archs(&[arch])
        .write(dir.join(format!("te_gemm_{arch}.toml")))
}

/// A C++ caller written as TE's `aiter_gemm_a4w4.cpp` calls the API: its own tensor descriptors
/// made into `aiter_tensor_t`, `QOLA_NS(...)` calls, exceptions caught. With no GPU it asks what
/// the kernels refuse before touching one: an unknown instance name, a float32 output.
const TE_GEMM_CALLER: &str = r#"#include <cstdio>
#include <exception>
#include "aiter_tensor.h"
#include "qola_gemm_a4w4.h"

struct Desc { void* ptr; int ndim; int64_t shape[2]; AiterDtype dtype; };

static aiter_tensor_t tensor(const Desc& d) {
  aiter_tensor_t t{};
  t.ptr = d.ptr;
  t.ndim = d.ndim;
  t.numel_ = 1;
  for (int i = 0; i < d.ndim; ++i) {
    t.shape[i] = d.shape[i];
    t.numel_ *= d.shape[i];
  }
  t.strides[0] = d.shape[1];
  t.strides[1] = 1;
  t.dtype_ = d.dtype;
  t.device_id = 0;
  return t;
}

int main() {
  aiter_tensor_t x = tensor({nullptr, 2, {32, 64}, AITER_DTYPE_fp4x2});
  aiter_tensor_t w = tensor({nullptr, 2, {64, 64}, AITER_DTYPE_fp4x2});
  aiter_tensor_t xs = tensor({nullptr, 2, {32, 4}, AITER_DTYPE_fp8_e8m0});
  aiter_tensor_t ws = tensor({nullptr, 2, {64, 4}, AITER_DTYPE_fp8_e8m0});
  aiter_tensor_t y = tensor({nullptr, 2, {32, 64}, AITER_DTYPE_fp16});
  aiter_tensor_t f32 = tensor({nullptr, 2, {32, 64}, AITER_DTYPE_fp32});
  try {
    QOLA_NS(gemm_a4w4_blockscale)(x, w, xs, ws, y, 0, nullptr, "no_such_instance");
  } catch (const std::exception& e) {
    std::printf("blockscale: %s\n", e.what());
  }
  try {
    QOLA_NS(gemm_a4w4_asm)(&x, &w, &xs, &ws, &f32, "", nullptr, 1.0f, 0.0f, 1, -1, nullptr);
  } catch (const std::exception& e) {
    std::printf("asm: %s\n", e.what());
  }
  return 0;
}
"#;

/// A C++ caller written as TE's newest `aiter_a4w4_gemm.cpp` calls qola's C interface (TE
/// #663): `qola_gemm_a4w4.h` alone (no AITER header on its path), `qola_tensor_t` descriptors,
/// `QOLA_C(...)` calls returning a status with the reason in a buffer (here cut to 8 bytes).
const TE_GEMM_C_CALLER: &str = r#"#include <cstdio>
#include "qola_gemm_a4w4.h"

static qola_tensor_t tensor(int64_t rows, int64_t cols, int32_t dtype) {
  qola_tensor_t t{};
  t.ndim = 2;
  t.dtype = dtype;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.strides[0] = cols;
  t.strides[1] = 1;
  return t;
}

int main() {
  std::printf("qola_tensor_t %zu\n", sizeof(qola_tensor_t));
  qola_tensor_t x = tensor(32, 64, QOLA_DTYPE_FP4X2), w = tensor(64, 64, QOLA_DTYPE_FP4X2);
  qola_tensor_t xs = tensor(32, 4, QOLA_DTYPE_E8M0), ws = tensor(64, 4, QOLA_DTYPE_E8M0);
  qola_tensor_t y = tensor(32, 64, QOLA_DTYPE_FP16), f32 = tensor(32, 64, QOLA_DTYPE_FP32);
  char err[512] = {};
  int rc = QOLA_C(gemm_a4w4_blockscale)(&x, &w, &xs, &ws, &y, 0, "no_such_instance", nullptr, err, sizeof(err));
  std::printf("blockscale %d: %s\n", rc, err);
  rc = QOLA_C(gemm_a4w4_asm)(&x, &w, &xs, &ws, &f32, nullptr, "", 1.0f, 0.0f, 1, -1, nullptr, err, sizeof(err));
  std::printf("asm %d: %s\n", rc, err);
  rc = QOLA_C(gemm_a4w4_blockscale)(&x, nullptr, &xs, &ws, &y, 0, nullptr, nullptr, err, sizeof(err));
  std::printf("null %d: %s\n", rc, err);
  qola_tensor_t bad = x;
  bad.dtype = 9;
  rc = QOLA_C(gemm_a4w4_asm)(&bad, &w, &xs, &ws, &y, nullptr, nullptr, 1.0f, 0.0f, 1, -1, nullptr, err, sizeof(err));
  std::printf("dtype %d: %s\n", rc, err);
  char small[8];
  rc = QOLA_C(gemm_a4w4_asm)(nullptr, &w, &xs, &ws, &y, nullptr, nullptr, 1.0f, 0.0f, 1, -1, nullptr, small, sizeof(small));
  std::printf("cut %d: %s\n", rc, small);
  return 0;
}
"#;

/// TE's FP4 GEMM (issue 35): both a4w4 modules build for gfx950 with QoLA's layout, export only
/// `qola::te::` and `qola_te_*`, link into TE-shaped callers of the C++ API and of the C
/// interface (issue 44) that run (no GPU: the kernels' own checks answer); a second build compiles nothing; the same tree elsewhere (`--skip-checkout`, as TE's
/// CMake runs it) reuses every unit, and an edit of one instance's generator input recompiles
/// that instance alone; `qola plan` shows the units and the hsa code objects.
#[test]
fn tes_fp4_gemm_modules_build_link_a_te_caller_and_recompile_one_edited_instance_alone() {
    let Some((real, hipcc, tmp, out)) = start("gemm a4w4") else {
        return;
    };
    let te = te_gemm_manifest(tmp.path(), &real, "gfx950");
    let first = qola_build(&hipcc, &te, &out);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        "Build complete: 2/2 succeeded, 0 failed.\n"
    );
    let blockscale = out.join("lib/te_libgemm_a4w4_blockscale.so");
    let asm = out.join("lib/te_libgemm_a4w4_asm.so");
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    assert_eq!(
        sorted(common::exported(&blockscale)),
        [
            "_ZN4qola2te20gemm_a4w4_blockscaleER14aiter_tensor_tS2_S2_S2_S2_iP12ihipStream_tNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
            "qola_te_gemm_a4w4_blockscale",
        ],
    );
    assert_eq!(
        sorted(common::exported(&asm)),
        [
            "_ZN4qola2te13gemm_a4w4_asmEP14aiter_tensor_tS2_S2_S2_S2_PKcS2_ffiiP12ihipStream_t",
            "qola_te_gemm_a4w4_asm",
        ],
    );
    for header in [
        "qola_gemm_a4w4.h",
        "qola_gemm_a4w4_blockscale.h",
        "qola_gemm_a4w4_asm.h",
    ] {
        assert!(out.join("include").join(header).is_file(), "{header}");
    }
    for table in [
        "a4w4_blockscale_tuned_gemm.csv",
        "a4w4_blockscale_untuned_gemm.csv",
    ] {
        assert!(out.join("configs").join(table).is_file(), "{table}");
    }

    // TE's caller: the tree's csrc/include and the output's include, linked by -l:<file>.
    let tree = fixtures_dir().join("aiter-narrow");
    let lib = out.join("lib");
    // A caller's output, run without a GPU: its source `text` linked against both libraries.
    let caller_says = |name: &str, text: &str, includes: &[&Path]| {
        let (source, program) = (
            tmp.path().join(format!("{name}.cpp")),
            tmp.path().join(name),
        );
        std::fs::write(&source, text).unwrap();
        common::link_caller(
            &hipcc,
            &source,
            includes,
            &lib,
            &["te_libgemm_a4w4_blockscale.so", "te_libgemm_a4w4_asm.so"],
            &program,
        );
        let run = qola_tests::in_sid_root(&hipcc, &program, &[tmp.path(), &fixtures_dir()]);
        assert!(run.status.success(), "{}", common::text(&run));
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    assert_eq!(
        caller_says(
            "te_gemm",
            TE_GEMM_CALLER,
            &[&tree.join("csrc/include"), &out.join("include")]
        ),
        "blockscale: gemm_a4w4_blockscale: kernel 'no_such_instance' is not among the instances this library was generated with\nasm: gemm_a4w4_asm only support BFloat16 output now!\n",
    );
    // TE's newest caller (its C interface, TE #663): only qola's include directory, C types,
    // a status and an error buffer; the same refusals, as statuses and messages.
    assert_eq!(
        caller_says("te_gemm_c", TE_GEMM_C_CALLER, &[&out.join("include")]),
        "qola_tensor_t 152\nblockscale 1: gemm_a4w4_blockscale: kernel 'no_such_instance' is not among the instances this library was generated with\nasm 1: gemm_a4w4_asm only support BFloat16 output now!\nnull 1: null tensor descriptor: WQ\ndtype 1: A: unknown dtype 9 (a qola_dtype_t is 0 to 6)\ncut 1: null te\n",
    );

    // A second build compiles nothing.
    let second = qola_build(&hipcc, &te, &out);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(
        compiled(&second),
        Vec::<String>::new(),
        "{}",
        stderr(&second)
    );

    // The same tree elsewhere, used as it is (TE's NVTE_AITER_SOURCE_DIR): every unit reused.
    let copy = tmp.path().join("aiter elsewhere");
    common::copy_checkout(&tree, &copy);
    let elsewhere = out.with_file_name("gemm a4w4, elsewhere");
    let _ = std::fs::remove_dir_all(&elsewhere);
    let skip = |out: &Path| {
        qola_at("build", &hipcc, &te, &copy, out)
            .arg("--skip-checkout")
            .output()
            .unwrap()
    };
    let third = skip(&elsewhere);
    assert!(third.status.success(), "{}", stderr(&third));
    assert_eq!(compiled(&third), Vec::<String>::new(), "{}", stderr(&third));

    // One instance's generator input (the first tile's wave map, not in its name): its two
    // units (bf16 and fp16 output) get new keys (no longer cached, or cached under another key
    // by an earlier run of this test), no other unit does, and the build compiles nothing else.
    let blockscale_keys = || {
        let plan = qola_at("plan", &hipcc, &te, &copy, &elsewhere)
            .args(["--skip-checkout", "--json"])
            .output()
            .unwrap();
        assert!(plan.status.success(), "{}", stderr(&plan));
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let units = plan["modules"][0]["compile"]["units"]
            .as_array()
            .unwrap()
            .clone();
        units
            .iter()
            .map(|u| {
                let source = u["source"].as_str().unwrap();
                let name = source.rsplit('/').next().unwrap().to_string();
                // The object's key where it is cached, none where the unit would compile.
                (name, u["key"].as_str().map(String::from))
            })
            .collect::<std::collections::BTreeMap<String, Option<String>>>()
    };
    let before = blockscale_keys();
    assert!(
        before.values().all(Option::is_some),
        "all built: {before:?}"
    );
    let common_py = copy.join("csrc/ck_gemm_a4w4_blockscale/gemm_a4w4_blockscale_common.py");
    let text = std::fs::read_to_string(&common_py).unwrap();
    let first_tile =
        "0:  kernelInstance(256,     64,   128,    128,  16,  16,  16,   16,   4,    2,";
    assert!(text.contains(first_tile), "AITER's first a4w4 tile");
    let edited = text.replacen(
        first_tile,
        "0:  kernelInstance(256,     64,   128,    128,  16,  16,  16,   16,   2,    4,",
        1,
    );
    std::fs::write(&common_py, edited).unwrap();
    let after = blockscale_keys();
    assert_eq!(
        before.len(),
        7,
        "4 instances, the dispatch, gemm_common, the API: {before:?}"
    );
    let tile =
        "a4w4_blockscale_256x64x128x128_16x16_16x16_8x32x1_8x32x1_1x32x1x8_8_2x2_intrawave_v3";
    let edited_units = [
        format!("{tile}_dFP32_eBF16.cpp"),
        format!("{tile}_dFP32_eFP16.cpp"),
    ];
    let changed: Vec<&String> = after
        .iter()
        .filter(|(name, key)| before.get(*name) != Some(*key))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(changed, edited_units.iter().collect::<Vec<_>>());
    let fourth = skip(&elsewhere);
    assert!(fourth.status.success(), "{}", stderr(&fourth));
    // The library was relinked with the edited instances' objects: the summary says so.
    assert!(
        stderr(&fourth).contains("; wrote lib/te_libgemm_a4w4_blockscale.so"),
        "{}",
        stderr(&fourth)
    );
    assert!(
        compiled(&fourth).iter().all(|c| edited_units.contains(c)),
        "{}",
        stderr(&fourth)
    );

    // The plan of the asm module: its units and hsa code objects (the blockscale's units above).
    let plan = qola("plan", &hipcc, &te, &out)
        .arg("--json")
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let asm = &plan["modules"][1];
    assert_eq!(asm["md_name"], "te_libgemm_a4w4_asm");
    assert_eq!(
        asm["compile"]["units"].as_array().unwrap().len(),
        2,
        "asm_gemm_a4w4.cu and the API"
    );
    assert_eq!(asm["hsa_blobs"], 35, "hsa/gfx950/f4gemm's code objects");
}

/// The a4w4 modules asked for where they cannot be built: for gfx942 (their kernels are
/// gfx950's), and at an AITER without their sources; each refusal names the module, the
/// architecture or the missing file and the fix, and no library is built. A CK filter the
/// module's generators cannot take is a warning.
#[test]
fn tes_fp4_gemm_modules_are_refused_for_another_architecture_or_an_aiter_without_them() {
    let Some((real, hipcc, tmp, out)) = start("gemm a4w4 refused") else {
        return;
    };
    let gfx942 = qola_build(&hipcc, &te_gemm_manifest(tmp.path(), &real, "gfx942"), &out);
    assert!(!gfx942.status.success());
    for module in ["libgemm_a4w4_blockscale", "libgemm_a4w4_asm"] {
        assert!(
            stderr(&gfx942).contains(&format!("module {module}: its kernels exist for gfx950 only (per qola's registry (qola-build/cpp_api/registry.toml)), not gfx942: build it for gfx950 (--arch, [build] architectures), or drop the module from the manifest")),
            "{}",
            stderr(&gfx942)
        );
    }
    assert!(!out.join("lib").exists());

    // A CK filter for the asm module, whose generator takes none: said, not ignored.
    let plan = qola(
        "plan",
        &hipcc,
        &te_gemm_manifest(tmp.path(), &real, "gfx950"),
        &out,
    )
    .env("QOLA_CK_FILTER_LIBGEMM_A4W4_ASM", "x*")
    .output()
    .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(
        stderr(&plan).contains("te_libgemm_a4w4_asm: the CK filter \"x*\" narrows nothing: no generator of libgemm_a4w4_asm takes a --filter"),
        "{}",
        stderr(&plan)
    );

    let without = tmp.path().join("aiter without a4w4");
    common::copy_checkout(&fixtures_dir().join("aiter-narrow"), &without);
    std::fs::remove_dir_all(without.join("csrc/ck_gemm_a4w4_blockscale")).unwrap();
    std::fs::remove_file(without.join("csrc/py_itfs_cu/asm_gemm_a4w4.cu")).unwrap();
    let run = qola(
        "build",
        &hipcc,
        &te_gemm_manifest(tmp.path(), &real, "gfx950"),
        &out,
    )
    .arg("-a")
    .arg(&without)
    .arg("--skip-checkout")
    .output()
    .unwrap();
    assert!(!run.status.success());
    for (module, file) in [
        (
            "libgemm_a4w4_blockscale",
            "csrc/ck_gemm_a4w4_blockscale/gemm_a4w4_blockscale.cu",
        ),
        ("libgemm_a4w4_asm", "csrc/py_itfs_cu/asm_gemm_a4w4.cu"),
    ] {
        assert!(
            stderr(&run).contains(&format!("AITER module {module}, field srcs: `{}`: no such file in the AITER tree {}: this AITER does not have it", without.join(file).display(), without.display())),
            "{}",
            stderr(&run)
        );
    }
    assert!(!out.join("lib").exists());
}
