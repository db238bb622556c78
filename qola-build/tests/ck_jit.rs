//! `qola build` under ROCm's ck-jit (TransformerEngine's default attention build), on the real
//! AITER tree with the sid toolchain:
//! - qola's side of ck-jit's contract, checked from outside (in CI): ck-jit's environment, a
//!   stand-in for its interceptor that records every call (`tests/fake/ck-jit-hipcc`), and what
//!   qola gave it (paths, one call per unit, the link's name and flags, nothing cached);
//! - the real ck-jit's `full` and `quick`, when `QOLA_TEST_CK_JIT_DIR` names a checkout of
//!   ROCm/ck-jit (CI cannot fetch it: the test says it skipped).

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER, fixtures_dir};

const QOLA: &str = env!("CARGO_BIN_EXE_qola");

/// A checkout of the real tree prepared by qola (kept in the fixtures), copied to `dir`: ck-jit
/// patches CK's generator in the tree it is given, so each test has its own.
fn tree_copy(hipcc: &Path, manifest: &Path, dir: &Path) -> PathBuf {
    let fixture = fixtures_dir().join("aiter-ck-jit");
    let mut checkout = common::qola_command(&["GPU_ARCHS"]);
    checkout
        .args(["checkout", "-m"])
        .arg(manifest)
        .arg("-a")
        .arg(&fixture)
        .env("HIPCC", hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"));
    qola_tests::run_ok(&mut checkout);
    let tree = dir.join("aiter");
    common::copy_checkout(&fixture, &tree);
    tree
}

/// What ck-jit's hints patch gives CK's forward generator, for the stand-in (which cannot have
/// ck-jit's patch), written here: the API trait carries its kernel's file name
/// (`kernel_filename`), and a `//jit_kernel: <file>` line goes before each instance's dispatch.
fn add_forward_hints(tree: &Path) {
    let path =
        tree.join("3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py");
    let mut text = std::fs::read_to_string(&path).unwrap();
    let insert_after = |text: &mut String, line: &str, added: &str| {
        let at = text.find(line).unwrap_or_else(|| panic!("CK's {line:?}")) + line.len();
        text.insert_str(at, added);
    };
    insert_after(
        &mut text,
        "class FmhaFwdApiTrait:\n",
        "    kernel_filename: str\n",
    );
    insert_after(
        &mut text,
        "        return FmhaFwdApiTrait(\n",
        "            kernel_filename=self.filename,\n",
    );
    let dispatch = "inners += FMHA_FWD_API_INNER_DISPATCH.format(";
    let at = text.find(dispatch).expect("CK's forward dispatch");
    let line_start = text[..at].rfind('\n').unwrap() + 1;
    let indent = text[line_start..at].to_string();
    text.insert_str(
        line_start,
        &format!("{indent}inners += f\"//jit_kernel: {{trait.kernel_filename}}\\n\"\n"),
    );
    std::fs::write(&path, text).unwrap();
}

fn manifest(dir: &Path, real: &qola_tests::RealAiter, backward: bool) -> PathBuf {
    let mut text = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .narrow_forward();
    if backward {
        text = text.module(
            "libmha_bwd",
            "group = \"mha\"\nmode = \"cpp_itfs\"\nreceipt = 700\n",
        );
    }
    text.write(dir.join("ck-jit.toml"))
}

/// ck-jit's environment around `interceptor` as `$ROCM_PATH/bin/hipcc`: a fake ROCm in `tmp`
/// whose other entries are the sid toolchain's, `CK_JIT_TMP_DIR`, `CK_JIT_HIPCC`,
/// `CK_JIT_AITER_DIR`, and a `HIPCC` that must not be used.
fn ck_jit_env(command: &mut Command, tmp: &Path, interceptor: &Path, hipcc: &Path, tree: &Path) {
    let real_rocm = qola_tests::sid_rocm(hipcc);
    let rocm = tmp.join("rocm");
    std::fs::create_dir_all(rocm.join("bin")).unwrap();
    for entry in std::fs::read_dir(&real_rocm).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "bin" {
            let _ = std::os::unix::fs::symlink(entry.path(), rocm.join(entry.file_name()));
        }
    }
    let _ = std::os::unix::fs::symlink(interceptor, rocm.join("bin/hipcc"));
    let scratch = tmp.join("ck-jit-tmp");
    std::fs::create_dir_all(&scratch).unwrap();
    command
        .env("ROCM_PATH", &rocm)
        .env("CK_JIT_TMP_DIR", &scratch)
        .env("CK_JIT_HIPCC", real_rocm.join("bin/hipcc"))
        .env("CK_JIT_AITER_DIR", tree)
        .env("HIPCC", "/bin/false");
}

