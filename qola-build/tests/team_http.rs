//! A team's read-only shared cache over HTTP, for real on loopback: nginx (Debian's) serving a
//! WebDAV directory as ccache's `remote_storage`, started and stopped by the test, and four
//! "machines" (their own paths, their own local ccache, their own qola cache; no `base_dir` by
//! hand) building the same HIP project with Debian's hipcc, ccache as qola's launcher:
//!
//! * A (CI, read-write) fills the HTTP cache;
//! * B (another path) compiles nothing: ccache's remote storage answers every unit;
//! * C (a developer, `|read-only`) with other sources compiles them and never writes;
//! * D, with the server down, builds here with one warning: it did not answer;
//! * E, against a server that refuses its writes (HTTP 403), builds here with one warning: it
//!   answered and refused, with what to check.
//!
//! The setup is the one docs/team-builds.md gives.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use qola_tests::{HttpCache, tool};

/// The lines of `stderr` about the launcher's remote storage's failures: exactly one.
fn remote_warnings(stderr: &str) -> Vec<&str> {
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("'s remote storage"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    warnings
}

#[test]
fn ci_fills_an_http_cache_another_path_compiles_nothing_a_reader_never_writes_and_down_or_refusing_servers_are_told_apart()
 {
    const NAME: &str = "ci_fills_an_http_cache_another_path_compiles_nothing_a_reader_never_writes_and_down_or_refusing_servers_are_told_apart";
    if common::is_child() {
        return common::compile_demo_here("gfx90a", |project| {
            if std::env::var_os("CHANGE_SOURCES").is_some() {
                let shared = project.include.join("shared.h");
                let text = std::fs::read_to_string(&shared).unwrap();
                std::fs::write(&shared, text.replace("2.0f\n", "3.0f\n")).unwrap();
            }
        });
    }
    let (Some(_), Some(nginx)) = (tool("ccache", "ccache"), tool("nginx", "nginx-light")) else {
        return;
    };
    if !qola_tests::hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut http = HttpCache::start(&nginx, &tmp.path().join("nginx"));
    // `machine` builds with the remote storage `remote`; its summary line and standard error.
    let run = |machine: &str, remote: &str, change: bool| -> (String, String) {
        let dir = tmp.path().join(machine);
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = common::child(NAME);
        qola_tests::without_caller_env(&mut command, &["CCACHE_"], &[]);
        command
            .current_dir(&dir)
            .env("QOLA_COMPILER_LAUNCHER", "ccache")
            .env("CCACHE_DIR", dir.join("ccache"))
            .env("CCACHE_REMOTE_STORAGE", remote)
            .env("QOLA_CACHE_DIR", dir.join("qola-cache"));
        if change {
            command.env("CHANGE_SOURCES", "1");
        }
        let out = command.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "{machine}: {stdout}{stderr}");
        let summary = stdout
            .lines()
            .find(|l| l.contains("qola compiled"))
            .unwrap_or_else(|| panic!("{machine}: no summary: {stdout}{stderr}"))
            .to_string();
        (summary, stderr)
    };

    let (a, _) = run("A", &http.url(), false);
    assert!(
        a.contains("qola compiled 3 of 3 HIP units") && a.contains("ccache answered 0 of the 3"),
        "{a}"
    );
    let stored = http.files();
    assert!(
        stored >= 3,
        "A wrote its results to the HTTP cache: {stored} files"
    );

    let (b, _) = run("B", &http.url(), false);
    assert!(
        b.contains("ccache answered 3 of the 3 compiles (3 from remote storage)"),
        "{b}"
    );
    assert_eq!(
        common::ccache_counter(&tmp.path().join("B/ccache"), "cache_miss"),
        0
    );

    // A reader with other sources: everything compiles here; the cache is never written.
    let puts = http.requests("PUT");
    let (c, _) = run("C", &format!("{}|read-only", http.url()), true);
    assert!(
        c.contains("qola compiled 3 of 3 HIP units") && c.contains("ccache answered 0 of the 3"),
        "{c}"
    );
    assert_eq!(
        http.requests("PUT"),
        puts,
        "a read-only client never writes"
    );
    assert_eq!(http.files(), stored);

    // The server down: a local build, and one warning that says so.
    let url = http.url();
    http.stop();
    let (d, stderr) = run("D", &url, false);
    assert!(
        d.contains("qola compiled 3 of 3 HIP units") && d.contains("ccache answered 0 of the 3"),
        "{d}"
    );
    let warnings = remote_warnings(&stderr);
    assert!(
        warnings[0].contains("did not answer")
            && warnings[0].contains("check that the server is up"),
        "{stderr}"
    );

    // A server that answers reads and refuses writes from this address: a refusal, in words
    // that say it answered and what to check; never "did not answer".
    let refusing = HttpCache::start_with(
        &nginx,
        &tmp.path().join("nginx-refusing"),
        "limit_except GET HEAD { allow 10.0.0.0/8; deny all; }",
    );
    let (e, stderr) = run("E", &refusing.url(), false);
    assert!(e.contains("qola compiled 3 of 3 HIP units"), "{e}");
    let warnings = remote_warnings(&stderr);
    assert!(
        warnings[0]
            .contains("remote storage refused 3 requests (HTTP 403): it answered and said no")
            && warnings[0].contains("limit_except")
            && warnings[0].contains("|read-only"),
        "{stderr}"
    );
    assert_eq!(refusing.files(), 0, "nothing was written");
}
