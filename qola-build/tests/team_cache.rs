//! A build a second machine gets for free: ccache as qola's compiler launcher, with a real Redis
//! as its remote storage, and two "machines": two copies at different paths, each with its own
//! empty local ccache and its own qola cache (and, for AITER, its own checkout). Everything B
//! compiles must come from Redis.
//!
//! The ccache settings are the ones docs/team-builds.md gives teams: only the remote storage, and
//! for the sid toolchain wrapper `compiler_check = %compiler% --version`. No `base_dir`, no
//! `hash_dir`: qola compiles every path under its roots by name from its links' directory and
//! sets those two for ccache itself.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use qola_tests::{RedisServer, TWO_INSTANCE_FWD_FILTER, copy_tracked, tool};

/// ccache's environment for `machine`'s builds, sharing `redis`.
fn ccache_env(machine: &Path, redis: &RedisServer) -> Vec<(String, String)> {
    [
        ("QOLA_COMPILER_LAUNCHER", "ccache".to_string()),
        ("CCACHE_DIR", machine.join("ccache").display().to_string()),
        ("CCACHE_REMOTE_STORAGE", redis.url()),
        ("CCACHE_COMPILERCHECK", "%compiler% --version".to_string()),
        (
            "QOLA_CACHE_DIR",
            machine.join("qola-cache").display().to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `command` without inherited qola or ccache settings, with `env`.
fn with_env(command: &mut Command, env: &[(String, String)]) {
    qola_tests::without_caller_env(command, &["CCACHE_"], &[]);
    command.envs(env.iter().map(|(k, v)| (k, v)));
}

/// qola's summary lines in a build's output (one per library that compiled), one a line.
fn summary(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("qola compiled"))
        .collect();
    assert!(!lines.is_empty(), "no summary: {text}");
    lines.join("\n")
}

/// The units each summary line of `summary` says were compiled, each with whether ccache's
/// remote storage answered every one of them.
fn compiled_and_answered_remotely(summary: &str) -> Vec<(usize, bool)> {
    summary
        .lines()
        .map(|line| {
            let after = line.split("qola compiled ").nth(1).expect("a count");
            let n: usize = after.split(' ').next().unwrap().parse().expect("a number");
            let remote =
                format!("ccache answered {n} of the {n} compiles ({n} from remote storage)");
            (n, line.contains(&remote))
        })
        .collect()
}

/// The seconds qola's summary lines report, added up.
fn seconds(summary: &str) -> f64 {
    summary
        .lines()
        .map(|line| {
            let after = line.split(" in ").nth(1).expect("a time");
            after
                .split('s')
                .next()
                .unwrap()
                .parse::<f64>()
                .expect("seconds")
        })
        .sum()
}

/// Says how long each machine's compiles of `what` took in qola, straight to stderr (past the
/// test harness's capture): CI's log shows the ratio.
fn report_seconds(what: &str, a: &str, b: &str) {
    let report = format!(
        "team cache, {what}: machine A {:.1} s in qola, machine B {:.1} s in qola, B/A: {:.3}\n",
        seconds(a),
        seconds(b),
        seconds(b) / seconds(a)
    );
    std::io::stderr().write_all(report.as_bytes()).unwrap();
}

#[test]
fn a_second_workspace_gets_every_qola_sys_unit_from_the_shared_redis_cache() {
    let (Some(_), Some(redis_server)) = (
        tool("ccache", "ccache"),
        tool("redis-server", "redis-server"),
    ) else {
        return;
    };
    if !qola_tests::hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let redis = RedisServer::start(&redis_server, &tmp.path().join("redis"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for machine in ["A", "B"] {
        copy_tracked(&workspace, &tmp.path().join(machine).join("qola"));
    }
    // `cargo build -p qola-sys` in `machine`'s copy with `kernels`' settings.
    let build = |machine: &str, kernels: &[(String, String)]| -> String {
        let dir = tmp.path().join(machine);
        let mut command = Command::new(env!("CARGO"));
        command
            .current_dir(dir.join("qola"))
            .args(["build", "-p", "qola-sys", "--offline"])
            .env("CARGO_TERM_COLOR", "never");
        let mut env = ccache_env(&dir, &redis);
        env.extend_from_slice(kernels);
        with_env(&mut command, &env);
        // Shared, so registry crates compile once; each copy's own crates build apart.
        qola_tests::nested_cargo(&mut command);
        summary(&command.output().unwrap())
    };
    let a = build("A", &[]);
    assert!(
        a.contains("qola compiled 11 of 11 HIP units")
            && a.contains("ccache answered 0 of the 11 compiles"),
        "{a}"
    );
    let b = build("B", &[]);
    assert!(
        b.contains("qola compiled 11 of 11 HIP units")
            && b.contains("ccache answered 11 of the 11 compiles (11 from remote storage)"),
        "{b}"
    );
    let b_ccache = tmp.path().join("B/ccache");
    assert_eq!(common::ccache_counter(&b_ccache, "remote_storage_hit"), 11);
    assert_eq!(common::ccache_counter(&b_ccache, "cache_miss"), 0);
    report_seconds("built-in kernels", &a, &b);

    // The narrow AITER forward with the sid toolchain, each machine preparing its own AITER
    // checkout at its own path from the same upstream: B's compiler never runs.
    let (Some(real), Some(sid_hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let aiter = |machine: &str| -> Vec<(String, String)> {
        let root = tmp.path().join(machine).join("aiter");
        [
            ("QOLA_KERNELS", "aiter".to_string()),
            ("QOLA_AITER_URL", real.upstream.display().to_string()),
            ("QOLA_AITER_COMMIT", real.commit.clone()),
            ("QOLA_AITER_ROOT", root.display().to_string()),
            ("QOLA_AITER_MODULES", "libmha_fwd".to_string()),
            (
                "QOLA_CK_FILTER_LIBMHA_FWD",
                TWO_INSTANCE_FWD_FILTER.to_string(),
            ),
            ("HIPCC", sid_hipcc.display().to_string()),
            ("GPU_ARCHS", "gfx942".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    let a = build("A", &aiter("A"));
    let a_units: usize = compiled_and_answered_remotely(&a).iter().map(|u| u.0).sum();
    assert_eq!(
        a_units, 6,
        "5 units of libmha_fwd (its two CK instances in one batch) and the status library's 1: {a}"
    );
    let remote_hits_before = common::ccache_counter(&b_ccache, "remote_storage_hit");
    let b = build("B", &aiter("B"));
    let b_units = compiled_and_answered_remotely(&b);
    assert!(
        b_units.iter().map(|u| u.0).sum::<usize>() == a_units
            && b_units.iter().all(|(_, remote)| *remote),
        "{b}"
    );
    assert_eq!(
        common::ccache_counter(&b_ccache, "remote_storage_hit") - remote_hits_before,
        a_units as u64
    );
    assert_eq!(common::ccache_counter(&b_ccache, "cache_miss"), 0);
    report_seconds("narrow AITER forward", &a, &b);
}

#[test]
fn the_sid_toolchain_wrapper_hits_the_shared_redis_cache_from_another_path() {
    if common::is_child() {
        return common::compile_demo_here("gfx942", |_| {});
    }
    let (Some(_), Some(redis_server)) = (
        tool("ccache", "ccache"),
        tool("redis-server", "redis-server"),
    ) else {
        return;
    };
    let Some(sid_hipcc) = qola_tests::sid_hipcc() else {
        return;
    };
    // Under target/qola-fixtures, which the wrapper binds into its root.
    let tmp = tempfile::tempdir_in(qola_tests::fixtures_dir()).unwrap();
    let redis = RedisServer::start(&redis_server, &tmp.path().join("redis"));
    let run = |machine: &str| -> String {
        let dir: PathBuf = tmp.path().join(machine);
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = common::child(
            "the_sid_toolchain_wrapper_hits_the_shared_redis_cache_from_another_path",
        );
        command.current_dir(&dir);
        let mut env = ccache_env(&dir, &redis);
        env.push(("HIPCC".to_string(), sid_hipcc.display().to_string()));
        with_env(&mut command, &env);
        summary(&command.output().unwrap())
    };
    let a = run("A");
    assert!(a.contains("qola compiled 3 of 3 HIP units"), "{a}");
    let b = run("B");
    assert!(
        b.contains("ccache answered 3 of the 3 compiles (3 from remote storage)"),
        "{b}"
    );
}