/// `qola build --skip-checkout` of `manifest`'s modules from `tree` into `out`, the narrow CK
/// filters, qola's cache in the fixtures.
fn build(manifest: &Path, tree: &Path, out: &Path) -> Command {
    let mut command = common::qola_command(&["GPU_ARCHS"]);
    command
        .args(["build", "--skip-checkout", "--arch", "gfx942", "-m"])
        .arg(manifest)
        .arg("-a")
        .arg(tree)
        .arg("-o")
        .arg(out)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
        .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER)
        .env("QOLA_CK_FILTER_LIBMHA_BWD", NARROW_BWD_FILTER);
    command
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The stand-in's record: each call's kind and words.
fn calls(scratch: &Path) -> Vec<(String, Vec<String>)> {
    std::fs::read_to_string(scratch.join("calls.ndjson"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let argv = v["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            (v["kind"].as_str().unwrap().to_string(), argv)
        })
        .collect()
}

/// The defined global symbols of a shared library's dynamic table, demangled.
fn exported(library: &Path) -> Vec<String> {
    symbols(library, &["-D", "--defined-only"])
}

/// The undefined symbols of a library, demangled.
fn undefined(library: &Path) -> Vec<String> {
    symbols(library, &["--undefined-only"])
}

/// The names `nm -C <options>` lists for `library`.
fn symbols(library: &Path, options: &[&str]) -> Vec<String> {
    let out = Command::new("nm")
        .arg("-C")
        .args(options)
        .arg(library)
        .output()
        .unwrap();
    assert!(out.status.success(), "nm {}", library.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            // `<address> <type> <name>`, or `<type> <name>` for an undefined one.
            let rest = match l.split_once(' ') {
                Some((first, rest)) if first.len() > 1 => rest,
                _ => l,
            };
            rest.split_once(' ').map(|(_, name)| name.to_string())
        })
        .collect()
}

fn value_after<'a>(argv: &'a [String], option: &str) -> Option<&'a str> {
    let at = argv.iter().position(|a| a == option)?;
    argv.get(at + 1).map(String::as_str)
}

/// What the stand-in's tests start from: the sid toolchain, a temporary directory, the narrow
/// forward's manifest, a tree of their own with ck-jit's hints in CK's forward generator, the
/// output directory and its library. `None` (the test skips) without the tree or the toolchain,
/// outside CI.
struct Forward {
    hipcc: PathBuf,
    tmp: tempfile::TempDir,
    manifest: PathBuf,
    tree: PathBuf,
    out: PathBuf,
    library: PathBuf,
}

fn forward() -> Option<Forward> {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let manifest = manifest(tmp.path(), &real, false);
    let tree = tree_copy(&hipcc, &manifest, tmp.path());
    add_forward_hints(&tree);
    let out = tmp.path().join("out");
    let library = out.join("lib/te_libmha_fwd.so");
    Some(Forward {
        hipcc,
        tmp,
        manifest,
        tree,
        out,
        library,
    })
}

