//! The HIP compile pipeline: with a real hipcc (Debian's, for gfx90a) where one is installed
//! (required in CI), and, for what does not need a real compiler (caching, header invalidation,
//! the link step, error reports), also with the stand-in compiler `tests/fake/hipcc`,
//! everywhere.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};

use common::compiled;
use qola_build::{CompileReport, HipBuild};
use qola_tests::{HipProject, hipcc_available};

struct Setup {
    tmp: tempfile::TempDir,
    project: HipProject,
    /// The stand-in compiler, when the test runs with it.
    stand_in: Option<PathBuf>,
}

/// The compiler a test runs with.
#[derive(Clone, Copy)]
enum Compiler {
    /// The hipcc on `PATH` (or `HIPCC`): `None` from [`setup_with`] without one, outside CI.
    Hipcc,
    /// `tests/fake/hipcc`: always there.
    StandIn,
}

fn setup_with(compiler: Compiler) -> Option<Setup> {
    let stand_in = match compiler {
        Compiler::Hipcc if !hipcc_available() => return None,
        Compiler::Hipcc => None,
        Compiler::StandIn => Some(qola_tests::fake_hipcc()),
    };
    let tmp = tempfile::tempdir().unwrap();
    let project = HipProject::create(&tmp.path().join("src"));
    Some(Setup {
        tmp,
        project,
        stand_in,
    })
}

fn setup() -> Option<Setup> {
    setup_with(Compiler::Hipcc)
}

/// Tests that run twice: `NAME::hipcc` with the real compiler (skipped without one, outside
/// CI) and `NAME::stand_in` with `tests/fake/hipcc`.
macro_rules! with_both_compilers {
    ($(fn $name:ident($s:ident: Setup) $body:block)*) => {$(
        mod $name {
            use super::*;

            fn check($s: Setup) $body

            #[test]
            fn hipcc() {
                if let Some(s) = setup_with(Compiler::Hipcc) {
                    check(s);
                }
            }

            #[test]
            fn stand_in() {
                check(setup_with(Compiler::StandIn).expect("the stand-in is always there"));
            }
        }
    )*};
}

impl Setup {
    fn build(&self) -> HipBuild {
        let mut b = HipBuild::new();
        b.files(&self.project.sources)
            .include(&self.project.include)
            .arch("gfx90a")
            .cache_dir(self.tmp.path().join("cache"))
            .out_dir(self.tmp.path().join("out"))
            .export("qola_a")
            .export("qola_b")
            .export("qola_c")
            .jobs(2)
            .cargo_metadata(false);
        if let Some(stand_in) = &self.stand_in {
            b.compiler(stand_in);
        }
        b
    }

    fn compile(&self) -> CompileReport {
        self.build()
            .try_compile("demo")
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// An edit that makes `c.hip` fail to compile with `undeclared_thing` in the error.
    fn break_c(&self) {
        match self.stand_in {
            None => edit(
                &self.project.sources[2],
                "int i =",
                "int i = undeclared_thing +",
            ),
            Some(_) => edit(
                &self.project.sources[2],
                "namespace {",
                "#error undeclared_thing\nnamespace {",
            ),
        }
    }
}

with_both_compilers! {
    fn second_build_compiles_nothing(s: Setup) {
        let first = s.compile();
        assert_eq!(compiled(&first), ["a.hip", "b.hip", "c.hip"]);
        let second = s.compile();
        assert!(compiled(&second).is_empty());
        assert!(!second.library_written);
    }
}

/// A launcher script in `dir` that logs when each compile starts and ends, and that log.
fn timing_launcher(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let (script, log) = (dir.join("launcher.sh"), dir.join("times.log"));
    let log_arg = log.display();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"start $(date +%s%N)\" >> '{log_arg}'\n\"$@\"\nstatus=$?\n\
             echo \"end $(date +%s%N)\" >> '{log_arg}'\nexit $status\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

/// The most compiles that ran at the same time, from a [`timing_launcher`] log.
fn most_at_once(log: &Path) -> usize {
    let mut events: Vec<(u128, i32)> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let (kind, at) = l.split_once(' ').unwrap();
            // At the same instant an end comes before a start.
            (at.parse().unwrap(), if kind == "start" { 1 } else { -1 })
        })
        .collect();
    events.sort();
    let (mut running, mut most) = (0, 0);
    for (_, step) in events {
        running += step;
        most = most.max(running);
    }
    usize::try_from(most).unwrap()
}

with_both_compilers! {
    fn parallel_compiles_are_capped_by_the_memory_each_needs(s: Setup) {
        let plan = |per_job: u64| {
            s.build()
                .jobs(8)
                .memory_per_job(per_job)
                .try_plan("demo")
                .unwrap_or_else(|e| panic!("{e}"))
                .jobs
        };
        assert_eq!(plan(1), 8, "a unit that needs a byte leaves the job limit");
        assert_eq!(plan(1 << 50), 1, "a petabyte per unit: one at a time");

        // Real builds, each from an empty cache: 3 units under a limit of 3.
        let build = |name: &str, per_job: u64| {
            let (launcher, times) = timing_launcher(&s.tmp.path().join(name));
            let report = s
                .build()
                .jobs(3)
                .memory_per_job(per_job)
                .launcher(&launcher.display().to_string())
                .cache_dir(s.tmp.path().join(name).join("cache"))
                .try_compile("demo")
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(report.compiled(), 3);
            (report, most_at_once(&times))
        };
        let (capped, capped_at_once) = build("capped", 1 << 50);
        assert_eq!(
            (capped.jobs, capped_at_once),
            (1, 1),
            "{}",
            capped.jobs_reason
        );
        assert!(
            capped
                .jobs_reason
                .starts_with("1 at once: memory holds 1 (")
                && capped
                    .jobs_reason
                    .ends_with("per unit (the build's default)); the job limit was 3 (.jobs(3))"),
            "{}",
            capped.jobs_reason
        );
        let log = std::fs::read_to_string(&capped.log).unwrap();
        assert!(
            log.starts_with(&format!("jobs: {}\n", capped.jobs_reason)),
            "{log}"
        );
        let (free, free_at_once) = build("free", 1);
        assert_eq!(free.jobs, 3, "{}", free.jobs_reason);
        assert!(free_at_once > 1, "uncapped, the 3 compiles overlap");
    }
}

