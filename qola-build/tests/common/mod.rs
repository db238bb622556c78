//! Shared setup of the integration tests: a demo upstream in a temp dir and a checkout path.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment
#![allow(dead_code)] // each test binary uses a different part

pub mod code;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use qola_build::{Action, Preparation, Prepare, PrepareError, ReasonKind};
#[allow(unused_imports)]
pub use qola_tests::git;
pub use qola_tests::{Demo, write};

/// A demo upstream and the path of the checkout qola manages.
pub struct Setup {
    pub tmp: tempfile::TempDir,
    pub demo: Demo,
    pub root: PathBuf,
}

pub fn setup() -> Setup {
    let tmp = tempfile::tempdir().expect("temp dir");
    let demo = Demo::create(&tmp.path().join("upstream"));
    let root = tmp.path().join("work").join("aiter");
    Setup { tmp, demo, root }
}

impl Setup {
    /// Options naming everything explicitly (no environment, no manifest).
    pub fn options(&self) -> Prepare {
        let mut options = Prepare::new();
        options
            .root(&self.root)
            .url(self.demo.aiter.to_string_lossy())
            .commit(&self.demo.commit)
            .patches_dir(&self.demo.patches)
            .force(false)
            .skip(false)
            .offline(false)
            .cache_dir(self.cache())
            .cargo_metadata(false);
        options
    }

    /// qola's cache for this test (stat snapshots).
    pub fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    pub fn prepare(&self) -> Preparation {
        self.options()
            .try_prepare()
            .unwrap_or_else(|e| panic!("prepare failed: {e}"))
    }

    /// Prepares and expects a refusal; returns the report it carries.
    pub fn refused(&self) -> Preparation {
        match self.options().try_prepare() {
            Err(PrepareError::Refused(report)) => *report,
            Ok(p) => panic!("expected a refusal, got {p}"),
            Err(e) => panic!("expected a refusal, got the error {e}"),
        }
    }

    pub fn ck(&self) -> PathBuf {
        self.root.join("3rdparty/composable_kernel")
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
    }

    pub fn write(&self, path: &str, content: &str) {
        write(&self.root, path, content);
    }

    pub fn add_patch(&self, name: &str, text: impl AsRef<[u8]>) {
        write(&self.demo.patches, name, text);
    }

    pub fn stamp(&self) -> PathBuf {
        self.root.join(".git/qola/stamp.json")
    }
}

/// The `qola` binary of this build (the `cli` feature), for the tests that run it.
pub fn qola_binary() -> &'static str {
    match option_env!("CARGO_BIN_EXE_qola") {
        Some(qola) => qola,
        None => panic!("the qola binary: build the tests with --features cli"),
    }
}

/// `qola` with none of the caller's `QOLA_*` variables (nor those named in `names`): where every
/// test that runs qola starts its command.
pub fn qola_command(names: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(qola_binary());
    qola_tests::without_caller_env(&mut command, &[], names);
    command
}

/// `qola <args>` in `s`'s directory with `s`'s cache (see [`qola_command`]; nor
/// `CARGO_NET_OFFLINE`).
pub fn qola(s: &Setup, args: &[&str]) -> std::process::Command {
    let mut command = qola_command(&["CARGO_NET_OFFLINE"]);
    command.current_dir(s.tmp.path()).args(args);
    command.env("QOLA_CACHE_DIR", s.cache());
    command
}

/// `qola <verb>` with the demo's checkout, URL, commit and series named, then `extra`.
pub fn explicit(s: &Setup, verb: &str, extra: &[&str]) -> std::process::Command {
    let mut command = qola(s, &[verb]);
    command
        .arg("--root")
        .arg(&s.root)
        .arg("--url")
        .arg(&s.demo.aiter)
        .args(["--commit", &s.demo.commit, "--patches"])
        .arg(&s.demo.patches)
        .args(extra);
    command
}

/// Paths patched by the demo series, to check after a preparation.
pub const PATCHED_SUPER: &str = "csrc/include/mha_fwd.h";
pub const PATCHED_CK: &str =
    "3rdparty/composable_kernel/example/ck_tile/01_fmha/codegen/cpp_symbol_map.py";
pub const CREATED: &str = "csrc/include/qola_version.h";
pub const UNTOUCHED: &str = "README.md";

/// Asserts the demo series is applied in the checkout.
pub fn assert_prepared(s: &Setup) {
    assert!(s.read(PATCHED_SUPER).contains("void* lse;"));
    assert!(s.read(PATCHED_CK).contains("transformer_engine"));
    assert!(s.read(CREATED).contains("QOLA_PATCHED"));
    assert!(
        s.read("3rdparty/composable_kernel/include/ck_tile/core/config.hpp")
            .contains("CK_TILE_QOLA")
    );
}