#[test]
fn under_ck_jit_each_ck_unit_goes_to_its_interceptor_once_every_run_and_the_library_links_to_its_final_name()
 {
    let Some(Forward {
        hipcc,
        tmp,
        manifest,
        tree,
        out,
        library,
    }) = forward()
    else {
        return;
    };
    for round in ["first", "second"] {
        let round_dir = tmp.path().join(round);
        let mut command = build(&manifest, &tree, &out);
        ck_jit_env(
            &mut command,
            &round_dir,
            &qola_tests::fake_ck_jit_interceptor(),
            &hipcc,
            &tree,
        );
        let run = command.output().unwrap();
        let text = said(&run);
        assert!(run.status.success(), "{round}: {text}");
        assert!(
            text.contains("HIPCC=/bin/false is not used under ck-jit"),
            "{text}"
        );
        let calls = calls(&round_dir.join("ck-jit-tmp"));
        let kinds: Vec<&str> = calls.iter().map(|(k, _)| k.as_str()).collect();
        // Only the CK units and the link: qola's probes and its other units asked the real
        // compiler, never the interceptor.
        assert_eq!(
            kinds.iter().filter(|k| **k == "blob").count(),
            4,
            "{round}: the 4 narrow instances: {kinds:?}"
        );
        assert_eq!(
            kinds.iter().filter(|k| **k == "api").count(),
            1,
            "{kinds:?}"
        );
        assert_eq!(
            kinds.iter().filter(|k| **k == "link").count(),
            1,
            "{kinds:?}"
        );
        assert_eq!(kinds.len(), 6, "{round}: nothing else: {kinds:?}");
        for (kind, argv) in calls.iter().filter(|(k, _)| k != "link") {
            assert_eq!(
                argv.iter().filter(|a| *a == "-c").count(),
                1,
                "{kind}: {argv:?}"
            );
            let source = value_after(argv, "-c").unwrap();
            assert!(source.contains("/blob/"), "{kind}: {source}");
            assert!(Path::new(value_after(argv, "-o").unwrap()).is_absolute());
            for word in argv {
                assert!(
                    ![
                        "-MD",
                        "-MF",
                        "-include-pch",
                        "--cuda-device-only",
                        "--cuda-host-only"
                    ]
                    .contains(&word.as_str()),
                    "{kind}: no {word} the interceptor would replay: {argv:?}"
                );
                assert_ne!(word, "-I", "{kind}: -I attached to its directory: {argv:?}");
                if let Some(dir) = word.strip_prefix("-I") {
                    assert!(Path::new(dir).is_absolute(), "{kind}: {word}");
                }
            }
            assert!(
                argv.iter()
                    .any(|a| *a == format!("-I{}/csrc/include", tree.display())),
                "{kind}: the tree named as ck-jit names it: {argv:?}"
            );
        }
        let link = &calls.iter().find(|(k, _)| k == "link").unwrap().1;
        assert_eq!(value_after(link, "-o"), Some(library.to_str().unwrap()));
        assert!(
            link.iter().any(|a| a.starts_with("-Wl,--version-script=")),
            "{link:?}"
        );
        assert!(
            link.contains(&"--offload-arch=gfx942".to_string()),
            "{link:?}"
        );
        assert!(!link.contains(&"-Xlinker".to_string()), "{link:?}");
        assert!(
            text.contains("5 CK units given to its interceptor"),
            "{round}: {text}"
        );
        if round == "second" {
            assert!(text.contains("0 of 3 other units compiled"), "{text}");
        }
        assert!(
            !text.contains("nothing changed in the output directory"),
            "{text}"
        );
    }
    let exports = exported(&library);
    assert!(
        !exports.is_empty() && exports.iter().all(|s| s.starts_with("qola::te::")),
        "{exports:?}"
    );
    // Nothing the interceptor answered is in qola's cache: no empty object, and the
    // ahead-of-time link record of the library is gone (a later build links its own).
    let objects = fixtures_dir().join("cache/hip/objects");
    for entry in std::fs::read_dir(&objects).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "o") {
            assert!(
                std::fs::metadata(&path).unwrap().len() > 0,
                "{}",
                path.display()
            );
        }
    }
    assert!(
        !out.join("_qola/build/te_libmha_fwd/te_libmha_fwd.so.inputs")
            .exists()
    );
    // The ahead-of-time build's CK sources are apart from ck-jit's blob/ directories.
    assert!(!out.join("_qola/gen/libmha_fwd").exists());
    // The stand-in links the dispatcher's callers without it (ck-jit compiles it); a build
    // without ck-jit afterwards links its own library, with CK's dispatcher compiled in.
    assert!(
        undefined(&library)
            .iter()
            .any(|s| s.starts_with("fmha_fwd("))
    );
    let mut ahead_of_time = build(&manifest, &tree, &out);
    ahead_of_time.env("HIPCC", &hipcc);
    let text = qola_tests::run_ok(&mut ahead_of_time);
    assert!(!text.contains("under ck-jit"), "{text}");
    assert!(
        !undefined(&library)
            .iter()
            .any(|s| s.starts_with("fmha_fwd(")),
        "{text}"
    );
}

