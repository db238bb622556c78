use super::*;
use status::SccacheStats;

#[test]
fn the_scheduler_status_gives_servers_and_cpus_or_the_reason_there_are_none() {
    let up = status::parse_status(
        r#"{"SchedulerStatus":["http://127.0.0.1:10600/",{"num_servers":2,"num_cpus":16,"in_progress":0}]}"#,
    );
    assert_eq!(
        up,
        Ok(SchedulerStatus {
            url: "http://127.0.0.1:10600/".into(),
            servers: 2,
            cpus: 16
        })
    );
    assert_eq!(
        decide(Some(up)),
        Farm::Up {
            servers: 2,
            cpus: 16
        }
    );
    assert_eq!(
        Farm::Up {
            servers: 2,
            cpus: 16
        }
        .capacity(),
        Some(16)
    );
    let empty = status::parse_status(
        r#"{"SchedulerStatus":["http://s:10600/",{"num_servers":0,"num_cpus":0,"in_progress":0}]}"#,
    );
    assert!(matches!(decide(Some(empty)), Farm::Down { why } if why.contains("no build server")));
    let error = status::parse_status(
        r#"{"SchedulerStatus":["http://s:10600/","error: connection refused"]}"#,
    );
    assert!(error.is_err());
    assert!(matches!(decide(Some(error)), Farm::Down { .. }));
    assert!(status::parse_status("\"Disabled\"").is_err());
    assert_eq!(decide(None), Farm::Off);
    assert_eq!(Farm::Off.capacity(), None);
}

#[test]
fn hipccs_expansion_is_its_clang_command_without_the_probes_arguments() {
    let text = r#"hipcc-cmd: /usr/bin/clang++-15  -std=c++11 -isystem "/usr/lib/llvm-15/lib/clang/15.0.6/include/.." --rocm-path=/usr -x hip -O3 --offload-arch=gfx90a -mllvm -amdgpu-function-calls=false --hip-device-lib-path="/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"  -c qola-farm-probe-source.hip -o "qola-farm-probe.o" -###
clang: note: the jobs"#;
    let e = expand::parse(text).unwrap();
    assert_eq!(e.clang, std::path::PathBuf::from("/usr/bin/clang++-15"));
    assert_eq!(
        e.args,
        [
            "/usr/bin/clang++-15",
            "-std=c++11",
            "-isystem",
            "/usr/lib/llvm-15/lib/clang/15.0.6/include/..",
            "--rocm-path=/usr",
            "-x",
            "hip",
            "-O3",
            "--offload-arch=gfx90a",
            "-mllvm",
            "-amdgpu-function-calls=false",
            "--hip-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
        ]
    );
    assert_eq!(
        archive::device_libs(&e.args),
        Some("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode".into())
    );
    assert_eq!(
        archive::device_libs(&["--rocm-path=/opt/rocm".to_string()]),
        Some("/opt/rocm/amdgcn/bitcode".into())
    );
    assert!(expand::parse("no such line").is_none());
}

#[test]
fn sccache_statistics_give_cache_answers_distributed_local_and_retried_compiles() {
    let before = SccacheStats::parse(
        r#"{"stats":{"cache_hits":{"counts":{"C/C++":1}},"compilations":3,"dist_compiles":{"127.0.0.1:10501":2},"dist_errors":0}}"#,
    )
    .unwrap();
    let after = SccacheStats::parse(
        r#"{"stats":{"cache_hits":{"counts":{"C/C++":4,"CUDA":1}},"compilations":14,"dist_compiles":{"127.0.0.1:10501":7,"127.0.0.1:10502":4},"dist_errors":1}}"#,
    )
    .unwrap();
    assert_eq!(
        before.since(&after),
        ElsewhereReport {
            cache_hits: 4,
            distributed: 9,
            servers: 2,
            local: 2,
            infrastructure_errors: 1
        }
    );
}

#[test]
fn qolas_sccache_config_adds_its_toolchain_to_the_users() {
    let tmp = tempfile::tempdir().unwrap();
    let user = config::UserConfig {
        path: tmp.path().join("config"),
        table: r#"
[dist]
scheduler_url = "http://127.0.0.1:10600"
toolchains = [{ type = "path_override", compiler_executable = "/usr/bin/clang++-15", archive = "/old.tar.gz", archive_compiler_executable = "/usr/bin/clang++-15" }, { type = "no_dist", compiler_executable = "/usr/bin/gcc" }]
[dist.auth]
type = "token"
token = "secret"
"#
        .parse()
        .unwrap(),
    };
    let path = config::write(
        &user,
        std::path::Path::new("/usr/bin/clang++-15"),
        std::path::Path::new("/usr/bin/clang++-15"),
        std::path::Path::new("/cache/farm/abc.tar.gz"),
        tmp.path(),
    )
    .unwrap();
    let written: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    let dist = written["dist"].as_table().unwrap();
    assert_eq!(
        dist["scheduler_url"].as_str(),
        Some("http://127.0.0.1:10600")
    );
    assert_eq!(dist["auth"]["token"].as_str(), Some("secret"));
    let toolchains = dist["toolchains"].as_array().unwrap();
    assert_eq!(
        toolchains.len(),
        2,
        "the old entry for the same compiler is replaced"
    );
    assert_eq!(toolchains[0]["type"].as_str(), Some("no_dist"));
    assert_eq!(
        toolchains[1]["archive"].as_str(),
        Some("/cache/farm/abc.tar.gz")
    );
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    let again = config::write(
        &user,
        std::path::Path::new("/usr/bin/clang++-15"),
        std::path::Path::new("/usr/bin/clang++-15"),
        std::path::Path::new("/cache/farm/abc.tar.gz"),
        tmp.path(),
    )
    .unwrap();
    assert_eq!(again, path);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );
}

#[test]
fn a_compile_error_on_a_server_gives_the_compilers_status() {
    let stderr = "sccache: Compiler killed by signal 1\nsccache: Job failed on server 127.0.0.1:43112:\nbroken.cpp:1:18: error: use of undeclared identifier 'x'\n1 error generated.";
    let (status, text) = failed_remotely::compiler_status(Some(254), stderr);
    assert_eq!(status, Some(1));
    assert!(!text.contains("killed by signal"), "{text}");
    assert!(text.contains("Job failed on server") && text.contains("undeclared identifier"));
    // As a job reads it: standard error, then sccache's standard output.
    let read = "sccache: Job failed on server 127.0.0.1:43112:\nb.cpp:1:1: error: x\nsccache: Compiler killed by signal 2\n";
    assert_eq!(failed_remotely::compiler_status(Some(254), read).0, Some(2));
    // A local compile's words are left as they are.
    let local = "x.hip:1:1: error: unknown type name 'y'\nsccache: Compiler killed by signal 1";
    assert_eq!(
        failed_remotely::compiler_status(Some(1), local),
        (Some(1), local.to_string())
    );
}
