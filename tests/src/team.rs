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

/// nginx on 127.0.0.1 serving a WebDAV directory (`PUT`, `DELETE`, paths made as needed): the
/// HTTP remote storage ccache speaks (`remote_storage = http://…`). Its files, logs and
/// temporary directories are under the directory given; stopped on drop (or by [`stop`]).
///
/// [`stop`]: HttpCache::stop
pub struct HttpCache {
    child: Option<Child>,
    /// Its port.
    pub port: u16,
    /// The directory it serves (`<dir>/www`; the cache is `<dir>/www/cache`).
    pub www: PathBuf,
    /// Its access log: one line per request, with the method.
    pub access_log: PathBuf,
}

impl HttpCache {
    /// Starts `nginx` (the binary) with its configuration, files and logs under `dir`, and
    /// waits until it accepts connections.
    pub fn start(nginx: &Path, dir: &Path) -> HttpCache {
        HttpCache::start_with(nginx, dir, "")
    }

    /// [`HttpCache::start`] with `directives` added to the cache's `location` (e.g. a
    /// `limit_except` that refuses writes).
    pub fn start_with(nginx: &Path, dir: &Path, directives: &str) -> HttpCache {
        let www = dir.join("www");
        std::fs::create_dir_all(www.join("cache")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free local port")
            .port();
        let access_log = dir.join("access.log");
        let d = dir.display();
        // As root, workers run as root too (they write the cache); as another user the
        // directive is ignored and they run as that user.
        let config = format!(
            "daemon off;\nmaster_process on;\nworker_processes 1;\nuser root;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 64; }}\nhttp {{\n  access_log {};\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  server {{\n    listen 127.0.0.1:{port};\n    root {};\n    location /cache/ {{\n      dav_methods PUT DELETE MOVE;\n      create_full_put_path on;\n      client_max_body_size 0;\n      {directives}\n    }}\n  }}\n}}\n",
            access_log.display(),
            www.display()
        );
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let child = Command::new(nginx)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&conf)
            .arg("-p")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", nginx.display()));
        let server = HttpCache {
            child: Some(child),
            port,
            www,
            access_log,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not start on {port}: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// The URL ccache's `remote_storage` takes.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/cache", self.port)
    }

    /// The files the cache holds.
    pub fn files(&self) -> usize {
        fn count(dir: &Path) -> usize {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| match e.path().is_dir() {
                    true => count(&e.path()),
                    false => 1,
                })
                .sum()
        }
        count(&self.www.join("cache"))
    }

    /// The requests of its access log with the method `method` (`PUT`).
    pub fn requests(&self, method: &str) -> usize {
        std::fs::read_to_string(&self.access_log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(&format!("\"{method} ")))
            .count()
    }

    /// Stops the server (the port then refuses connections).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGQUIT: nginx's graceful stop, master and workers.
            // SAFETY: a plain kill(2) of our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGQUIT) };
            let _ = child.wait();
        }
    }
}

impl Drop for HttpCache {
    fn drop(&mut self) {
        self.stop();
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