/// Modification times of every file and directory under `dir`, `.git` included.
pub fn mtimes(dir: &Path) -> BTreeMap<PathBuf, SystemTime> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir").flatten() {
            let meta = entry.path().symlink_metadata().expect("metadata");
            out.insert(entry.path(), meta.modified().expect("mtime"));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out
}

/// The paths whose mtime changed, appeared or disappeared.
pub fn changed(
    before: &BTreeMap<PathBuf, SystemTime>,
    after: &BTreeMap<PathBuf, SystemTime>,
) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = before
        .iter()
        .filter(|(p, t)| after.get(*p) != Some(*t))
        .map(|(p, _)| p.clone())
        .collect();
    paths.extend(after.keys().filter(|p| !before.contains_key(*p)).cloned());
    paths
}

/// Asserts that nothing under `dir` was written since `before` was taken.
pub fn assert_nothing_written(before: &BTreeMap<PathBuf, SystemTime>, dir: &Path) {
    assert_eq!(changed(before, &mtimes(dir)), Vec::<PathBuf>::new());
}

/// Sets a file's mtime to now, leaving its content as it is.
pub fn touch(path: &Path) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .unwrap_or_else(|e| panic!("touch {}: {e}", path.display()));
}

pub fn kinds(p: &Preparation) -> Vec<ReasonKind> {
    p.reasons.iter().map(|r| r.kind).collect()
}

pub fn assert_action(p: &Preparation, action: Action) {
    assert_eq!(p.action, action, "{p}");
}

/// Lets the clock move on so that a rewritten file would get a new mtime.
pub fn tick() {
    std::thread::sleep(std::time::Duration::from_millis(20));
}

/// Whether this process is a child started by [`child`].
pub fn is_child() -> bool {
    std::env::var_os("QOLA_TEST_CHILD").is_some()
}

/// This test binary again, running only the test `name`, as a child process marked by
/// `QOLA_TEST_CHILD=1` (for what needs its own environment or a kill).
pub fn child(name: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().expect("test binary"));
    command
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("QOLA_TEST_CHILD", "1");
    command
}

/// Asserts that `out` (`qola prepare --json`) finished an interrupted preparation and took
/// nothing for a local edit; its report.
pub fn assert_finished(out: &std::process::Output, step: &str) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{step}: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    assert!(
        text.contains("finished an interrupted prepare"),
        "{step}: {v}"
    );
    for wrong in ["local edits", "lost their patches", "half-written"] {
        assert!(!text.contains(wrong), "{step}: {wrong}: {v}");
    }
    assert_eq!(v["edited_paths"], serde_json::json!([]), "{step}: {v}");
    v
}

/// The real tree, prepared once per test process (in `target/qola-fixtures/aiter-prepared`).
pub fn prepared_aiter() -> Option<PathBuf> {
    static ROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let real = qola_tests::real_aiter()?;
        let fixtures = qola_tests::fixtures_dir();
        let p = qola_build::Prepare::new()
            .root(fixtures.join("aiter-prepared"))
            .url(real.upstream.to_string_lossy())
            .commit(&real.commit)
            .patches_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-build/patches/aiter"))
            .cache_dir(fixtures.join("cache"))
            .cargo_metadata(false)
            .force(false)
            .skip(false)
            .offline(false)
            .try_prepare()
            .unwrap_or_else(|e| panic!("{e}"));
        Some(p.root)
    })
    .clone()
}

/// A copy of the checkout `from` (a prepared AITER tree with its submodule) at `to`, as a second
/// checkout of the same content is: `cp -a`, then each repository's index refreshed. The copy's
/// files have new inode change times, which its copied index does not hold, so every status in
/// it would hash all ~9,000 files again (2 s of CPU per qola command on the real tree); a
/// checkout git or qola made has them. `from` is only read: a hard-linked copy changes the
/// change time of every file it links, in the source too.
pub fn copy_checkout(from: &Path, to: &Path) {
    qola_tests::run_ok(std::process::Command::new("cp").arg("-a").arg(from).arg(to));
    qola_tests::run_ok(&mut qola_tests::git_command(
        to,
        &["update-index", "-q", "--refresh"],
    ));
    qola_tests::run_ok(&mut qola_tests::git_command(
        to,
        &[
            "submodule",
            "foreach",
            "--quiet",
            "--recursive",
            "git update-index -q --refresh",
        ],
    ));
}