#[test]
fn under_ck_jit_a_failing_link_or_a_vanished_scratch_is_named_and_the_library_is_left_as_it_was() {
    let Some(Forward {
        hipcc,
        tmp,
        manifest,
        tree,
        out,
        library,
    }) = forward()
    else {
        return;
    };
    let interceptor = qola_tests::fake_ck_jit_interceptor();
    let mut first = build(&manifest, &tree, &out);
    ck_jit_env(
        &mut first,
        &tmp.path().join("ok"),
        &interceptor,
        &hipcc,
        &tree,
    );
    qola_tests::run_ok(&mut first);
    let before = std::fs::read(&library).unwrap();

    let mut failing = build(&manifest, &tree, &out);
    ck_jit_env(
        &mut failing,
        &tmp.path().join("fail"),
        &interceptor,
        &hipcc,
        &tree,
    );
    failing.env("CK_JIT_FAKE_FAIL", "-shared");
    let run = failing.output().unwrap();
    let text = said(&run);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(
        text.contains("under ck-jit: ck-jit's link of te_libmha_fwd.so"),
        "{text}"
    );
    assert!(text.contains("failing on -shared as asked"), "{text}");
    assert_eq!(
        std::fs::read(&library).unwrap(),
        before,
        "the library put back"
    );
    let lib_dir: Vec<_> = std::fs::read_dir(out.join("lib")).unwrap().collect();
    assert_eq!(lib_dir.len(), 1, "nothing set aside is left");

    let mut vanished = build(&manifest, &tree, &out);
    let gone = tmp.path().join("gone");
    ck_jit_env(&mut vanished, &gone, &interceptor, &hipcc, &tree);
    std::fs::remove_dir_all(gone.join("ck-jit-tmp")).unwrap();
    let record = std::fs::read(out.join("manifest.json")).unwrap();
    let run = vanished.output().unwrap();
    let text = said(&run);
    assert!(!run.status.success(), "{text}");
    assert!(text.contains("ck-jit's scratch vanished"), "{text}");
    assert_eq!(std::fs::read(&library).unwrap(), before);
    assert_eq!(
        std::fs::read(out.join("manifest.json")).unwrap(),
        record,
        "nothing written"
    );
}

/// ck-jit's `full` as TransformerEngine's CMake runs it, with the stand-in for its interceptor:
/// its tmp dir (`<bin>/ck_jit`) removed and made again (`shutil.rmtree`), then `qola build
/// --skip-checkout` of `manifest` in ck-jit's environment, qola's output inside the tmp dir
/// (`--qola-output <bin>/ck_jit/qola`). [`install_taken`] is what ck-jit does after it.
fn te_full_command(f: &Forward, manifest: &Path, bin: &Path) -> Command {
    let tmp = bin.join("ck_jit");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).unwrap();
    }
    std::fs::create_dir_all(&tmp).unwrap();
    let mut command = build(manifest, &f.tree, &tmp.join("qola"));
    let interceptor = qola_tests::fake_ck_jit_interceptor();
    ck_jit_env(&mut command, &tmp, &interceptor, &f.hipcc, &f.tree);
    command
}

/// ck-jit's install after its `full` ran in `bin`: each library its post-build took copied into
/// `install` with its mtime (`shutil.copy2`).
fn install_taken(bin: &Path, install: &Path) {
    std::fs::create_dir_all(install).unwrap();
    for lib in ["libmha_fwd", "libmha_bwd"] {
        let state = bin
            .join("ck_jit/ck-jit-tmp")
            .join(lib)
            .join("ck_jit_quick_rebuild.json");
        let Ok(text) = std::fs::read_to_string(&state) else {
            continue;
        };
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let built = PathBuf::from(value["out_so"].as_str().unwrap());
        let installed = install.join(built.file_name().unwrap());
        std::fs::copy(&built, &installed).unwrap();
        let mtime = std::fs::metadata(&built).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(&installed)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }
}

/// [`te_full_command`] run to its end, then [`install_taken`]. Returns what qola said.
fn te_full(f: &Forward, manifest: &Path, bin: &Path, install: &Path) -> String {
    let said = qola_tests::run_ok(&mut te_full_command(f, manifest, bin));
    install_taken(bin, install);
    said
}

/// Every file under `dir`: its bytes and mtime, by its path under `dir`.
fn files_as_they_are(
    dir: &Path,
) -> std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let path = entry.path();
                let mtime = entry.metadata().unwrap().modified().unwrap();
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                files.insert(rel, (std::fs::read(&path).unwrap(), mtime));
            }
        }
    }
    files
}

/// The paths whose bytes or mtime differ between two [`files_as_they_are`], or that only one
/// has.
fn changed(
    before: &std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>,
    after: &std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>,
) -> Vec<String> {
    let paths: std::collections::BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| {
            let how = match (before.get(p), after.get(p)) {
                (Some((a, _)), Some((b, _))) if a != b => "bytes",
                (Some(_), Some(_)) => "mtime",
                (None, _) => "new",
                (_, None) => "gone",
            };
            format!("{} ({how})", p.display())
        })
        .collect()
}

