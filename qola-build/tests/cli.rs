//! The `qola` command line as CMake builds use it: separate processes, the environment, JSON on
//! standard output and the exit status.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::Path;
use std::process::Output;

use common::*;
use qola_tests::ManifestText;

fn run(s: &Setup, verb: &str, extra: &[&str]) -> Output {
    explicit(s, verb, extra).output().expect("run qola")
}

/// `te.toml` for the demo upstream pinning `commit`, with the demo's series when `patches`
/// (else none: qola's own), then `extra`.
fn demo_manifest(s: &Setup, commit: &str, patches: bool, extra: &str) -> std::path::PathBuf {
    let mut manifest = ManifestText::new(commit, &s.demo.aiter);
    if patches {
        manifest = manifest.set("patches_dir", &s.demo.patches);
    }
    manifest.raw(extra).write(s.tmp.path().join("te.toml"))
}

fn json(output: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.lines().count(), 1, "one JSON object on stdout: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn prepare_json_has_every_field_and_exit_zero() {
    let s = setup();
    let out = run(&s, "prepare", &["--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    for key in [
        "action",
        "reasons",
        "root",
        "commit",
        "key",
        "fingerprint",
        "expected_fingerprint",
        "edited_paths",
        "untracked_paths",
        "backup",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["action"], "clone");
    assert_eq!(v["commit"], s.demo.commit.as_str());
    assert_eq!(v["fingerprint"], v["expected_fingerprint"]);
    let v = json(&run(&s, "prepare", &["--json"]));
    assert_eq!(v["action"], "up-to-date");
}

#[test]
fn refused_exits_three_and_lists_edits_in_json() {
    let s = setup();
    run(&s, "prepare", &[]);
    s.write(UNTOUCHED, "# edit\n");
    let out = run(&s, "prepare", &["--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["action"], "refused");
    assert_eq!(v["edited_paths"], serde_json::json!([UNTOUCHED]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("QOLA_SKIP_PREPARE=1"), "{stderr}");
    // status says the same and also exits 3.
    let out = run(&s, "status", &["--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["action"], "refused");
}

#[test]
fn errors_exit_one_with_the_message_and_usage_errors_two() {
    let s = setup();
    let out = run(
        &s,
        "prepare",
        &[
            "--json",
            "--commit",
            "0000000000000000000000000000000000000bad",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["action"], "error");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("0000000000000000000000000000000000000bad")
    );
    let out = qola(&s, &["frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // No command at all is a usage error too (argparse, QoLA's, exits 2), the usage on stderr.
    let out = qola(&s, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: qola"));
    let out = qola(&s, &["plan", "--timings", "-o", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("qola build --timings"));
}

#[test]
fn environment_overrides_the_manifest_and_arguments_override_the_environment() {
    let s = setup();
    let newer = s.demo.commit_aiter("NEWS.md", "news\n", "news");
    let newest = s.demo.commit_aiter("NEWS.md", "more news\n", "more news");
    ManifestText::new(&s.demo.commit, &s.demo.aiter)
        .set("patches_dir", "upstream/patches")
        .write(s.tmp.path().join("qola.toml"));
    let root = s.root.to_string_lossy().to_string();
    // The manifest alone (found as ./qola.toml).
    let out = qola(&s, &["prepare", "--json"])
        .env("QOLA_AITER_ROOT", &root)
        .output()
        .unwrap();
    assert_eq!(json(&out)["commit"], s.demo.commit.as_str());
    // The environment over the manifest.
    let out = qola(&s, &["prepare", "--json"])
        .env("QOLA_AITER_ROOT", &root)
        .env("QOLA_AITER_COMMIT", &newer)
        .output()
        .unwrap();
    assert_eq!(json(&out)["commit"], newer.as_str());
    // The argument over the environment.
    let out = qola(&s, &["prepare", "--json", "--commit", &newest])
        .env("QOLA_AITER_ROOT", &root)
        .env("QOLA_AITER_COMMIT", &newer)
        .output()
        .unwrap();
    assert_eq!(json(&out)["commit"], newest.as_str());
    // QOLA_MANIFEST over ./qola.toml.
    let other = s.tmp.path().join("other.toml");
    ManifestText::new(&newer, &s.demo.aiter)
        .set("patches_dir", "upstream/patches")
        .write(&other);
    let out = qola(&s, &["status", "--json"])
        .env("QOLA_AITER_ROOT", &root)
        .env("QOLA_MANIFEST", &other)
        .output()
        .unwrap();
    assert_eq!(json(&out)["commit"], newer.as_str());
}

#[test]
fn skip_and_force_come_from_the_environment_too() {
    let s = setup();
    run(&s, "prepare", &[]);
    s.write(UNTOUCHED, "# edit\n");
    let out = explicit(&s, "prepare", &["--json"])
        .env("QOLA_SKIP_PREPARE", "1")
        .output()
        .unwrap();
    assert_eq!(json(&out)["action"], "skip-requested");
    let out = explicit(&s, "prepare", &["--json"])
        .env("QOLA_FORCE_PREPARE", "1")
        .output()
        .unwrap();
    let v = json(&out);
    assert_eq!(v["action"], "forced");
    assert!(Path::new(v["backup"].as_str().unwrap()).is_file());
    // The name TransformerEngine's QoLA seed used for the same request.
    s.write(UNTOUCHED, "# another edit\n");
    let out = explicit(&s, "prepare", &["--json"])
        .env("QOLA_FORCE_AITER_CHECKOUT", "1")
        .output()
        .unwrap();
    assert_eq!(json(&out)["action"], "forced");
    let out = explicit(&s, "prepare", &["--json"])
        .env("QOLA_SKIP_PREPARE", "maybe")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("QOLA_SKIP_PREPARE"));
}

#[test]
fn diff_writes_a_patch_file() {
    let s = setup();
    run(&s, "prepare", &[]);
    s.write(PATCHED_CK, "# mine\n");
    let file = s.tmp.path().join("mine.patch");
    let out = run(&s, "diff", &["-o", &file.to_string_lossy()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(&format!("diff --git a/{PATCHED_CK} b/{PATCHED_CK}\n")),
        "{text}"
    );
}

#[test]
fn status_takes_no_lock_and_writes_nothing() {
    let s = setup();
    run(&s, "prepare", &[]);
    let lock = std::fs::File::options()
        .write(true)
        .open(s.root.parent().unwrap().join(".aiter.qola-lock"))
        .unwrap();
    lock.lock().unwrap();
    let before = mtimes(&s.root);
    let out = run(&s, "status", &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["action"], "up-to-date");
    assert_nothing_written(&before, &s.root);
}

#[test]
fn concurrent_prepares_wait_for_each_other_and_end_consistent() {
    let s = setup();
    let children: Vec<_> = (0..3)
        .map(|_| {
            explicit(&s, "prepare", &["--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut actions: Vec<String> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            json(&out)["action"].as_str().unwrap().to_string()
        })
        .collect();
    actions.sort();
    assert_eq!(actions, vec!["clone", "up-to-date", "up-to-date"]);
    assert_prepared(&s);
    let v = json(&run(&s, "status", &["--json"]));
    assert_eq!(v["action"], "up-to-date");
}

#[test]
fn a_held_lock_makes_prepare_say_it_waits() {
    let s = setup();
    run(&s, "prepare", &[]);
    let lock_path = s.root.parent().unwrap().join(".aiter.qola-lock");
    let lock = std::fs::File::options()
        .write(true)
        .open(&lock_path)
        .unwrap();
    lock.lock().unwrap();
    let mut child = explicit(&s, "prepare", &[])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first thing the blocked process says is that it waits; only then is the lock released.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).unwrap();
    assert!(
        first.contains("waiting for another qola preparation"),
        "{first}"
    );
    drop(lock);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{rest}");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("up-to-date"), "{report}");
}

/// docs/command-line.md's CMake snippet, as written, in a project of its own with real CMake: a
/// second configure changes no mtime in the checkout; touching a patch makes the next build
/// configure again and run `qola prepare`, which rewrites nothing.
#[test]
fn cmake_configures_with_qola_and_reconfigures_when_a_patch_changes() {
    let Some(cmake) = qola_tests::tool("cmake", "cmake") else {
        return;
    };
    let s = setup();
    let source = s.tmp.path().join("uses-aiter");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.20)\nproject(uses_aiter NONE)\n{}string(JSON qola_action GET \"${{qola_json}}\" action)\nmessage(STATUS \"qola prepare: ${{qola_action}} (${{AITER_ROOT}})\")\n",
            qola_tests::docs::tested("cmake-prepare")
        ),
    )
    .unwrap();
    let manifest = source.join("qola.toml");
    ManifestText::new(&s.demo.commit, &s.demo.aiter)
        .set("patches_dir", &s.demo.patches)
        .write(&manifest);
    let build = s.tmp.path().join("build");
    let run = |args: &[&str]| {
        qola_tests::run_ok(
            std::process::Command::new(&cmake)
                .args(args)
                .env("QOLA_AITER_ROOT", &s.root)
                .env("QOLA_CACHE_DIR", s.cache()),
        )
    };
    let configure = [
        "-S",
        source.to_str().unwrap(),
        "-B",
        build.to_str().unwrap(),
        &format!("-DQOLA={}", env!("CARGO_BIN_EXE_qola")),
    ];
    let first = run(&configure);
    assert!(first.contains("qola prepare: clone"), "{first}");
    let before = mtimes(&s.root);
    tick();
    let second = run(&configure);
    assert!(second.contains("qola prepare: up-to-date"), "{second}");
    assert_nothing_written(&before, &s.root);
    // Nothing changed: the build does not configure again.
    let quiet = run(&["--build", build.to_str().unwrap()]);
    assert!(!quiet.contains("qola prepare"), "{quiet}");
    // A touched patch: configure and qola run again; the tree is left as it is.
    touch(&s.demo.patches.join(qola_tests::DEMO_PATCHES[0].0));
    let again = run(&["--build", build.to_str().unwrap()]);
    assert!(again.contains("qola prepare: up-to-date"), "{again}");
    assert_nothing_written(&before, &s.root);
}

#[test]
fn checkout_takes_qolas_flags_and_is_prepare() {
    let s = setup();
    let manifest = demo_manifest(&s, &s.demo.commit, true, "namespace = \"te\"\n");
    let checkout = |extra: &[&str]| {
        qola(&s, &["checkout", "--json", "-m"])
            .arg(&manifest)
            .arg("-a")
            .arg(&s.root)
            .args(extra)
            .output()
            .unwrap()
    };
    let first = checkout(&[]);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(json(&first)["action"], "clone");
    assert_prepared(&s);
    // Never a blind reset: a local edit is refused (exit 3), as with prepare.
    s.write(PATCHED_SUPER, "my edit\n");
    let edited = checkout(&[]);
    assert_eq!(edited.status.code(), Some(3));
    assert_eq!(s.read(PATCHED_SUPER), "my edit\n");
    // --aiter-commit overrides the manifest's commit.
    let newer = s.demo.commit_aiter("NEWS.md", "news\n", "news");
    let moved = checkout(&["--aiter-commit", &newer, "--force"]);
    assert_eq!(
        moved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    assert_eq!(json(&moved)["commit"], newer.as_str());
}

#[test]
fn checkout_group_is_checked_against_the_manifest_and_selects_nothing() {
    let s = setup();
    let manifest = demo_manifest(
        &s,
        &s.demo.commit,
        true,
        "\n[[modules]]\nname = \"libmha_fwd\"\ngroup = \"ck_fused_attn\"\n\n[[modules]]\nname = \"libmha_bwd\"\ngroup = \"bwd\"\n",
    );
    // QoLA.cmake's checkout helper: `checkout --manifest M --aiter-root R --group G`.
    let checkout = |group: &str| {
        qola(&s, &["checkout", "--manifest"])
            .arg(&manifest)
            .arg("--aiter-root")
            .arg(&s.root)
            .args(["--group", group])
            .output()
            .unwrap()
    };
    let known = checkout("ck_fused_attn");
    assert_eq!(
        known.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&known.stderr)
    );
    assert_prepared(&s);
    // QoLA's line, exactly, on standard output (its cli.py: "AITER ready at {path}", the
    // resolved path); qola's own report stays on standard error.
    assert_eq!(
        String::from_utf8_lossy(&known.stdout),
        format!(
            "AITER ready at {}\n",
            s.root.canonicalize().unwrap().display()
        )
    );
    // A list, as QoLA splits `--group` (and QOLA_BUILD_GROUPS).
    assert_eq!(checkout("ck_fused_attn;bwd").status.code(), Some(0));
    let unknown = checkout("ck_fused_attn;aiter_gemm");
    assert_eq!(unknown.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("group aiter_gemm") && stderr.contains("te.toml"),
        "{stderr}"
    );
}

/// qola's CMake module as QoLA's sets it up: `QOLA_CMAKE_DIR` and `QOLA_ROOT_DIR` are set, and a
/// failed step's message holds qola's own words (its standard error), not only the exit status.
#[test]
fn qolas_cmake_module_sets_qolas_variables_and_a_failure_says_what_qola_said() {
    let Some(cmake) = qola_tests::tool("cmake", "cmake") else {
        return;
    };
    let s = setup();
    let manifest = demo_manifest(
        &s,
        &s.demo.commit,
        true,
        "\n[[modules]]\nname = \"libmha_fwd\"\ngroup = \"mha\"\n",
    );
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/qola");
    let project = s.tmp.path().join("consumer");
    write(
        &project,
        "CMakeLists.txt",
        format!(
            "cmake_minimum_required(VERSION 3.20)\nproject(consumer NONE)\ninclude({}/cmake/QoLA.cmake)\nmessage(STATUS \"cmake dir: ${{QOLA_CMAKE_DIR}}\")\nmessage(STATUS \"root dir: ${{QOLA_ROOT_DIR}}\")\nqola_checkout_aiter(MANIFEST {} AITER_DIR {} GROUPS ${{GROUP}} OUT_DIR tree)\n",
            module.display(),
            manifest.display(),
            s.root.display()
        ),
    );
    let configure = |group: &str| {
        let mut command = std::process::Command::new(&cmake);
        command
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(project.join("build"))
            .arg(format!("-DGROUP={group}"))
            .env("QOLA_EXECUTABLE", qola_binary())
            .env("QOLA_CACHE_DIR", s.cache());
        command.output().unwrap()
    };
    let ok = configure("mha");
    let said = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let canonical = |p: &Path| p.canonicalize().unwrap().display().to_string();
    assert!(
        said.contains(&format!("cmake dir: {}", canonical(&module.join("cmake"))))
            && said.contains(&format!("root dir: {}", canonical(&module))),
        "{said}"
    );
    assert_prepared(&s);
    let failed = configure("aiter_gemm");
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    // CMake wraps the message's lines: compared with single spaces.
    let message = stderr[stderr.find("CMake Error").expect("CMake's error")..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        message.contains("qola exit status 1")
            && message.contains("qola checkout: error: group aiter_gemm"),
        "{stderr}"
    );
}

/// QoLA.cmake's rules, kept: two subprojects with one manifest and one tree check it out once
/// per configure (the `QOLA_CHECKOUT_DONE_<commit>_<dir>` property); `NVTE_AITER_SOURCE_DIR` (as
/// `QOLA_AITER_SOURCE_DIR`) names a tree taken as it is, with no checkout; a manifest without
/// exactly one `aiter_commit = "..."` line stops the configure.
#[test]
fn qolas_cmake_checks_out_once_honours_nvte_aiter_source_dir_and_wants_one_commit_line() {
    let Some(cmake) = qola_tests::tool("cmake", "cmake") else {
        return;
    };
    let s = setup();
    let manifest = demo_manifest(&s, &s.demo.commit, true, "");
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/qola");
    // A qola that logs each command it is asked to run.
    let calls = s.tmp.path().join("calls");
    let logging = s.tmp.path().join("logging-qola");
    write(
        s.tmp.path(),
        "logging-qola",
        format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\nexec '{}' \"$@\"\n",
            calls.display(),
            qola_binary()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&logging, std::fs::Permissions::from_mode(0o755)).unwrap();
    let project = s.tmp.path().join("consumer");
    write(
        &project,
        "CMakeLists.txt",
        format!(
            "cmake_minimum_required(VERSION 3.20)\nproject(consumer NONE)\ninclude({}/cmake/QoLA.cmake)\nadd_subdirectory(attention)\nadd_subdirectory(gemm)\n",
            module.display()
        ),
    );
    for sub in ["attention", "gemm"] {
        write(
            &project.join(sub),
            "CMakeLists.txt",
            format!(
                "qola_checkout_aiter(MANIFEST ${{MANIFEST}} AITER_DIR {} OUT_DIR tree)\nmessage(STATUS \"{sub}: ${{tree}}\")\n",
                s.root.display()
            ),
        );
    }
    let configure = |manifest: &Path, nvte: Option<&Path>| {
        let _ = std::fs::remove_file(&calls);
        let mut command = std::process::Command::new(&cmake);
        command
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(project.join("build"))
            .arg(format!("-DMANIFEST={}", manifest.display()))
            .env("QOLA_EXECUTABLE", &logging)
            .env("QOLA_CACHE_DIR", s.cache())
            .env_remove("QOLA_AITER_SOURCE_DIR")
            .env_remove("NVTE_AITER_SOURCE_DIR");
        if let Some(tree) = nvte {
            command.env("NVTE_AITER_SOURCE_DIR", tree);
        }
        let out = command.output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let asked = std::fs::read_to_string(&calls).unwrap_or_default();
        (out.status.success(), said, asked)
    };
    let (ok, said, asked) = configure(&manifest, None);
    assert!(ok, "{said}");
    assert_prepared(&s);
    assert_eq!(
        asked, "checkout\n",
        "one checkout for two subprojects: {said}"
    );
    let root = s.root.display().to_string();
    assert!(
        said.contains(&format!("attention: {root}")) && said.contains(&format!("gemm: {root}")),
        "{said}"
    );
    // NVTE_AITER_SOURCE_DIR: that tree, as it is; qola is not asked to check anything out.
    let (ok, said, asked) = configure(&manifest, Some(&s.root));
    assert!(ok, "{said}");
    assert_eq!(asked, "", "{said}");
    assert!(said.contains("NVTE_AITER_SOURCE_DIR"), "{said}");
    // Two `aiter_commit` lines (or none): the configure stops before qola runs.
    let text = std::fs::read_to_string(&manifest).unwrap();
    for (name, changed, found) in [
        (
            "two.toml",
            format!("{text}\n[other]\naiter_commit = \"{}\"\n", s.demo.commit),
            "found 2",
        ),
        (
            "none.toml",
            text.replace("aiter_commit", "# aiter_commit"),
            "found 0",
        ),
    ] {
        let path = s.tmp.path().join(name);
        std::fs::write(&path, changed).unwrap();
        let (ok, said, asked) = configure(&path, None);
        let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            !ok && said.contains("expected exactly one") && said.contains(found),
            "{said}"
        );
        assert_eq!(asked, "", "{said}");
    }
}

/// A manifest written for QoLA names its series relative to the directory QoLA runs in: where
/// only that reading exists, it is used and a warning names both readings.
#[test]
fn a_series_found_only_from_the_working_directory_is_used_with_a_warning() {
    let s = setup();
    let (project, build) = (s.tmp.path().join("te"), s.tmp.path().join("te/build"));
    std::fs::create_dir_all(build.join("series")).unwrap();
    for entry in std::fs::read_dir(&s.demo.patches).unwrap().flatten() {
        std::fs::copy(entry.path(), build.join("series").join(entry.file_name())).unwrap();
    }
    let manifest = ManifestText::new(&s.demo.commit, &s.demo.aiter)
        .set("patches_dir", "series")
        .write(project.join("te.toml"));
    let out = qola(&s, &["prepare", "--json", "-m"])
        .arg(&manifest)
        .arg("--root")
        .arg(&s.root)
        .current_dir(&build)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_prepared(&s);
    assert!(
        stderr.contains(&build.join("series").display().to_string())
            && stderr.contains(&project.join("series").display().to_string()),
        "{stderr}"
    );
}

#[test]
fn help_lists_every_option_with_its_qola_alias() {
    let s = setup();
    let help = qola(&s, &["build", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    for (option, alias) in [
        ("--aiter-root", "--root"),
        ("--aiter-commit", "--commit"),
        ("--patches-dir", "--patches"),
        ("--output-dir", "--output"),
    ] {
        let at = text
            .find(option)
            .unwrap_or_else(|| panic!("{option}: {text}"));
        assert!(
            text[at..].contains(&format!("[alias: {alias}]")),
            "{option}: {text}"
        );
    }
    for option in [
        "--manifest",
        "--arch",
        "--mode",
        "--group",
        "--skip-checkout",
        "--verbose",
    ] {
        assert!(text.contains(option), "{option}: {text}");
    }
    // A usage error exits 2, as QoLA's argparse does (3 is a refusal).
    let bad = qola(&s, &["build", "--bogus"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn cache_says_what_it_holds_and_clears_it() {
    let s = setup();
    let out = qola(&s, &["cache", "--json"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["objects"], 0);
    assert!(v["max_bytes"].as_u64().unwrap() > 0);
    assert_eq!(v["libraries"], serde_json::json!([]));
    assert_eq!(v["compilers"], serde_json::json!([]));
    assert!(
        v["dir"]
            .as_str()
            .unwrap()
            .starts_with(&s.cache().display().to_string())
    );
    let cleared = json(&qola(&s, &["cache", "--clear", "--json"]).output().unwrap());
    assert_eq!(
        cleared["cleared"],
        serde_json::json!({"objects": 0, "bytes": 0, "records": 0, "builds": 0})
    );
}

/// As cargo and git: a command's report on standard output, nothing else there; with `--json`
/// the JSON alone, and nothing repeated on standard error; sizes in the unit that fits them.
#[test]
fn reports_go_to_stdout_and_json_is_all_a_json_command_prints() {
    let s = setup();
    run(&s, "prepare", &[]);
    for (args, report) in [
        (&["cache"][..], "0 B (and"),
        (&["prepare"][..], "qola prepare: up-to-date"),
        (&["status"][..], "qola status: up-to-date"),
    ] {
        let mut command = if args[0] == "cache" {
            qola(&s, args)
        } else {
            explicit(&s, args[0], &[])
        };
        let out = command.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stdout.contains(report), "{args:?}: {stdout}");
        assert_eq!(stderr, "", "{args:?}: nothing but the report");
        let mut command = if args[0] == "cache" {
            qola(&s, &[args[0], "--json"])
        } else {
            explicit(&s, args[0], &["--json"])
        };
        let out = command.output().unwrap();
        json(&out);
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?} --json");
    }
}

/// A TransformerEngine-style manifest: no `patches_dir` (so qola's own series), the demo's
/// upstream, `commit` pinned.
fn manifest_without_patches(s: &Setup, commit: &str) -> std::path::PathBuf {
    demo_manifest(s, commit, false, "namespace = \"te\"\n")
}

/// The refusal names the manifest, both commits and what to set.
fn assert_series_refused(out: &Output, commit: &str) {
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(commit)
            && text.contains("05a0d1f060af14e789696479de71a2fc2fbaada9")
            && text.contains("patches_dir")
            && text.contains("te.toml"),
        "{text}"
    );
}

#[test]
fn qolas_own_series_pinned_to_another_sha_is_refused_before_anything_is_cloned() {
    let s = setup();
    let short = &s.demo.commit[..8];
    let manifest = manifest_without_patches(&s, short);
    for verb in ["status", "prepare", "checkout"] {
        let out = qola(&s, &[verb, "-m"])
            .arg(&manifest)
            .arg("-a")
            .arg(&s.root)
            .output()
            .unwrap();
        assert_series_refused(&out, short);
        assert!(!s.root.exists(), "{verb} cloned");
    }
}

#[test]
fn qolas_own_series_pinned_to_a_branch_of_another_commit_is_refused_leaving_the_tree_as_it_was() {
    let s = setup();
    // A checkout prepared with the demo's own series.
    let out = run(&s, "prepare", &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // The work tree (a branch is fetched, which writes in .git only).
    let tree = || {
        let mut m = mtimes(&s.root);
        m.retain(|p, _| !p.components().any(|c| c.as_os_str() == ".git"));
        m
    };
    let before = tree();
    let branch = qola_tests::git(&s.demo.aiter, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let head = qola_tests::git(&s.demo.aiter, &["rev-parse", "HEAD"]);
    let manifest = manifest_without_patches(&s, &branch);
    for verb in ["status", "prepare"] {
        let out = qola(&s, &[verb, "-m"])
            .arg(&manifest)
            .arg("-a")
            .arg(&s.root)
            .output()
            .unwrap();
        assert_series_refused(&out, &format!("{branch} ({head})"));
        assert!(tree() == before, "{verb} touched the tree");
    }
}
