//! Fixtures for team-scale caching: a real `redis-server` on a free local port, and copies of a
//! git checkout's tracked files (a second "machine" at another path).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` on 127.0.0.1, in its own directory, without persistence; stopped on drop.
pub struct RedisServer {
    child: Child,
    /// Its port.
    pub port: u16,
}

impl RedisServer {
    /// Starts `redis_server` (the binary) with `dir` as its working directory and waits until
    /// it accepts connections.
    pub fn start(redis_server: &Path, dir: &Path) -> RedisServer {
        std::fs::create_dir_all(dir).unwrap();
        // A port nobody listens on now (the listener is dropped before redis binds it).
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free local port")
            .port();
        let child = Command::new(redis_server)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", redis_server.display()));
        let server = RedisServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// The URL ccache's `remote_storage` takes.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies the files of `repo`'s working tree that git tracks or would track (untracked files
/// it does not ignore) to `dest`.
pub fn copy_tracked(repo: &Path, dest: &Path) {
    let listed = crate::git(
        repo,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
    );
    for path in listed.split('\0').filter(|p| !p.is_empty()) {
        let from = repo.join(path);
        if !from.is_file() {
            continue;
        }
        let to = dest.join(path);
        std::fs::create_dir_all(to.parent().expect("a file has a parent")).unwrap();
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
    }
}

/// A program found on `PATH`. Outside CI a test without it says so and gets `None`; in CI
/// (`CI=true`) a missing tool is a failure naming the Debian package.
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            !crate::in_ci(),
            "CI: {name} is required (apt-get install {package})"
        );
        eprintln!("skipping: no {name} (apt-get install {package})");
    }
    found
}
