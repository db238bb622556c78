//! The object cache as a database: it never links a wrong object, never fails a build because it
//! cannot be written, never grows without bound, never writes outside its places, and never
//! blocks without saying for what. Each fault is placed for real (a read-only mount, another
//! user, a full file system, bytes flipped on disk, a build killed or stopped at a named step),
//! never by a sleep. Builds run with the stand-in compiler (`tests/fake/hipcc`: qola's own
//! caching logic), in child processes where a fault needs its own environment.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::compiled;
use qola_build::{CompileReport, HipBuild};
use qola_tests::{HipProject, resume, wait_until_stopped};

/// A project, a cache and output directories under one temporary directory.
struct Setup {
    tmp: tempfile::TempDir,
    project: HipProject,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let project = HipProject::create(&tmp.path().join("src"));
    Setup { tmp, project }
}

impl Setup {
    fn dir(&self) -> &Path {
        self.tmp.path()
    }

    fn cache(&self) -> PathBuf {
        self.dir().join("cache")
    }

    /// A build of the project into `out`, with the stand-in compiler.
    fn build(&self, out: &str) -> HipBuild {
        build_of(&self.project, &self.cache(), &self.dir().join(out))
    }

    fn compile(&self, out: &str) -> CompileReport {
        self.build(out)
            .try_compile("demo")
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// This test binary again, running [`child_build`] into `out` (see there).
    /// A child build into `out` that claimed every unit and stopped there, as if compiling.
    fn holding_every_claim(&self, out: &str) -> std::process::Child {
        let holder = self
            .child(out)
            .env("QOLA_TEST_STOP_AT", "compile:claimed")
            .spawn()
            .unwrap();
        assert!(wait_until_stopped(&holder));
        holder
    }

    fn child(&self, out: &str) -> Command {
        let mut command = common::child("child_build");
        command
            .env("QOLA_TEST_DIR", self.dir())
            .env("QOLA_TEST_OUT", self.dir().join(out))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

fn build_of(project: &HipProject, cache: &Path, out: &Path) -> HipBuild {
    let mut b = HipBuild::new();
    b.files(&project.sources)
        .include(&project.include)
        .arch("gfx90a")
        .compiler(qola_tests::fake_hipcc())
        .cache_dir(cache)
        .out_dir(out)
        .export("qola_a")
        .jobs(2)
        .cargo_metadata(false);
    b
}

/// A build in a child process (`QOLA_TEST_CHILD`): the project of `QOLA_TEST_DIR` into
/// `QOLA_TEST_OUT`, with `-D<QOLA_TEST_DEFINE>` when set (`-D<QOLA_TEST_C_DEFINE>` on `c.hip`
/// alone); prints `qola-test-compiled <n>` and each
/// compiled unit's reason. With `QOLA_TEST_FILL` it first fills the file system of the cache.
#[test]
fn child_build() {
    if !common::is_child() {
        return;
    }
    let dir = PathBuf::from(std::env::var_os("QOLA_TEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var_os("QOLA_TEST_OUT").unwrap());
    let project = HipProject {
        dir: dir.join("src"),
        sources: ["a", "b", "c"]
            .iter()
            .map(|n| dir.join("src").join(format!("{n}.hip")))
            .collect(),
        include: dir.join("src/include"),
    };
    if std::env::var_os("QOLA_TEST_FILL").is_some() {
        fill(&dir.join("cache"));
    }
    let mut build = build_of(&project, &dir.join("cache"), &out);
    if let Ok(define) = std::env::var("QOLA_TEST_DEFINE") {
        build.define(&define, None);
    }
    if let Ok(define) = std::env::var("QOLA_TEST_C_DEFINE") {
        build.file_flags(&project.sources[2], &[format!("-D{define}")]);
    }
    let report = build.try_compile("demo").unwrap_or_else(|e| panic!("{e}"));
    // On a line of its own: the test harness prints its own words before a test's output.
    println!("\nqola-test-compiled {}", report.compiled());
    for unit in report.units.iter().filter(|u| u.compiled) {
        println!("reason {}", unit.reason);
    }
}

/// bubblewrap over this machine's file system, with a /dev and /proc of its own and the host's
/// /dev/shm (where the tests' TMPDIR may be: tools/test-all), for a test's mounts on top.
fn over_the_host() -> Command {
    let mut command = Command::new("bwrap");
    command
        .args(["--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
        .args(["--bind", "/dev/shm", "/dev/shm"]);
    command
}

/// Writes into `dir` until its file system is full.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while file.write_all(&block).and_then(|()| file.flush()).is_ok() {}
}

fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// How many units a child build compiled.
fn child_compiled(out: &Output) -> usize {
    let text = output_text(out);
    assert!(out.status.success(), "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix("qola-test-compiled "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count: {text}"))
}

/// A child build whose standard error is read as it goes: [`Speaking::until`] it says some
/// words, then [`Speaking::finish`].
struct Speaking {
    child: std::process::Child,
    stderr: std::io::BufReader<std::process::ChildStderr>,
    said: String,
}

impl Speaking {
    fn spawn(command: &mut Command) -> Speaking {
        let mut child = command.spawn().unwrap();
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        Speaking {
            child,
            stderr,
            said: String::new(),
        }
    }

    /// Reads until what the child said contains `words` (all it said so far); panics if it
    /// ends first.
    fn until(&mut self, words: &str) -> &str {
        while !self.said.contains(words) {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut self.stderr, &mut line).unwrap() == 0 {
                panic!("the build never said {words:?}: {}", self.said);
            }
            self.said.push_str(&line);
        }
        &self.said
    }

    /// Waits for the child: whether it succeeded, and all it printed (standard output first).
    fn finish(mut self) -> (bool, String) {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stderr, &mut rest).unwrap();
        let out = self.child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        (out.status.success(), format!("{stdout}{}{rest}", self.said))
    }
}

/// Every file under `dir` with its content: what a build must leave as it was.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.symlink_metadata().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn object_files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    found.sort();
    found
}

#[test]
fn a_corrupt_or_truncated_object_is_never_linked_and_compiles_again() {
    let s = setup();
    let first = s.compile("out-a");
    assert_eq!(compiled(&first).len(), 3);
    // 64 bytes flipped in b's object, the size unchanged.
    let b = first.units[1].object.clone();
    let good = std::fs::read(&b).unwrap();
    let mut flipped = good.clone();
    for byte in &mut flipped[64..128] {
        *byte ^= 0xff;
    }
    std::fs::write(&b, &flipped).unwrap();
    // Another output directory links the library from the cache: b's entry fails its check,
    // is removed and compiled again; the library holds the good bytes.
    let second = s.compile("out-b");
    assert_eq!(compiled(&second), ["b.hip"]);
    let reason = &second.units[1].reason;
    assert!(
        reason.contains(&b.display().to_string()) && reason.contains("not what was stored"),
        "{reason}"
    );
    assert_eq!(std::fs::read(&second.units[1].object).unwrap(), good);
    // A truncated object: the same.
    let c = second.units[2].object.clone();
    std::fs::write(&c, &std::fs::read(&c).unwrap()[..100]).unwrap();
    let third = s.compile("out-c");
    assert_eq!(compiled(&third), ["c.hip"]);
    assert!(third.units[2].reason.contains("not what was stored"));
    // A build whose library is up to date links nothing and checks nothing.
    assert!(compiled(&s.compile("out-c")).is_empty());
}

#[test]
fn a_warm_cache_on_a_read_only_mount_answers_hits_and_the_build_compiles_the_rest_itself() {
    let s = setup();
    let first = s.compile("out-a");
    std::fs::remove_file(&first.units[0].object).unwrap();
    let (home, tmpdir) = (s.dir().join("home"), s.dir().join("tmpdir"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmpdir).unwrap();
    let before = contents(&s.cache());
    // The cache, HOME and TMPDIR on read-only mounts (bubblewrap): nothing may go there.
    let mut command = over_the_host();
    for dir in [s.cache(), home.clone(), tmpdir.clone()] {
        command.arg("--ro-bind").arg(&dir).arg(&dir);
    }
    let child = s.child("out-ro");
    command
        .arg(child.get_program())
        .args(child.get_args())
        .envs(child.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("HOME", &home)
        .env("TMPDIR", &tmpdir);
    let out = command.output().unwrap();
    assert_eq!(child_compiled(&out), 1, "{}", output_text(&out));
    let text = output_text(&out);
    assert!(
        text.contains(&format!(
            "qola's object cache {} cannot be written",
            s.cache().join("hip").display()
        )) && text.contains("Read-only file system")
            && text.contains("QOLA_CACHE_DIR"),
        "{text}"
    );
    assert_eq!(
        text.matches("cannot be written").count(),
        1,
        "said once: {text}"
    );
    assert_eq!(contents(&s.cache()), before);
    assert!(contents(&home).is_empty() && contents(&tmpdir).is_empty());
    // Hits copied into the build's own cache after their check, the compiled unit kept there.
    let own = object_files(&s.dir().join("out-ro/qola-cache/hip/objects"));
    assert_eq!(own.len(), 3, "{own:?}");
}

#[test]
fn an_empty_cache_another_user_cannot_write_is_not_an_error() {
    let s = setup();
    // A cache and HOME owned by root, a build run as nobody (setpriv): permission denied.
    use std::os::unix::fs::PermissionsExt;
    let open = |dir: &Path, mode: u32| {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    open(s.dir(), 0o755);
    open(&s.cache(), 0o755);
    open(&s.dir().join("home"), 0o755);
    open(&s.dir().join("out-nobody"), 0o777);
    let child = s.child("out-nobody");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(child.get_program())
        .args(child.get_args())
        .envs(child.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("HOME", s.dir().join("home"))
        .env("TMPDIR", s.dir().join("home"))
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(child_compiled(&out), 3, "{text}");
    assert!(
        text.contains("cannot be written") && text.contains("Permission denied"),
        "{text}"
    );
    assert!(contents(&s.cache()).is_empty(), "nothing in the cache");
    assert!(contents(&s.dir().join("home")).is_empty());
    assert_eq!(
        object_files(&s.dir().join("out-nobody/qola-cache/hip/objects")).len(),
        3
    );
}

#[test]
fn a_full_cache_is_reported_as_full_and_the_build_compiles_into_its_own() {
    let s = setup();
    std::fs::create_dir_all(s.cache()).unwrap();
    // The cache on a small tmpfs of its own (bubblewrap), filled by the child before it builds.
    let child = s.child("out-full");
    let out = over_the_host()
        .args(["--size", "1048576", "--tmpfs"])
        .arg(s.cache())
        .arg(child.get_program())
        .args(child.get_args())
        .envs(child.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("QOLA_TEST_FILL", "1")
        .output()
        .unwrap();
    let text = output_text(&out);
    assert_eq!(child_compiled(&out), 3, "{text}");
    assert!(
        text.contains("cannot be written") && text.contains("No space left on device"),
        "{text}"
    );
    assert!(
        !text.contains("repro.sh"),
        "not a failed kernel compile: {text}"
    );
    assert_eq!(
        object_files(&s.dir().join("out-full/qola-cache/hip/objects")).len(),
        3
    );
}

#[test]
fn what_killed_builds_leave_is_counted_and_removed_by_the_next_build_and_by_clear() {
    let s = setup();
    s.compile("out");
    let kill_while_storing = |define: &str| {
        let out = s
            .child("out")
            .env("QOLA_TEST_DEFINE", define)
            .env("QOLA_TEST_KILL_AT", "cache:locked")
            .output()
            .unwrap();
        assert!(!out.status.success(), "killed: {}", output_text(&out));
    };
    let leftovers = || {
        qola_build::object_cache_usage(Some(&s.cache()))
            .unwrap()
            .leftovers
    };
    // Each killed build leaves its scratch; the next one (which compiles) removes what the one
    // before it left: they never pile up.
    for define in ["K1", "K2", "K3"] {
        kill_while_storing(define);
        assert_eq!(leftovers(), 1, "after {define}");
    }
    let usage = qola_build::object_cache_usage(Some(&s.cache())).unwrap();
    assert!(usage.other_bytes > 0, "they count toward the size");
    // The next build that compiles removes them.
    let mut next = s.build("out");
    next.define("NEXT", None);
    next.try_compile("demo").unwrap();
    assert_eq!(leftovers(), 0);
    // `qola cache --clear` too.
    kill_while_storing("K4");
    assert_eq!(leftovers(), 1);
    qola_build::clear_object_cache(Some(&s.cache())).unwrap();
    let usage = qola_build::object_cache_usage(Some(&s.cache())).unwrap();
    assert_eq!((usage.leftovers, usage.objects), (0, 0));
    assert!(!s.cache().join("hip/tmp").read_dir().unwrap().any(|_| true));
}

#[test]
fn compilers_temporary_files_stay_in_the_build_s_scratch() {
    if !qola_tests::hipcc_available() {
        return;
    }
    let s = setup();
    let tmpdir = s.dir().join("tmpdir");
    std::fs::create_dir_all(&tmpdir).unwrap();
    // A build with Debian's hipcc (which leaves a directory per compile in TMPDIR), in a child
    // whose TMPDIR is `tmpdir`.
    let mut command = common::child("child_hipcc_build");
    let out = command
        .env("QOLA_TEST_DIR", s.dir())
        .env("TMPDIR", &tmpdir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(contents(&tmpdir).is_empty(), "{:?}", contents(&tmpdir));
    assert!(!s.cache().join("hip/tmp").read_dir().unwrap().any(|_| true));
}

/// [`compilers_temporary_files_stay_in_the_build_s_scratch`]'s build, with the real hipcc.
#[test]
fn child_hipcc_build() {
    if !common::is_child() {
        return;
    }
    let dir = PathBuf::from(std::env::var_os("QOLA_TEST_DIR").unwrap());
    let project = HipProject::create(&dir.join("src-hipcc"));
    let report = HipBuild::new()
        .files(&project.sources)
        .include(&project.include)
        .arch("gfx90a")
        .cache_dir(dir.join("cache"))
        .out_dir(dir.join("out-hipcc"))
        .jobs(2)
        .cargo_metadata(false)
        .try_compile("demo")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.compiled(), 3);
}

#[test]
fn an_object_planned_for_reuse_is_held_whatever_another_build_evicts() {
    let s = setup();
    s.compile("out-a");
    // A build into another directory plans to reuse every object, then stops before it links;
    // meanwhile the cache is cleared (everything no running build holds is evicted).
    let child = s
        .child("out-b")
        .env("QOLA_TEST_STOP_AT", "compile:planned")
        .spawn()
        .unwrap();
    assert!(
        wait_until_stopped(&child),
        "the build stopped where it was told"
    );
    let evicted = qola_build::clear_object_cache(Some(&s.cache())).unwrap();
    assert_eq!(
        evicted.objects, 0,
        "every object is held by the stopped build's lease"
    );
    resume(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(child_compiled(&out), 0, "{}", output_text(&out));
}

#[test]
fn links_qola_makes_never_follow_a_symlink_and_never_replace_a_file() {
    let s = setup();
    let outside = s.dir().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("out"), "someone's file").unwrap();
    let out = s.dir().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&outside, out.join("qola-roots")).unwrap();
    let before = contents(&outside);
    assert_eq!(compiled(&s.compile("out")).len(), 3);
    assert_eq!(
        contents(&outside),
        before,
        "nothing written through the symlink"
    );
    let roots = out.join("qola-roots");
    assert!(
        roots.symlink_metadata().unwrap().is_dir(),
        "a directory of qola's own"
    );
    // A file in that place may be the user's: refused, named, left as it is.
    std::fs::remove_dir_all(&roots).unwrap();
    std::fs::write(&roots, "mine").unwrap();
    let mut edited = s.build("out");
    edited.define("EDITED", None);
    let error = edited.try_compile("demo").unwrap_err().to_string();
    assert!(error.contains(&roots.display().to_string()), "{error}");
    assert_eq!(std::fs::read_to_string(&roots).unwrap(), "mine");
}

#[test]
fn a_build_stopped_holding_the_cache_lock_is_named_and_statistics_never_wait_for_it() {
    let s = setup();
    s.compile("out");
    // A compiles a new unit and stops while it stores it, holding the cache's lock.
    let stopped = s
        .child("out-a")
        .env("QOLA_TEST_DEFINE", "A")
        .env("QOLA_TEST_STOP_AT", "cache:locked")
        .spawn()
        .unwrap();
    assert!(wait_until_stopped(&stopped));
    // A build with nothing to store (every unit reused) is done without waiting.
    let all_hits = s.child("out-b").output().unwrap();
    assert_eq!(child_compiled(&all_hits), 0);
    // A build that must store says at once what it waits for and who holds it.
    let mut waiting = Speaking::spawn(s.child("out-c").env("QOLA_TEST_DEFINE", "C"));
    let said = waiting.until(&format!("held by pid {}", stopped.id()));
    assert!(said.contains("waiting for qola's object cache"), "{said}");
    resume(&stopped);
    let (succeeded, said) = waiting.finish();
    assert!(succeeded, "{said}");
    let first = stopped.wait_with_output().unwrap();
    assert_eq!(child_compiled(&first), 3);
}

/// `qola cache` for people: what the objects are for, per library and per compiler, each with
/// its objects, size and last use.
#[test]
fn the_cache_says_what_its_objects_are_for_per_library_and_per_compiler() {
    let s = setup();
    s.compile("one");
    let mut two = s.build("two");
    two.define("TWO", None).try_compile("two").unwrap();
    let usage = qola_build::object_cache_usage(Some(&s.cache())).unwrap();
    let libraries: Vec<(&str, usize)> = usage
        .libraries
        .iter()
        .map(|g| (g.name.as_str(), g.objects))
        .collect();
    assert_eq!(libraries, [("demo", 3), ("two", 3)]);
    assert_eq!(usage.compilers.len(), 1, "{:?}", usage.compilers);
    let compiler = &usage.compilers[0];
    assert_eq!(compiler.objects, 6);
    assert_eq!(compiler.bytes, usage.bytes);
    assert!(compiler.last_used.ends_with('Z'), "{compiler:?}");
}

/// Two builds of the same project into two output directories, started together on one empty
/// cache (both planned before either compiles: stopped at `compile:planned`, then let go): each
/// unit is compiled once in all, by whichever build claimed it; the other takes its object.
#[test]
fn two_builds_started_together_on_an_empty_cache_compile_each_unit_once() {
    let s = setup();
    let spawn = |out: &str| {
        s.child(out)
            .env("QOLA_TEST_STOP_AT", "compile:planned")
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("out-a"), spawn("out-b"));
    assert!(wait_until_stopped(&a) && wait_until_stopped(&b));
    resume(&a);
    resume(&b);
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_eq!(
        child_compiled(&a) + child_compiled(&b),
        3,
        "each of the 3 units once: {}{}",
        output_text(&a),
        output_text(&b)
    );
    // Both libraries hold every unit: a third build reuses all of them.
    assert_eq!(compiled(&s.compile("out-c")).len(), 0);
}

/// A build that needs two units another build is compiling, and has one of its own, compiles
/// its own while it waits, then takes the other two: one summary in all, with its own unit, and
/// the first build compiles its three.
#[test]
fn a_waiting_build_compiles_its_own_units_meanwhile_and_sums_up_once() {
    let s = setup();
    let holder = s.holding_every_claim("out-a");
    let mut waiting = Speaking::spawn(s.child("out-b").env("QOLA_TEST_C_DEFINE", "B"));
    waiting.until(&format!("waiting for pid {}", holder.id()));
    resume(&holder);
    let (succeeded, text) = waiting.finish();
    assert!(succeeded, "{text}");
    let summaries: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("qola compiled "))
        .collect();
    assert_eq!(summaries.len(), 1, "{text}");
    assert!(summaries[0].contains("qola compiled 1 of 3 "), "{text}");
    assert_eq!(child_compiled(&holder.wait_with_output().unwrap()), 3);
}

/// A build that needs units another build is compiling says whom it waits for and waits; when
/// that build is killed mid-compile (holding its claims), its claims go with it and the waiting
/// build compiles the units itself, at once, and finishes.
#[test]
fn a_build_killed_mid_compile_leaves_its_units_to_the_build_waiting_for_them() {
    let s = setup();
    let holder = s.holding_every_claim("out-a");
    let mut waiting = Speaking::spawn(&mut s.child("out-b"));
    let said = waiting.until(&format!("waiting for pid {}", holder.id()));
    assert!(said.contains("which compiles "), "{said}");
    // SAFETY: killing our own child, stopped.
    unsafe {
        libc::kill(holder.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = holder.wait_with_output();
    let (succeeded, text) = waiting.finish();
    assert!(succeeded, "{text}");
    let count = text
        .lines()
        .find_map(|l| l.strip_prefix("qola-test-compiled "))
        .and_then(|n| n.trim().parse::<usize>().ok());
    assert_eq!(count, Some(3), "{text}");
}