/// [`changed`], less qola's work files (`_qola/`) that an earlier run wrote and a later one did
/// not: ck-jit removes its tmp dir at every run, and a run that finds everything cached (a
/// compile log, a compiler probe's scratch) has no work to write again. No consumer reads them;
/// a work file both runs have must still be as it was.
fn changed_for_consumers(
    before: &std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>,
    after: &std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)>,
) -> Vec<String> {
    changed(before, after)
        .into_iter()
        .filter(|c| !(c.starts_with("_qola/") && c.ends_with(" (gone)")))
        .collect()
}

/// TransformerEngine's default build, reconfigured with nothing changed: ck-jit's `full` again
/// with TE's exact arguments (its tmp dir removed, qola's output inside it) leaves every file
/// qola writes (but work files of `_qola/` with no work to redo) and every library ck-jit
/// installs with the bytes and mtime it had, so a TE-shaped
/// consumer (`tests/te-ck-jit-consumer`: an object including `qola_mha_fwd.h`, a shared library
/// linking `-l:te_libmha_fwd.so` from the install dir) has nothing to do; a manifest flag changed
/// gives a new library, which the consumer relinks, and nothing else.
#[test]
fn a_te_reconfigure_under_ck_jit_rewrites_nothing_its_consumer_has_nothing_to_do_and_a_changed_flag_relinks_it()
 {
    let Some(f) = forward() else {
        return;
    };
    let (Some(cmake), Some(ninja)) = (
        qola_tests::tool("cmake", "cmake"),
        qola_tests::tool("ninja", "ninja-build"),
    ) else {
        return;
    };
    let bin = f.tmp.path().join("te-build");
    let install = f.tmp.path().join("te-install");
    let output = bin.join("ck_jit/qola");
    let consumer = f.tmp.path().join("consumer");
    let configure = || {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/te-ck-jit-consumer");
        qola_tests::run_ok(
            Command::new(&cmake)
                .args(["-G", "Ninja", "-S"])
                .arg(&source)
                .arg("-B")
                .arg(&consumer)
                .arg(format!(
                    "-DQOLA_INCLUDE_DIR={}",
                    output.join("include").display()
                ))
                .arg(format!("-DINSTALL_DIR={}", install.display()))
                .arg(format!("-DAITER_ROOT={}", f.tree.display()))
                .arg(format!("-DCMAKE_CXX_COMPILER={}", f.hipcc.display())),
        )
    };
    let ninja_explain = || {
        qola_tests::run_ok(
            Command::new(&ninja)
                .arg("-C")
                .arg(&consumer)
                .args(["-n", "-d", "explain"]),
        )
    };
    te_full(&f, &f.manifest, &bin, &install);
    configure();
    qola_tests::run_ok(Command::new(&ninja).arg("-C").arg(&consumer));
    let (output_was, installed_was) = (files_as_they_are(&output), files_as_they_are(&install));

    common::tick();
    let said = te_full(&f, &f.manifest, &bin, &install);
    assert!(said.contains("mtimes are put back"), "{said}");
    let (output_now, installed_now) = (files_as_they_are(&output), files_as_they_are(&install));
    assert_eq!(
        changed_for_consumers(&output_was, &output_now),
        Vec::<String>::new(),
        "{said}"
    );
    assert_eq!(
        changed(&installed_was, &installed_now),
        Vec::<String>::new()
    );
    configure();
    let explain = ninja_explain();
    assert!(explain.contains("no work to do"), "{explain}");

    // A flag of the module changed: a new library (a new mtime), relinked; the headers are
    // the same, so the object is not compiled again.
    let real = qola_tests::real_aiter().unwrap();
    let flagged = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .module(
            "libmha_fwd",
            "group = \"mha\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\nflags_extra_hip = [\"'-DQOLA_TE_SHAPED_CHANGE=1'\"]\n",
        )
        .write(f.tmp.path().join("flagged.toml"));
    common::tick();
    te_full(&f, &flagged, &bin, &install);
    let installed = files_as_they_are(&install);
    assert_eq!(
        changed(&installed_now, &installed),
        vec!["te_libmha_fwd.so (bytes)".to_string()]
    );
    assert_eq!(
        changed(&output_now, &files_as_they_are(&output))
            .iter()
            .filter(|p| p.starts_with("include/"))
            .count(),
        0,
        "the public headers are as they were"
    );
    configure();
    let explain = ninja_explain();
    assert!(
        explain.contains("libck_fused_attn.so"),
        "relinked: {explain}"
    );
    assert!(
        !explain.contains("ck_fused_attn_fwd.cpp.o is dirty"),
        "not compiled again: {explain}"
    );
}

/// CK's forward generator in a tree, where ck-jit's hints go.
const FORWARD_GENERATOR: &str =
    "3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py";