with_both_compilers! {
    fn a_compiles_measured_peak_memory_is_the_next_builds_estimate(s: Setup) {
        let first = s.compile();
        let peak = first.units[0].peak_memory.expect("a measured peak");
        // hipcc's clang needs tens of megabytes at least, and no compile here needs 8 GiB.
        assert!(peak > (20 << 20) && peak < (8 << 30), "{peak}");
        edit(
            &s.project.sources[0],
            "SHARED_SCALE +",
            "SHARED_SCALE - 1.0f +",
        );
        let plan = s
            .build()
            .memory_per_job(1)
            .try_plan("demo")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            plan.jobs_reason.contains(&format!(
                "{:.2} GiB per unit (measured)",
                peak as f64 / (1u64 << 30) as f64
            )),
            "{}",
            plan.jobs_reason
        );
    }
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from}", path.display());
    std::fs::write(path, text.replace(from, to)).unwrap();
}

with_both_compilers! {
    fn editing_one_source_recompiles_that_unit_and_a_touch_recompiles_nothing(s: Setup) {
        s.compile();
        common::touch(&s.project.sources[1]);
        assert!(compiled(&s.compile()).is_empty());
        edit(
            &s.project.sources[1],
            "x[i] * SHARED_SCALE",
            "x[i] * SHARED_SCALE * 1.5f",
        );
        let report = s.compile();
        assert_eq!(compiled(&report), ["b.hip"]);
        assert!(report.library_written);
    }
}

with_both_compilers! {
    fn editing_a_header_recompiles_exactly_its_dependents(s: Setup) {
        s.compile();
        edit(&s.project.include.join("only_c.h"), "3.0f", "4.0f");
        assert_eq!(compiled(&s.compile()), ["c.hip"]);
        edit(&s.project.include.join("shared.h"), "2.0f", "3.0f");
        assert_eq!(compiled(&s.compile()), ["a.hip", "b.hip", "c.hip"]);
    }
}