/// The child side of the team-cache tests: compiles the demo HIP project of the current
/// directory (a root of the build, by name, as a build script's crate directory is) for `arch`
/// through the compiler and launcher of the environment, after `edit` (a test that changes
/// the sources); prints qola's summary.
pub fn compile_demo_here(arch: &str, edit: impl FnOnce(&qola_tests::HipProject)) {
    let dir = std::env::current_dir().unwrap();
    let project = qola_tests::HipProject::create(&dir.join("src"));
    edit(&project);
    let report = qola_build::HipBuild::new()
        .files(&project.sources)
        .include(&project.include)
        .root("project", &dir)
        .arch(arch)
        .out_dir(dir.join("out"))
        .cargo_metadata(false)
        .try_compile("demo")
        .unwrap_or_else(|e| panic!("{e}"));
    println!("{}", report.summary());
}

/// `ccache --print-stats` for the ccache in `dir`.
pub fn ccache_stats(dir: &Path) -> String {
    let out = std::process::Command::new("ccache")
        .env("CCACHE_DIR", dir)
        .arg("--print-stats")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The counter `name` in `stats` (see [`ccache_stats`]); 0 when ccache did not print it.
pub fn ccache_count(stats: &str, name: &str) -> u64 {
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}\t")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The counter `name` of the ccache in `dir`.
pub fn ccache_counter(dir: &Path, name: &str) -> u64 {
    ccache_count(&ccache_stats(dir), name)
}

/// The jobs `build`'s plan names, as the timings trace names them (`<source>: <job>`), sorted.
pub fn planned_jobs(build: &qola_build::HipBuild, library: &str) -> Vec<String> {
    let plan = build.try_plan(library).unwrap_or_else(|e| panic!("{e}"));
    let mut jobs: Vec<String> = plan
        .units
        .iter()
        .flat_map(|u| {
            let name = u.source.file_name().unwrap().to_string_lossy().into_owned();
            u.jobs.iter().map(move |j| format!("{name}: {}", j.job))
        })
        .chain(
            plan.shared_jobs
                .iter()
                .map(|j| format!("(shared): {}", j.job)),
        )
        .collect();
    jobs.sort();
    jobs
}

/// The jobs the timings trace of `library`'s build into `out` names, sorted.
pub fn traced_jobs(out: &Path, library: &str) -> Vec<String> {
    let file = out.join(format!("qola-timings-{library}.json"));
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut jobs: Vec<String> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    jobs.sort();
    jobs
}

/// The dynamic symbols a library defines (`readelf --dyn-syms`: global or weak, not undefined).
pub fn exported(library: &Path) -> Vec<String> {
    let out = std::process::Command::new("readelf")
        .args(["-W", "--dyn-syms"])
        .arg(library)
        .output()
        .unwrap();
    assert!(out.status.success(), "readelf {}", library.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && (f[4] == "GLOBAL" || f[4] == "WEAK") && f[6] != "UND")
                .then(|| f[7].to_string())
        })
        .collect()
}

/// A command's standard error.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The file names of the units a build compiled (not taken from qola's cache).
pub fn compiled(report: &qola_build::CompileReport) -> Vec<String> {
    report
        .units
        .iter()
        .filter(|u| u.compiled)
        .map(|u| u.source.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// A command's standard output and standard error, as one text.
pub fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Compiles and links a caller of qola's libraries: `source` (C++) into `program` with `hipcc`,
/// `includes` on its path, linking each of `libs` (`-l:<file>`) from `lib` with that directory
/// as its run path.
pub fn link_caller(
    hipcc: &Path,
    source: &Path,
    includes: &[&Path],
    lib: &Path,
    libs: &[&str],
    program: &Path,
) {
    let mut command = std::process::Command::new(hipcc);
    command.arg(source);
    for dir in includes {
        command.arg("-I").arg(dir);
    }
    command
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    for name in libs {
        command.arg(format!("-l:{name}"));
    }
    qola_tests::run_ok(command.arg("-o").arg(program));
}

/// Module `m` of the tree at `root` for gfx942 with `hipcc`, its code generated under
/// `gen_dir` (CK's `--filter` `filter`), flag probes in the fixtures' cache.
pub fn prepare_gfx942_module(
    root: &Path,
    hipcc: &Path,
    m: &qola_build::manifest::Module,
    filter: Option<&str>,
    gen_dir: &Path,
) -> qola_build::aiter::AiterModule {
    let archs = ["gfx942".to_string()];
    qola_build::aiter::prepare_module(&qola_build::aiter::AiterModuleSpec {
        root,
        module: m,
        archs: &archs,
        gen_dir,
        cache: &qola_tests::fixtures_dir().join("cache"),
        ck_filter: filter,
        variants: &Default::default(),
        compiler: Some(hipcc),
        toolchain: None,
        cargo_metadata: false,
        registry: None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}