/// `qola checkout` of `tree` (TransformerEngine's `qola_checkout_aiter`): its output.
fn checkout(manifest: &Path, tree: &Path, hipcc: &Path) -> Output {
    let mut command = common::qola_command(&["GPU_ARCHS"]);
    command
        .args(["checkout", "-m"])
        .arg(manifest)
        .arg("-a")
        .arg(tree)
        .env("HIPCC", hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"));
    command.output().unwrap()
}

/// TransformerEngine's configure after a ck-jit `full` killed at any point. A run killed (its
/// whole process group, as a CI timeout or Ctrl-C does) during qola's codegen, while qola gives
/// the interceptor its CK units, or at the link leaves ck-jit's hints applied in CK and its tmp
/// dir half written; the next configure's checkout undoes the hints (saying so, exit 0), and the
/// next `full` gets past the point where the last one died, until one completes.
#[test]
fn a_ck_jit_full_killed_at_any_point_leaves_nothing_that_blocks_the_next_configure() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let Some(f) = forward() else {
        return;
    };
    let prepared =
        std::fs::read(fixtures_dir().join("aiter-ck-jit").join(FORWARD_GENERATOR)).unwrap();
    // A Python that kills its process group when it is asked to run CK's generator.
    let python = f.tmp.path().join("python-killing-codegen");
    std::fs::write(
        &python,
        "#!/bin/sh\ncase \"$*\" in *01_fmha/generate.py*) kill -KILL 0 ;; esac\nexec python3 \"$@\"\n",
    )
    .unwrap();
    qola_tests::run_ok(Command::new("chmod").arg("+x").arg(&python));
    let (bin, install) = (
        f.tmp.path().join("te-build"),
        f.tmp.path().join("te-install"),
    );
    // Where each run is killed, by what variable; the last one runs to its end.
    let kills = [
        Some(("codegen", "QOLA_PYTHON", python.as_path())),
        Some(("the CK units", "CK_JIT_FAKE_KILL", Path::new("blob"))),
        Some(("the link", "CK_JIT_FAKE_KILL", Path::new("link"))),
        None,
    ];
    // The tree starts as a killed run leaves it: ck-jit's hints applied (`forward`).
    for kill in kills {
        let point = kill.map(|(point, _, _)| point);
        let out = checkout(&f.manifest, &f.tree, &f.hipcc);
        let text = said(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "after a kill at {point:?}: {text}"
        );
        assert!(
            text.contains("ck-jit's codegen hints were left applied by a ck-jit run that did not end: undone in")
                && text.contains(FORWARD_GENERATOR),
            "{text}"
        );
        assert_eq!(
            std::fs::read(f.tree.join(FORWARD_GENERATOR)).unwrap(),
            prepared
        );
        // ck-jit applies its hints, then runs qola in a process group of its own.
        add_forward_hints(&f.tree);
        let mut command = te_full_command(&f, &f.manifest, &bin);
        if let Some((_, variable, value)) = kill {
            command.env(variable, value);
        }
        let status = command.process_group(0).status().unwrap();
        let Some(point) = point else {
            assert!(status.success());
            break;
        };
        assert_eq!(status.signal(), Some(9), "killed at {point}");
        let calls: Vec<String> = calls(&bin.join("ck_jit/ck-jit-tmp"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let reached = match point {
            "codegen" => calls.is_empty(),
            "the CK units" => !calls.contains(&"blob".to_string()),
            _ => calls.contains(&"blob".to_string()) && !calls.contains(&"link".to_string()),
        };
        assert!(reached, "killed at {point} (the interceptor saw {calls:?})");
    }
    install_taken(&bin, &install);
    let exports = exported(&install.join("te_libmha_fwd.so"));
    assert!(
        !exports.is_empty() && exports.iter().all(|s| s.starts_with("qola::te::")),
        "{exports:?}"
    );
}

/// ck-jit's hints beside a user's own edit (in the same generator or in another file): the tree
/// is refused as any local edit is (exit 3, nothing changed); forced, the user's lines are in the
/// patch qola saves and ck-jit's hints are undone.
#[test]
fn ck_jit_s_hints_beside_a_user_s_edit_are_refused_as_any_edit_and_the_user_s_lines_survive() {
    let Some(f) = forward() else {
        return;
    };
    let generator = f.tree.join(FORWARD_GENERATOR);
    let hinted = std::fs::read_to_string(&generator).unwrap();
    let mine = "# my own line, not ck-jit's\n";
    let other = f.tree.join("csrc/include/mha_fwd.h");
    let other_was = std::fs::read_to_string(&other).unwrap();
    for (path, text) in [
        (&generator, format!("{hinted}{mine}")),
        (&other, format!("{other_was}// {mine}")),
    ] {
        std::fs::write(path, &text).unwrap();
        let out = checkout(&f.manifest, &f.tree, &f.hipcc);
        assert_eq!(out.status.code(), Some(3), "{}", said(&out));
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            text,
            "nothing changed"
        );
        assert!(
            std::fs::read_to_string(&generator)
                .unwrap()
                .contains("//jit_kernel:")
        );
        std::fs::write(&generator, &hinted).unwrap();
    }
    // Forced: the user's edit is saved, the hints are undone.
    std::fs::write(&other, format!("{other_was}// {mine}")).unwrap();
    let mut forced = common::qola_command(&["GPU_ARCHS"]);
    forced
        .args(["checkout", "--force", "-m"])
        .arg(&f.manifest)
        .arg("-a")
        .arg(&f.tree)
        .env("HIPCC", &f.hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"));
    let text = qola_tests::run_ok(&mut forced);
    let saved = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("local edits saved to "))
        .unwrap_or_else(|| panic!("{text}"));
    let patch = std::fs::read_to_string(saved).unwrap();
    assert!(patch.contains(mine.trim_end()), "{patch}");
    assert!(
        !patch.contains("//jit_kernel:"),
        "ck-jit's hints are not the user's: {patch}"
    );
    assert_eq!(
        std::fs::read(&generator).unwrap(),
        std::fs::read(fixtures_dir().join("aiter-ck-jit").join(FORWARD_GENERATOR)).unwrap()
    );
}

/// ck-jit's hints patch for CK's generator as a checkout of ck-jit holds it, with its one hunk
/// that does not apply to the CK of AITER 05a0d1f (`fmha_fwd.py`: the instance loop there has
/// no filter) adapted, as a QoLA user at that AITER must.
fn adapted_ck_jit(checkout: &Path, dir: &Path) -> PathBuf {
    let copy = dir.join("ck-jit");
    qola_tests::run_ok(Command::new("cp").arg("-r").arg(checkout).arg(&copy));
    let patch = copy.join("codegen_jit_hints_0cafa68b6.patch");
    let text = std::fs::read_to_string(&patch).unwrap();
    let filtered = "@@ -541,6 +542,7 @@ class FmhaFwdApiPool:\n                     for i_trait, trait in enumerate(\n                         [trait for trait in pool_by_hdim if filter_fn(trait)]\n                     ):\n";
    let plain = "@@ -541,4 +542,5 @@ class FmhaFwdApiPool:\n                     for i_trait, trait in enumerate(pool_by_hdim):\n";
    assert!(
        text.contains(filtered),
        "ck-jit's v1 hints patch as known (ae17f54)"
    );
    std::fs::write(&patch, text.replace(filtered, plain)).unwrap();
    copy
}

/// The real ck-jit (`QOLA_TEST_CK_JIT_DIR`), run as TransformerEngine's CMake runs it: `full`
/// with the same `--tmp-dir`, `--qola-output` inside it and the same `--install-dir` each time.
/// Its libraries define ck-jit's runtime and export QoLA's API alone; a run killed with the hints
/// applied (ck-jit's own patch left in CK) is undone by the next configure's checkout; the next
/// `full` records the same instances and installs libraries with the bytes and mtimes they had;
/// `quick` relinks from the same tmp dir.
#[test]
fn ck_jit_s_full_run_installs_libraries_that_compile_on_first_use_run_after_run() {
    let Some(checkout_dir) = std::env::var_os("QOLA_TEST_CK_JIT_DIR").map(PathBuf::from) else {
        eprintln!(
            "skipping: QOLA_TEST_CK_JIT_DIR names no checkout of ROCm/ck-jit (CI cannot fetch it); the contract is checked by under_ck_jit_* with a stand-in"
        );
        return;
    };
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let ck_jit = adapted_ck_jit(&checkout_dir, tmp.path());
    let manifest = manifest(tmp.path(), &real, true);
    let tree = tree_copy(&hipcc, &manifest, tmp.path());
    let rocm = qola_tests::sid_rocm(&hipcc);
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python");
    let (bin, install) = (tmp.path().join("te-build"), tmp.path().join("te-install"));
    let ck_jit_tmp = bin.join("ck_jit");
    let full = |tag: &str, hipcc_set: bool| {
        let mut command = Command::new("python3");
        command
            .arg(ck_jit.join("ck_jit_build.py"))
            .args(["full", "--with-qola", "--gpu-archs", "gfx942", "--qola-dir"])
            .arg(&python)
            .arg("--qola-manifest")
            .arg(&manifest)
            .arg("--aiter-dir")
            .arg(&tree)
            .arg("--tmp-dir")
            .arg(&ck_jit_tmp)
            .arg("--install-dir")
            .arg(&install)
            .arg("--qola-output")
            .arg(ck_jit_tmp.join("qola"))
            .args(["--jit-name", "te_ck_jit"])
            .env("PYTHONPATH", &python)
            .env("QOLA_EXECUTABLE", QOLA)
            .env("ROCM_PATH", &rocm)
            .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
            .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER)
            .env("QOLA_CK_FILTER_LIBMHA_BWD", NARROW_BWD_FILTER)
            .env_remove("GPU_ARCHS")
            .env_remove("HIPCC");
        if hipcc_set {
            command.env("HIPCC", "/bin/false");
        }
        let text = qola_tests::run_ok(&mut command);
        let log = std::fs::read_to_string(ck_jit_tmp.join("qola_build.log")).unwrap_or_default();
        eprintln!("== ck-jit full ({tag}) ==\n{text}\n== its qola_build.log ==\n{log}");
        let blobs: Vec<String> = std::fs::read_to_string(ck_jit_tmp.join("manifest.json.ndjson"))
            .unwrap()
            .lines()
            .filter_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["kind"] == "blob").then(|| {
                    let source = v["source"].as_str().unwrap();
                    source.rsplit('/').next().unwrap().to_string()
                })
            })
            .collect();
        (blobs, log)
    };
    let (first, _) = full("first", false);
    assert!(!first.is_empty());
    for lib in ["te_libmha_fwd.so", "te_libmha_bwd.so"] {
        let installed = install.join(lib);
        let exports = exported(&installed);
        assert!(
            !exports.is_empty() && exports.iter().all(|s| s.starts_with("qola::te::")),
            "{lib}: QoLA's API and nothing of AITER or CK: {exports:?}"
        );
        let symbols =
            String::from_utf8_lossy(&Command::new("nm").arg(&installed).output().unwrap().stdout)
                .into_owned();
        let entry = if lib.contains("fwd") {
            "ck_jit_fwd_call"
        } else {
            "ck_jit_bwd_call"
        };
        assert!(symbols.contains(entry), "{lib} defines ck-jit's {entry}");
    }
    let output_was = files_as_they_are(&ck_jit_tmp.join("qola"));
    let installed_was = files_as_they_are(&install);

    // A run killed with ck-jit's hints applied: its own patch left in CK. The next configure's
    // checkout undoes it.
    let ck = tree.join("3rdparty/composable_kernel");
    qola_tests::run_ok(
        Command::new("patch")
            .args(["-p1", "--forward", "--no-backup-if-mismatch", "--input"])
            .arg(ck_jit.join("codegen_jit_hints_0cafa68b6.patch"))
            .current_dir(&ck),
    );
    let out = checkout(&manifest, &tree, &hipcc);
    let text = said(&out);
    eprintln!("== qola checkout after a killed run ==\n{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ck-jit's codegen hints were left applied"),
        "{text}"
    );

    common::tick();
    let (second, log) = full("second", true);
    assert_eq!(
        first, second,
        "the same blob list, with a warm cache and HIPCC set"
    );
    assert!(log.contains("mtimes are put back"), "{log}");
    assert_eq!(
        changed_for_consumers(&output_was, &files_as_they_are(&ck_jit_tmp.join("qola"))),
        Vec::<String>::new(),
        "every file qola wrote as it was"
    );
    let installed_now = files_as_they_are(&install);
    for lib in ["te_libmha_fwd.so", "te_libmha_bwd.so"] {
        assert_eq!(
            installed_now.get(Path::new(lib)),
            installed_was.get(Path::new(lib)),
            "{lib}: the same bytes and mtime"
        );
    }
    let mut quick = Command::new("python3");
    quick
        .arg(ck_jit.join("ck_jit_build.py"))
        .args(["quick", "--tmp-dir"])
        .arg(&ck_jit_tmp)
        .arg("--aiter-dir")
        .arg(&tree)
        .arg("--install-dir")
        .arg(tmp.path().join("install-quick"))
        .env("ROCM_PATH", &rocm);
    let text = qola_tests::run_ok(&mut quick);
    eprintln!("== ck-jit quick ==\n{text}");
    assert!(tmp.path().join("install-quick/te_libmha_fwd.so").is_file());
}