with_both_compilers! {
    fn rewriting_every_file_with_the_same_content_recompiles_nothing(s: Setup) {
        s.compile();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let headers = [
            s.project.include.join("shared.h"),
            s.project.include.join("only_c.h"),
        ];
        for path in s.project.sources.iter().chain(headers.iter()) {
            let bytes = std::fs::read(path).unwrap();
            std::fs::remove_file(path).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        assert!(compiled(&s.compile()).is_empty());
    }
}

with_both_compilers! {
    fn a_change_switched_on_off_and_on_compiles_nothing_the_third_time(s: Setup) {
        s.compile();
        let header = s.project.include.join("shared.h");
        edit(&header, "2.0f", "5.0f");
        assert_eq!(compiled(&s.compile()).len(), 3);
        edit(&header, "5.0f", "2.0f");
        assert!(
            compiled(&s.compile()).is_empty(),
            "off again: the first objects are back"
        );
        edit(&header, "2.0f", "5.0f");
        assert!(
            compiled(&s.compile()).is_empty(),
            "on again: the second objects are back"
        );
    }
}

with_both_compilers! {
    fn the_library_exports_only_the_named_c_api(s: Setup) {
        let report = s.compile();
        let out = std::process::Command::new("nm")
            .args(["-g", "--defined-only"])
            .arg(&report.library)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut exported: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        exported.sort();
        assert_eq!(exported, ["qola_a", "qola_b", "qola_c"], "{text}");
    }
}

with_both_compilers! {
    fn a_failed_compile_shows_the_command_and_stderr_and_writes_repro_sh(s: Setup) {
        s.break_c();
        let e = s.build().try_compile("demo").unwrap_err();
        let qola_build::CompileError::Compile {
            command,
            stderr,
            repro,
            ..
        } = &e
        else {
            panic!("{e}")
        };
        assert!(
            command.contains("c.hip") && command.contains("--offload-arch=gfx90a"),
            "{command}"
        );
        assert!(stderr.contains("undeclared_thing"), "{stderr}");
        let rerun = std::process::Command::new("sh")
            .arg(repro)
            .output()
            .unwrap();
        assert!(!rerun.status.success());
        assert!(String::from_utf8_lossy(&rerun.stderr).contains("undeclared_thing"));
        let message = e.to_string();
        assert!(
            message.contains("repro.sh") && message.contains("undeclared_thing"),
            "{message}"
        );
    }
}

with_both_compilers! {
    fn the_log_grows_as_each_unit_ends_and_a_no_op_leaves_it_alone(s: Setup) {
        use std::os::unix::fs::PermissionsExt;
        // A launcher that copies the log as each compile starts.
        let seen = s.tmp.path().join("seen");
        std::fs::create_dir_all(&seen).unwrap();
        let log = s.tmp.path().join("out/qola-compile-demo.log");
        let launcher = s.tmp.path().join("copy-log.sh");
        std::fs::write(
            &launcher,
            format!(
                "#!/bin/sh\nn=$(ls '{dir}' | wc -l)\ncp '{log}' '{dir}/'$n.txt\nexec \"$@\"\n",
                dir = seen.display(),
                log = log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut build = s.build();
        build.jobs(1).launcher(&launcher.to_string_lossy());
        let report = build.try_compile("demo").unwrap();
        assert_eq!(compiled(&report).len(), 3);
        let third = std::fs::read_to_string(seen.join("2.txt")).unwrap();
        let lines: Vec<&str> = third.lines().collect();
        assert!(lines[0].starts_with("jobs: 1 at once"), "{third}");
        assert_eq!(lines.len(), 3, "two units ended before the third began: {third}");
        assert!(
            lines[1].starts_with("compiled") && lines[1].contains("(1/3 done, ")
                && lines[2].contains("(2/3 done, ") && lines[2].contains(" left)"),
            "{third}"
        );
        let full = std::fs::read_to_string(&log).unwrap();
        assert!(full.ends_with(&format!("summary: {}\n", report.summary())), "{full}");
        // A build that compiles nothing writes nothing: the log stays as it is.
        let before = std::fs::metadata(&log).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(compiled(&s.compile()).is_empty());
        assert_eq!(std::fs::metadata(&log).unwrap().modified().unwrap(), before);
    }
}

with_both_compilers! {
    fn a_rejected_flag_is_a_flag_error_not_an_architecture_error(s: Setup) {
        let mut build = s.build();
        build.flag("-fbogus-qola-flag");
        let e = build.try_compile("demo").unwrap_err();
        assert!(
            matches!(e, qola_build::CompileError::RejectedFlags { .. }),
            "{e}"
        );
        let message = e.to_string();
        assert!(
            message.contains("-fbogus-qola-flag") && !message.contains("not supported"),
            "{message}"
        );
        assert!(!s.tmp.path().join("out/libdemo.a").exists());
    }
}

with_both_compilers! {
    fn an_unsupported_arch_names_the_compiler_and_its_version(s: Setup) {
        let mut build = s.build();
        build.arch("gfx1");
        let e = build.try_compile("demo").unwrap_err();
        assert!(
            matches!(e, qola_build::CompileError::UnsupportedArch { .. }),
            "{e}"
        );
        let message = e.to_string();
        assert!(
            message.contains("gfx1") && message.contains("hipcc") && message.contains("HIP "),
            "{message}"
        );
    }
}

with_both_compilers! {
    fn a_unit_log_lists_cached_and_compiled_units(s: Setup) {
        s.compile();
        edit(
            &s.project.sources[0],
            "SHARED_SCALE +",
            "SHARED_SCALE - 1.0f +",
        );
        let report = s.compile();
        let log = std::fs::read_to_string(&report.log).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 5, "{log}");
        assert!(
            lines[0].starts_with("jobs: 2 at once: the job limit (.jobs(2)"),
            "{log}"
        );
        // compiled, seconds, peak memory, CPU seconds, source
        let compiled: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(compiled[0], "compiled", "{log}");
        assert!(
            compiled[2].ends_with("MB")
                && compiled[3] == "cpu"
                && compiled[4].ends_with('s')
                && compiled[5].ends_with("a.hip"),
            "{log}"
        );
        assert!(
            lines[2].starts_with("cached") && lines[3].starts_with("cached"),
            "{log}"
        );
        assert_eq!(lines[4], format!("summary: {}", report.summary()));
        assert!(
            report
                .summary()
                .starts_with("qola compiled 1 of 3 HIP units for gfx90a in "),
            "{}",
            report.summary()
        );
        assert!(
            report
                .summary()
                .contains(": 2 reused from qola's cache; 2 at once")
        );
    }
}

#[test]
fn the_launcher_wraps_every_compile_and_ccache_answers_a_second_cache() {
    let Some(s) = setup() else { return };
    if qola_tests::tool("ccache", "ccache").is_none() {
        return;
    }
    let ccache_dir = s.tmp.path().join("ccache");
    // SAFETY of env: ccache reads CCACHE_DIR from the compile's environment; set it for the
    // launcher through a wrapper script instead of this process's environment.
    let wrapper = s.tmp.path().join("ccache-here");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nCCACHE_DIR={} exec ccache \"$@\"\n",
            ccache_dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut build = s.build();
    build.launcher(&wrapper.to_string_lossy());
    assert_eq!(compiled(&build.try_compile("demo").unwrap()).len(), 3);
    let (stats, count) = (common::ccache_stats, common::ccache_count);
    let first = stats(&ccache_dir);
    assert_eq!(count(&first, "cache_miss"), 3, "{first}");
    // A second qola cache (another workspace): every unit comes from ccache.
    build
        .cache_dir(s.tmp.path().join("cache2"))
        .out_dir(s.tmp.path().join("out2"));
    assert_eq!(compiled(&build.try_compile("demo").unwrap()).len(), 3);
    let second = stats(&ccache_dir);
    assert_eq!(count(&second, "local_storage_hit"), 3, "{second}");
    assert_eq!(count(&second, "cache_miss"), 3, "no new misses: {second}");
}

#[test]
fn a_missing_compiler_says_where_it_looked_and_how_to_install_one() {
    if common::is_child() {
        let tmp = tempfile::tempdir().unwrap();
        let e = HipBuild::new()
            .file("k.hip")
            .cache_dir(tmp.path().join("cache"))
            .out_dir(tmp.path().join("out"))
            .cargo_metadata(false)
            .try_compile("k")
            .unwrap_err();
        println!("ERROR: {e}");
        return;
    }
    let out = common::child("a_missing_compiler_says_where_it_looked_and_how_to_install_one")
        .env("PATH", "/nonexistent")
        .env_remove("HIPCC")
        .env_remove("ROCM_HOME")
        .env_remove("ROCM_PATH")
        .env_remove("HIP_PATH")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "ERROR: no HIP compiler found",
        "$ROCM_HOME/bin/hipcc",
        "$ROCM_PATH/bin/hipcc",
        "`rocm-sdk path --root`",
        "hipcc on PATH",
        "/opt/rocm/core/bin/hipcc",
        "/opt/rocm/bin/hipcc",
        "set ROCM_HOME",
        "apt-get install hipcc libamdhip64-dev rocm-device-libs",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

/// ROCm found where PyTorch, AITER and ROCm 7 put it, in a child process with no `HIPCC`: a
/// `ROCM_HOME` whose `bin/hipcc` is the stand-in compiler compiles the project (before
/// `ROCM_PATH`); without the variables, TheRock's `rocm-sdk path --root` (a stand-in on `PATH`)
/// names the root, before `PATH`'s own hipcc; a `ROCM_HOME` without a compiler and a `rocm-sdk`
/// that fails are errors naming them.
#[test]
fn rocm_home_and_rocm_sdk_name_the_rocm_whose_hipcc_compiles() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("rocm");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::os::unix::fs::symlink(qola_tests::fake_hipcc(), root.join("bin/hipcc")).unwrap();
    let sdk_bin = tmp.path().join("venv/bin");
    std::fs::create_dir_all(&sdk_bin).unwrap();
    let rocm_sdk = |answer: &str| {
        std::fs::write(sdk_bin.join("rocm-sdk"), format!("#!/bin/sh\n{answer}\n")).unwrap();
        qola_tests::run_ok(
            std::process::Command::new("chmod")
                .arg("+x")
                .arg(sdk_bin.join("rocm-sdk")),
        );
    };
    let path = format!(
        "{}:{}",
        sdk_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let build = |vars: &[(&str, &Path)], name: &str| {
        let mut command = common::child("child_build_without_a_job_limit");
        qola_tests::without_caller_env(
            &mut command,
            &[],
            &["HIPCC", "ROCM_HOME", "ROCM_PATH", "HIP_PATH"],
        );
        command
            .env("QOLA_TEST_DIR", tmp.path().join(name))
            .env("PATH", &path);
        for (var, value) in vars {
            command.env(var, value);
        }
        let out = command.output().unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let fake = "HIP 0.0.0-qola-fake";
    let empty = tmp.path().join("not-rocm");
    std::fs::create_dir_all(&empty).unwrap();
    rocm_sdk("exit 7");
    let (ok, said) = build(&[("ROCM_HOME", &root), ("ROCM_PATH", &empty)], "home");
    assert!(ok && said.contains(fake), "{said}");
    let (ok, said) = build(
        &[("ROCM_HOME", &empty), ("ROCM_PATH", &root)],
        "no-compiler",
    );
    assert!(!ok, "{said}");
    assert!(
        said.contains(&format!(
            "ROCM_HOME={}: there is no {}/bin/hipcc",
            empty.display(),
            empty.display()
        )),
        "{said}"
    );
    rocm_sdk(&format!("echo {}", root.display()));
    let (ok, said) = build(&[], "rocm-sdk");
    assert!(ok && said.contains(fake), "before PATH's hipcc: {said}");
    rocm_sdk("echo 'ERROR: Could not load the rocm[devel] package' >&2; exit 1");
    let (ok, said) = build(&[], "failing-rocm-sdk");
    assert!(!ok, "{said}");
    assert!(
        said.contains("rocm-sdk path --root`: it failed") && said.contains("rocm[devel]"),
        "{said}"
    );
}

/// In a child test process: the demo project created under `QOLA_TEST_DIR`, built for gfx90a
/// into `<dir>/<out>` with the cache `<dir>/cache`.
fn child_demo_build(out: &str) -> HipBuild {
    let dir = PathBuf::from(std::env::var_os("QOLA_TEST_DIR").unwrap());
    let project = HipProject::create(&dir.join("src"));
    let mut build = HipBuild::new();
    build
        .files(&project.sources)
        .include(&project.include)
        .arch("gfx90a")
        .cache_dir(dir.join("cache"))
        .out_dir(dir.join(out))
        .cargo_metadata(false);
    build
}

/// `HIPCC` relative to the caller's directory (`./hipcc`): the compiles run elsewhere (in the
/// build's links directory), and still find it.
#[test]
fn a_relative_hipcc_is_the_callers() {
    if common::is_child() {
        child_demo_build("out")
            .try_compile("demo")
            .unwrap_or_else(|e| panic!("{e}"));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fake = qola_tests::fake_hipcc();
    let out = common::child("a_relative_hipcc_is_the_callers")
        .current_dir(fake.parent().unwrap())
        .env("HIPCC", "./hipcc")
        .env("QOLA_TEST_DIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_killed_build_leaves_no_corrupt_entry() {
    if common::is_child() {
        child_demo_build("out-child")
            .jobs(1)
            .try_compile("demo")
            .unwrap();
        return;
    }
    let Some(s) = setup() else { return };
    // One unit at a time (a second or more each): killed as soon as the first compile wrote
    // its output, the build is inside the second compile (objects are installed after the
    // compiles, each by a rename, its record after it).
    let mut running = common::child("a_killed_build_leaves_no_corrupt_entry")
        .env("QOLA_TEST_DIR", s.tmp.path())
        .spawn()
        .unwrap();
    let scratch = s.tmp.path().join("cache/hip/tmp");
    let objects = s.tmp.path().join("cache/hip/objects");
    let records = s.tmp.path().join("cache/hip/units");
    // The build's scratch is `tmp/<its lease>/`: a first object there is a first compile done.
    let first_compiled = || {
        std::fs::read_dir(&scratch).is_ok_and(|builds| {
            builds.flatten().any(|build| {
                std::fs::read_dir(build.path()).is_ok_and(|files| {
                    files
                        .flatten()
                        .any(|f| f.path().extension().is_some_and(|x| x == "o"))
                })
            })
        })
    };
    while !first_compiled() && running.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    running.kill().unwrap();
    running.wait().unwrap();
    let listed = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    // A unit is reusable once its record is written (after its object is in place).
    let complete = listed(&records).len();
    assert!(
        complete < 3,
        "the kill came too late to test anything: {complete} units"
    );
    for object in listed(&objects)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
    {
        assert!(
            std::fs::read(&object).unwrap().starts_with(b"\x7fELF"),
            "a corrupt entry: {}",
            object.display()
        );
    }
    let report = s.compile();
    assert_eq!(compiled(&report).len(), 3 - complete);
    let nm = std::process::Command::new("nm")
        .arg(&report.library)
        .output()
        .unwrap();
    assert!(nm.status.success());
}

#[test]
fn a_clang_driver_given_as_the_compiler_builds_too() {
    let Some(s) = setup() else { return };
    let Some(clang) = ["/usr/bin/clang++-15", "/opt/rocm/llvm/bin/clang++"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    else {
        eprintln!("skipping: no clang++ with HIP support at a known place");
        return;
    };
    let mut build = s.build();
    build.compiler(&clang);
    if clang.starts_with("/usr/bin") {
        // Debian's clang needs to be told where Debian keeps ROCm (hipcc passes the same).
        build
            .flag("--rocm-path=/usr")
            .flag("--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
    }
    let report = build.try_compile("demo").unwrap_or_else(|e| panic!("{e}"));
    assert!(report.toolchain.is_clang);
    assert_eq!(compiled(&report).len(), 3);
    assert!(report.toolchain.clang_version.is_some());
}

/// Flags of one source alone (AITER's `flags_extra_hip_per_source`): that unit's command has
/// them after the build's, its id changes, the other units' do not.
#[test]
fn flags_of_one_source_reach_that_unit_alone() {
    let s = setup_with(Compiler::StandIn).expect("the stand-in is always there");
    let plan = |flags: &[&str]| {
        let mut build = s.build();
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        build.file_flags(&s.project.sources[0], &flags);
        build.try_plan("demo").unwrap_or_else(|e| panic!("{e}"))
    };
    let (without, with) = (plan(&[]), plan(&["-DQOLA_ONE=1", "-mllvm", "-x=1"]));
    let command = with.units[0].command.join(" ");
    assert!(
        command.contains("-DQOLA_ONE=1 -mllvm -x=1 -cuid="),
        "{command}"
    );
    assert!(!with.units[1].command.join(" ").contains("QOLA_ONE"));
    assert_ne!(with.units[0].unit_id, without.units[0].unit_id);
    assert_eq!(with.units[1].unit_id, without.units[1].unit_id);
    assert_eq!(with.units[2].unit_id, without.units[2].unit_id);
}

/// A module's own clang (AITER's `hip_clang_path`): every compile runs hipcc with
/// `HIP_CLANG_PATH` naming it (a logging wrapper around Debian's clang here), and the compiler's
/// identity changes with that clang, so the objects of the default clang are not reused.
#[test]
fn a_clang_directory_is_used_by_every_compile_and_is_part_of_the_identity() {
    let Some(s) = setup() else { return };
    let real = PathBuf::from("/usr/lib/llvm-15/bin");
    if !real.join("clang++").is_file() {
        eprintln!("skipping: no Debian clang 15 beside Debian's hipcc");
        return;
    }
    let dir = s.tmp.path().join("clang");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&real).unwrap() {
        let entry = entry.unwrap();
        std::os::unix::fs::symlink(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    // hipcc runs `clang++` (Debian's: `clang-15`): both log and run Debian's clang.
    let log = s.tmp.path().join("clang.log");
    for name in ["clang++", "clang-15"] {
        std::fs::remove_file(dir.join(name)).unwrap();
        common::write(
            &dir,
            name,
            format!(
                "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.join(name).display()
            ),
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let default = s.compile();
    let module_clang = default.toolchain.with_clang_dir(&dir).unwrap();
    assert_ne!(module_clang.identity, default.toolchain.identity);
    let report = s
        .build()
        .toolchain(module_clang)
        .try_compile("demo")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(compiled(&report).len(), 3, "a new compiler: every unit");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    for source in &s.project.sources {
        let name = source.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            calls.contains(&name),
            "{name} not compiled by the module's clang:\n{calls}"
        );
    }
    assert!(
        with_clang_dir_error(&s.tmp.path().join("no-clang"), &default.toolchain)
            .contains("holds no clang++")
    );
}

fn with_clang_dir_error(dir: &Path, toolchain: &qola_build::HipToolchain) -> String {
    std::fs::create_dir_all(dir).unwrap();
    toolchain.with_clang_dir(dir).unwrap_err().to_string()
}

/// Two libraries whose sources share an inline function (as every AITER module shares CK's)
/// link into one program: each keeps its own local copy (hidden, not deduplicated against the
/// other library's, which `ld -r` + localizing used to break: "defined in discarded section").
#[test]
fn two_libraries_sharing_an_inline_function_link_into_one_program() {
    let Some(s) = setup() else { return };
    let dir = s.tmp.path();
    qola_tests::write(
        dir,
        "shared.h",
        "#include <string>\n__attribute__((noinline)) inline int qola_shared(int x) { return (int)std::to_string(x).size(); }\n",
    );
    qola_tests::write(
        dir,
        "one.hip",
        "#include \"shared.h\"\nextern \"C\" int qola_one(int x) { return qola_shared(x); }\n",
    );
    qola_tests::write(
        dir,
        "two.hip",
        "#include \"shared.h\"\nextern \"C\" int qola_two(int x) { return qola_shared(x * 100); }\n",
    );
    qola_tests::write(
        dir,
        "main.c",
        "int qola_one(int);\nint qola_two(int);\nint main(void) { return qola_one(7) == 1 && qola_two(7) == 3 ? 0 : 1; }\n",
    );
    let library = |name: &str| {
        let mut build = HipBuild::new();
        build
            .file(dir.join(format!("{name}.hip")))
            .include(dir)
            .arch("gfx90a")
            .cache_dir(dir.join("cache"))
            .out_dir(dir.join(name))
            .export(&format!("qola_{name}"))
            .cargo_metadata(false);
        build
            .try_compile(name)
            .unwrap_or_else(|e| panic!("{e}"))
            .library
    };
    let (one, two) = (library("one"), library("two"));
    let program = dir.join("program");
    let link = std::process::Command::new("c++")
        .args(["-x", "c"])
        .arg(dir.join("main.c"))
        .args(["-x", "none"])
        .arg(&one)
        .arg(&two)
        .args(["-L/usr/lib/x86_64-linux-gnu", "-lamdhip64", "-o"])
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        link.status.success(),
        "{}",
        String::from_utf8_lossy(&link.stderr)
    );
    assert!(
        std::process::Command::new(&program)
            .status()
            .unwrap()
            .success()
    );
}

/// A patch of the series that changes a composable_kernel header the demo kernel includes.
const WARP32_PATCH: &str = "--- a/3rdparty/composable_kernel/include/ck_tile/core/config.hpp
+++ b/3rdparty/composable_kernel/include/ck_tile/core/config.hpp
@@ -7,3 +7,3 @@
 namespace ck_tile {
-constexpr int warp_size = 64;
+constexpr int warp_size = 32;
 } // namespace ck_tile
";

#[test]
fn a_patch_switched_on_off_and_on_through_preparation_compiles_nothing_the_third_time() {
    if !hipcc_available() {
        return;
    }
    let s = common::setup();
    let compile = || {
        let root = &s.root;
        let report = HipBuild::new()
            .file(root.join(qola_tests::DEMO_KERNEL))
            .include(root.join("csrc/include"))
            .include(root.join("3rdparty/composable_kernel/include"))
            .arch("gfx90a")
            .cache_dir(s.cache())
            .out_dir(s.tmp.path().join("out"))
            .cargo_metadata(false)
            .try_compile("demo")
            .unwrap_or_else(|e| panic!("{e}"));
        report.compiled()
    };
    s.prepare();
    assert_eq!(compile(), 1, "first build");
    s.add_patch("0004-ck-warp32.patch", WARP32_PATCH);
    s.prepare();
    assert_eq!(compile(), 1, "patch on");
    std::fs::remove_file(s.demo.patches.join("0004-ck-warp32.patch")).unwrap();
    s.prepare();
    assert_eq!(compile(), 0, "patch off: the first object again");
    s.add_patch("0004-ck-warp32.patch", WARP32_PATCH);
    s.prepare();
    assert_eq!(compile(), 0, "patch on again: the second object again");
}

/// `qola build`'s terminal progress (HipBuild::progress_on_terminal outside a build script):
/// where the log is before the first compile, then one line per unit as it ends, with its time,
/// done/total and the time left; `-v` adds each command. Standard output stays untouched (it
/// belongs to `--json`).
#[test]
fn progress_on_a_terminal_shows_each_unit_as_it_ends() {
    if common::is_child() {
        let s = setup_with(Compiler::StandIn).unwrap();
        let verbose = std::env::var_os("QOLA_TEST_VERBOSE").is_some();
        s.build()
            .jobs(1)
            .progress_on_terminal(verbose)
            .try_compile("demo")
            .unwrap_or_else(|e| panic!("{e}"));
        return;
    }
    let run = |verbose: bool| {
        let mut child = common::child("progress_on_a_terminal_shows_each_unit_as_it_ends");
        if verbose {
            child.env("QOLA_TEST_VERBOSE", "1");
        }
        let out = child.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (String::from_utf8_lossy(&out.stderr).into_owned(), stdout)
    };
    let (stderr, stdout) = run(false);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("qola: ")).collect();
    assert!(
        lines[0].starts_with("qola: compiling 3 of 3 HIP units, 1 at once; progress in ")
            && lines[0].ends_with("qola-compile-demo.log"),
        "{stderr}"
    );
    for (i, line) in lines[1..4].iter().enumerate() {
        assert!(line.starts_with("qola: compiled "), "{stderr}");
        assert!(
            line.contains(&format!("({}/3 done, ", i + 1)) && line.contains(" left)"),
            "{line}"
        );
    }
    assert!(
        lines[4].starts_with("qola: qola compiled 3 of 3 HIP units"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("qola: running "),
        "commands only with -v: {stderr}"
    );
    assert!(
        !stdout.contains("qola:"),
        "nothing on standard output: {stdout}"
    );
    let (verbose, _) = run(true);
    assert_eq!(verbose.matches("qola: running ").count(), 3, "{verbose}");
}

/// A build of the project in `dir` (a root of the build, `project`) into `out` with `cache`.
fn build_at(s: &Setup, dir: &Path, out: &Path, cache: &Path) -> HipBuild {
    let mut b = HipBuild::new();
    b.files(["a", "b", "c"].map(|n| dir.join(format!("{n}.hip"))))
        .include(dir.join("include"))
        .root("project", dir)
        .arch("gfx90a")
        .cache_dir(cache)
        .out_dir(out)
        .export("qola_a")
        .jobs(2)
        .cargo_metadata(false);
    if let Some(stand_in) = &s.stand_in {
        b.compiler(stand_in);
    }
    b
}

with_both_compilers! {
    fn the_same_project_at_another_path_compiles_nothing_and_gives_the_same_objects(s: Setup) {
        let (a, b) = (s.tmp.path().join("a"), s.tmp.path().join("elsewhere/b"));
        for name in ["a.hip", "b.hip", "c.hip", "include/shared.h", "include/only_c.h"] {
            common::write(&a, name, std::fs::read(s.project.dir.join(name)).unwrap());
            common::write(&b, name, std::fs::read(s.project.dir.join(name)).unwrap());
        }
        let cache = s.tmp.path().join("shared-cache");
        let first = build_at(&s, &a, &a.join("out"), &cache).try_compile("demo").unwrap();
        assert_eq!(compiled(&first), ["a.hip", "b.hip", "c.hip"]);
        // Another path, another output directory, the same cache: nothing to compile.
        let second = build_at(&s, &b, &b.join("out"), &cache).try_compile("demo").unwrap();
        assert!(compiled(&second).is_empty(), "{}", second.summary());
        assert!(second.units.iter().all(|u| u.reason.contains(&a.join("out").display().to_string())));
        // Compiled there from an empty cache, every object is byte for byte the first's.
        let fresh = build_at(&s, &b, &b.join("out2"), &s.tmp.path().join("cache-b"))
            .try_compile("demo")
            .unwrap();
        assert_eq!(compiled(&fresh).len(), 3);
        for (x, y) in first.units.iter().zip(&fresh.units) {
            assert_eq!(
                std::fs::read(&x.object).unwrap(),
                std::fs::read(&y.object).unwrap(),
                "{} differs between {} and {}",
                x.source.display(),
                a.display(),
                b.display()
            );
        }
        // A header edit there still recompiles exactly the units that include it, and says so.
        edit(&b.join("include/only_c.h"), "3.0f", "4.0f");
        let edited = build_at(&s, &b, &b.join("out"), &cache).try_compile("demo").unwrap();
        assert_eq!(compiled(&edited), ["c.hip"]);
        assert_eq!(edited.units[2].reason, "new content: project/include/only_c.h");
    }
}

with_both_compilers! {
    fn the_plan_says_why_each_unit_compiles_or_where_its_object_was_compiled(s: Setup) {
        let plan = |b: HipBuild| b.try_plan("demo").unwrap_or_else(|e| panic!("{e}"));
        let reasons = |p: &qola_build::CompilePlan| -> Vec<(String, String)> {
            p.units.iter().map(|u| (u.decision.to_string(), u.reason.clone())).collect()
        };
        let first = plan(s.build());
        assert!(
            reasons(&first).iter().all(|(d, r)| d == "compile" && r == "first build"),
            "{:?}",
            reasons(&first)
        );
        s.compile();
        let out = s.tmp.path().join("out").canonicalize().unwrap();
        let again = plan(s.build());
        assert!(
            reasons(&again)
                .iter()
                .all(|(d, r)| d == "reuse" && *r == format!("compiled for {}", out.display())),
            "{:?}",
            reasons(&again)
        );
        let mut flagged = s.build();
        flagged.define("QOLA_EXTRA", Some("1"));
        assert!(
            reasons(&plan(flagged))
                .iter()
                .all(|(d, r)| d == "compile" && r == "flags changed: +-DQOLA_EXTRA=1"),
        );
        edit(&s.project.sources[1], "SHARED_SCALE +", "SHARED_SCALE - 1.0f +");
        assert_eq!(
            reasons(&plan(s.build()))[1],
            ("compile".to_string(), "new content: the source".to_string())
        );
        // The build does what the plan says, and its log says why.
        let report = s.compile();
        assert_eq!(compiled(&report), ["b.hip"]);
        let log = std::fs::read_to_string(&report.log).unwrap();
        assert!(log.contains("b.hip (new content: the source)"), "{log}");
    }
}

with_both_compilers! {
    fn a_library_relinked_from_the_cache_writes_its_own_log(s: Setup) {
        s.compile();
        // Another output directory: every unit reused, the library linked there, and a log
        // saying so (the previous build's "compiled 3 of 3" is elsewhere).
        let mut elsewhere = s.build();
        elsewhere.out_dir(s.tmp.path().join("out-b"));
        let report = elsewhere.try_compile("demo").unwrap();
        assert!(report.library_written && compiled(&report).is_empty());
        let log = std::fs::read_to_string(&report.log).unwrap();
        assert!(log.lines().filter(|l| l.starts_with("cached")).count() == 3, "{log}");
        assert!(log.contains("summary: qola compiled 0 of 3 HIP units"), "{log}");
        // A second library in the same output directory has a log of its own.
        let mut second = s.build();
        second.out_dir(s.tmp.path().join("out-b"));
        let other = second.try_compile("other").unwrap();
        assert_ne!(other.log, report.log);
        assert!(std::fs::read_to_string(&report.log).unwrap().contains("3 HIP units"));
    }
}

with_both_compilers! {
    fn the_cache_keeps_its_size_by_evicting_what_no_running_build_holds(s: Setup) {
        let cache = s.tmp.path().join("cache");
        let objects = || {
            std::fs::read_dir(cache.join("hip/objects"))
                .unwrap()
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "o"))
                .count()
        };
        let first = s.compile();
        assert_eq!((objects(), first.evicted), (3, 0));
        // Room for three objects only: a build of other flags stores three and evicts the
        // first three, never its own (held by its lease while it runs).
        let size: u64 = first
            .units
            .iter()
            .map(|u| std::fs::metadata(&u.object).unwrap().len())
            .max()
            .unwrap();
        let mut other = s.build();
        other.define("QOLA_EXTRA", Some("1")).max_cache_size(3 * size + 3 * size / 2);
        let second = other.try_compile("demo").unwrap();
        assert_eq!(compiled(&second).len(), 3);
        assert!(second.evicted >= 1, "{}", second.evicted);
        assert!(second.units.iter().all(|u| u.object.is_file()));
        // The evicted units compile again, and say why.
        let mut plan = s.build();
        plan.max_cache_size(u64::MAX);
        let evicted: Vec<String> = plan
            .try_plan("demo")
            .unwrap()
            .units
            .iter()
            .filter(|u| u.decision == "compile")
            .map(|u| u.reason.clone())
            .collect();
        assert_eq!(evicted.len(), second.evicted, "{evicted:?}");
        assert!(evicted.iter().all(|r| r == "its object was evicted from the cache"));
        let usage = qola_build::object_cache_usage(Some(&cache)).unwrap();
        assert_eq!(usage.objects, objects());
        assert_eq!(usage.builds.last().unwrap().misses, 3);
        let cleared = qola_build::clear_object_cache(Some(&cache)).unwrap();
        assert_eq!(
            (cleared.objects, cleared.records, cleared.builds),
            (usage.objects, usage.units, usage.builds.len())
        );
        assert_eq!(objects(), 0);
        let usage = qola_build::object_cache_usage(Some(&cache)).unwrap();
        assert_eq!((usage.units, usage.builds.len()), (0, 0), "records and history went too");
    }
}

/// A launcher that counts the compilers running at once, from outside qola: each call is
/// counted in and out of `$COUNTING_DIR/running` (under `flock`), the most at once kept in
/// `$COUNTING_DIR/max`; with `COUNTING_BARRIER=n` a compile waits until `n` have started, so a
/// limit of `n` or more is seen whatever the machine's speed.
const COUNTING_LAUNCHER: &str = r#"#!/bin/bash
dir=$COUNTING_DIR
add() {
    exec 9>>"$dir/lock"
    flock 9
    local running=$(( $(cat "$dir/running" 2>/dev/null || echo 0) + $1 ))
    echo "$running" > "$dir/running"
    if [ "$running" -gt "$(cat "$dir/max" 2>/dev/null || echo 0)" ]; then echo "$running" > "$dir/max"; fi
    if [ "$1" -gt 0 ]; then echo "$(( $(cat "$dir/started" 2>/dev/null || echo 0) + 1 ))" > "$dir/started"; fi
    flock -u 9
}
compiling=0
for word in "$@"; do [ "$word" = -c ] && compiling=1; done
[ "$compiling" = 1 ] && add 1
if [ "$compiling" = 1 ] && [ -n "$COUNTING_BARRIER" ]; then
    while [ "$(cat "$dir/started")" -lt "$COUNTING_BARRIER" ]; do sleep 0.01; done
fi
"$@"
status=$?
[ "$compiling" = 1 ] && add -1
exit $status
"#;

/// A build in a child process (`QOLA_TEST_CHILD`) of the project in `QOLA_TEST_DIR` with no job
/// limit of its own: the environment's (`MAX_JOBS`) decides.
#[test]
fn child_build_without_a_job_limit() {
    if !common::is_child() {
        return;
    }
    let report = child_demo_build("out")
        .try_compile("demo")
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "\nqola-test-log {}",
        std::fs::read_to_string(&report.log)
            .unwrap()
            .lines()
            .next()
            .unwrap()
    );
}

/// `MAX_JOBS`, as PyTorch and AITER read it, limits the compilers qola runs at once: counted
/// from outside by a launcher around every compile, 2 at once with `MAX_JOBS=2` (each compile
/// waits for the second, so the count does not depend on the machine's speed) and never more
/// than 1 with `MAX_JOBS=1`; a value that is not a whole number of at least 1 is an error
/// naming the variable and its value.
#[test]
fn max_jobs_limits_the_compilers_running_at_once_counted_from_outside() {
    if !hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let launcher = tmp.path().join("counting-launcher");
    std::fs::write(&launcher, COUNTING_LAUNCHER).unwrap();
    qola_tests::run_ok(std::process::Command::new("chmod").arg("+x").arg(&launcher));
    let run = |max_jobs: &str, barrier: Option<&str>| {
        let dir = tmp.path().join(format!("max-jobs-{max_jobs}"));
        let counting = dir.join("counting");
        std::fs::create_dir_all(&counting).unwrap();
        let mut command = common::child("child_build_without_a_job_limit");
        qola_tests::without_caller_env(&mut command, &[], &["NUM_JOBS", "MAX_JOBS"]);
        command
            .env("QOLA_TEST_DIR", &dir)
            .env("QOLA_COMPILER_LAUNCHER", &launcher)
            .env("COUNTING_DIR", &counting)
            .env("MAX_JOBS", max_jobs);
        if let Some(n) = barrier {
            command.env("COUNTING_BARRIER", n);
        }
        let out = command.output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let max = std::fs::read_to_string(counting.join("max")).unwrap_or_default();
        (out.status.success(), said, max.trim().to_string())
    };
    let (ok, said, max) = run("2", Some("2"));
    assert!(ok, "{said}");
    assert_eq!(max, "2", "two at once with MAX_JOBS=2: {said}");
    let (ok, said, max) = run("1", None);
    assert!(ok, "{said}");
    assert_eq!(max, "1", "{said}");
    assert!(
        said.contains("qola-test-log jobs: 1 at once: the job limit (MAX_JOBS=1"),
        "{said}"
    );
    for bad in ["0", "abc"] {
        let (ok, said, _) = run(bad, None);
        assert!(!ok, "{said}");
        assert!(
            said.contains(&format!("MAX_JOBS=\"{bad}\" is not valid")),
            "{said}"
        );
    }
}
