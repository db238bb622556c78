//! The docs' snippets: every block a user would copy is run by a test as written or marked an
//! excerpt (see `qola_tests::docs`), and the nginx server of docs/team-builds.md, as written,
//! serves ccache's remote storage and takes a prebuilt publish on loopback; the README stays one
//! page (at most 150 lines, the rest in docs/).

#![allow(clippy::disallowed_methods)] // tests read their own environment

use std::path::Path;
use std::process::Command;

use qola_tests::docs;

/// Every `test:<name>` a test of the workspace (`docs::tested("<name>")`) or `.ci/run`
/// (`tools/doc-block <name>`) runs.
fn names_run() -> Vec<String> {
    let root = docs::workspace();
    let mut texts = vec![std::fs::read_to_string(root.join(".ci/run")).unwrap()];
    for dir in ["qola-build/tests", "qola-sys/tests", "tests/src"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|x| x == "rs") {
                texts.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut names = Vec::new();
    for text in &texts {
        for open in ["docs::tested(\"", "tools/doc-block "] {
            for piece in text.split(open).skip(1) {
                let name: String = piece
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                names.push(name);
            }
        }
    }
    names
}

#[test]
fn every_snippet_a_user_would_copy_is_run_as_written_or_marked_an_excerpt() {
    let run = names_run();
    let mut tested = Vec::new();
    let mut unmarked = Vec::new();
    for block in docs::blocks() {
        let place = format!("{}:{}", block.file.display(), block.line);
        match (block.lang.as_str(), block.tag.as_str()) {
            ("text", _) | (_, "excerpt") => {}
            (_, tag) if tag.starts_with("test:") => {
                let name = &tag["test:".len()..];
                assert!(
                    run.iter().any(|r| r == name),
                    "{place}: `{tag}`, but no test runs docs::tested(\"{name}\")"
                );
                assert!(!tested.contains(&name.to_string()), "{place}: {tag} twice");
                tested.push(name.to_string());
            }
            _ => unmarked.push(place),
        }
    }
    assert!(
        unmarked.is_empty(),
        "blocks neither run by a test (`test:<name>`) nor marked `excerpt`: {unmarked:?}"
    );
    assert!(tested.len() >= 5, "{tested:?}");
}

#[test]
fn an_unclosed_or_untagged_block_is_found() {
    let text = "a\n```sh\nls\n```\n```toml excerpt\nx = 1\n```\n";
    let blocks = docs::blocks_of(Path::new("x.md"), text);
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        (
            blocks[0].lang.as_str(),
            blocks[0].tag.as_str(),
            blocks[0].line
        ),
        ("sh", "", 2)
    );
    assert_eq!(
        (blocks[1].tag.as_str(), blocks[1].text.as_str()),
        ("excerpt", "x = 1\n")
    );
    let unclosed = std::panic::catch_unwind(|| docs::blocks_of(Path::new("y.md"), "```sh\nls\n"));
    assert!(unclosed.is_err());
}

/// Stops the nginx started from `prefix` when the test ends, passed or not.
struct Nginx<'a> {
    nginx: &'a Path,
    prefix: &'a Path,
}

impl Drop for Nginx<'_> {
    fn drop(&mut self) {
        let _ = Command::new(self.nginx)
            .arg("-p")
            .arg(self.prefix)
            .args(["-c", "nginx.conf", "-s", "quit"])
            .status();
    }
}

/// docs/team-builds.md's nginx file and its start lines, as written (in a directory of the
/// test's own instead of `/srv/qola`): ccache fills `/qola-cache/` from one machine and a second
/// reads it; a publish's `PUT` to a temporary name and `MOVE` into place land in
/// `/qola-prebuilt/`, and the archive reads back.
#[test]
fn the_docs_nginx_file_serves_ccache_and_takes_a_prebuilt_publish_on_loopback() {
    let (Some(nginx), Some(ccache)) = (
        qola_tests::tool("nginx", "nginx-light"),
        qola_tests::tool("ccache", "ccache"),
    ) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            !qola_tests::in_ci(),
            "CI: the nginx setup runs as root, as documented"
        );
        eprintln!("skipping: the documented nginx setup runs as root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("srv-qola");
    std::fs::create_dir_all(&prefix).unwrap();
    // www-data reaches the prefix (a temporary directory is its owner's only).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(prefix.join("nginx.conf"), docs::tested("nginx")).unwrap();
    let start = docs::tested("nginx-start").replace("/srv/qola", &prefix.display().to_string());
    let _server = Nginx {
        nginx: &nginx,
        prefix: &prefix,
    };
    qola_tests::run_ok(Command::new("sh").args(["-ec", &start]));
    let base = "http://127.0.0.1:8765";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect("127.0.0.1:8765").is_err() {
        assert!(std::time::Instant::now() < deadline, "nginx did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // ccache: machine A fills the remote storage, machine B gets a remote hit.
    let source = tmp.path().join("unit.c");
    std::fs::write(&source, "int answer(void) { return 42; }\n").unwrap();
    let stats = |dir: &Path, counter: &str| -> u64 {
        let out = Command::new(&ccache)
            .env("CCACHE_DIR", dir)
            .arg("--print-stats")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("{counter}\t"))
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0)
    };
    for machine in ["a", "b"] {
        let dir = tmp.path().join(machine);
        let mut compile = Command::new(&ccache);
        qola_tests::without_caller_env(&mut compile, &["CCACHE_"], &[]);
        qola_tests::run_ok(
            compile
                .env("CCACHE_DIR", &dir)
                .env("CCACHE_REMOTE_STORAGE", format!("{base}/qola-cache"))
                .args(["cc", "-c"])
                .arg(&source)
                .arg("-o")
                .arg(tmp.path().join(format!("{machine}.o"))),
        );
        assert_eq!(stats(&dir, "remote_storage_error"), 0, "{machine}");
    }
    assert_eq!(stats(&tmp.path().join("b"), "remote_storage_hit"), 1);

    // A publish, as qola's HTTP store makes it: PUT a temporary name, MOVE it into place.
    let publish = r#"
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", 8765)
def ask(method, path, body=None, headers={}):
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse(); r.read(); return r.status
put = ask("PUT", "/qola-prebuilt/te_libmha_fwd/.k.tar.zst.tmp", b"archive")
move = ask("MOVE", "/qola-prebuilt/te_libmha_fwd/.k.tar.zst.tmp",
           headers={"Destination": "http://127.0.0.1:8765/qola-prebuilt/te_libmha_fwd/k.tar.zst"})
c.request("GET", "/qola-prebuilt/te_libmha_fwd/k.tar.zst"); r = c.getresponse()
print(put, move, r.status, r.read().decode())
"#;
    let out = qola_tests::run_ok(Command::new("python3").args(["-c", publish]));
    // nginx answers a MOVE 201 (created) or 204 (replaced).
    assert!(
        matches!(out.trim(), "201 201 200 archive" | "201 204 200 archive"),
        "{out}"
    );
}

#[test]
fn the_readme_is_one_page_of_at_most_150_lines() {
    let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let lines = std::fs::read_to_string(&readme).unwrap().lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines: move the rest to docs/"
    );
}
