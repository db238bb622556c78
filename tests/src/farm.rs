//! A compile farm on loopback: an `sccache-dist` scheduler and build servers on 127.0.0.1, each
//! server running its builds in bubblewrap sandboxes (sccache-dist's overlay builder), with
//! sccache's insecure loopback authentication; stopped on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free local port")
        .port()
}

fn spawn(sccache_dist: &Path, role: &str, config: &Path, log: &Path) -> Child {
    Command::new(sccache_dist)
        .arg(role)
        .arg("--config")
        .arg(config)
        .env("SCCACHE_NO_DAEMON", "1")
        .env("RUST_LOG", "info")
        // A farm's machine has its own temporary directory: its jobs' sandboxes have their own
        // /tmp and /dev, where the tests' TMPDIR (tools/test-all's, on /dev/shm) is not.
        .env_remove("TMPDIR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("a log file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {} {role}: {e}", sccache_dist.display()))
}

/// A scheduler and its build servers.
pub struct LoopbackFarm {
    scheduler: Child,
    servers: Vec<Option<Child>>,
    /// The scheduler's URL.
    pub scheduler_url: String,
    dir: PathBuf,
}

impl LoopbackFarm {
    /// Starts a scheduler and `servers` build servers under `dir` (configs, logs, sandboxes)
    /// and waits until `sccache` (the client, with [`LoopbackFarm::client_config`]) sees them all.
    pub fn start(sccache_dist: &Path, sccache: &Path, dir: &Path, servers: usize) -> LoopbackFarm {
        std::fs::create_dir_all(dir).unwrap();
        let port = free_port();
        let scheduler_url = format!("http://127.0.0.1:{port}");
        let config = dir.join("scheduler.conf");
        std::fs::write(
            &config,
            format!("public_addr = \"127.0.0.1:{port}\"\n[client_auth]\ntype = \"DANGEROUSLY_INSECURE\"\n[server_auth]\ntype = \"DANGEROUSLY_INSECURE\"\n"),
        )
        .unwrap();
        let scheduler = spawn(
            sccache_dist,
            "scheduler",
            &config,
            &dir.join("scheduler.log"),
        );
        let mut farm = LoopbackFarm {
            scheduler,
            servers: Vec::new(),
            scheduler_url,
            dir: dir.to_path_buf(),
        };
        for n in 0..servers {
            let root = dir.join(format!("server{n}"));
            std::fs::create_dir_all(&root).unwrap();
            let config = root.join("server.conf");
            std::fs::write(
                &config,
                format!(
                    "cache_dir = \"{root}/toolchains\"\npublic_addr = \"127.0.0.1:{port}\"\nscheduler_url = \"{url}\"\n[builder]\ntype = \"overlay\"\nbuild_dir = \"{root}/build\"\nbwrap_path = \"{bwrap}\"\n[scheduler_auth]\ntype = \"DANGEROUSLY_INSECURE\"\n",
                    root = root.display(),
                    port = free_port(),
                    url = farm.scheduler_url,
                    bwrap = crate::team::tool("bwrap", "bubblewrap").expect("bwrap").display(),
                ),
            )
            .unwrap();
            farm.servers.push(Some(spawn(
                sccache_dist,
                "server",
                &config,
                &root.join("server.log"),
            )));
        }
        farm.wait_for(sccache, servers);
        farm
    }

    /// A client config for `sccache` (its `[dist]` section and a local disk cache under the
    /// farm's directory), written to `path`.
    pub fn client_config(&self, path: &Path) {
        std::fs::write(
            path,
            format!(
                "[dist]\nscheduler_url = \"{}\"\n[dist.auth]\ntype = \"token\"\ntoken = \"dangerously_insecure_client\"\n[cache.disk]\ndir = \"{}\"\n",
                self.scheduler_url,
                self.dir.join("client-cache").display()
            ),
        )
        .unwrap();
    }

    /// Waits until the scheduler reports `servers` build servers.
    pub fn wait_for(&self, sccache: &Path, servers: usize) {
        let config = self.dir.join("status.conf");
        self.client_config(&config);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // A new sccache server each time: one that started before the scheduler listened
            // can stay "not connected".
            let port = free_port().to_string();
            let out = Command::new(sccache)
                .arg("--dist-status")
                .env("SCCACHE_CONF", &config)
                .env("SCCACHE_SERVER_PORT", &port)
                .output()
                .expect("sccache --dist-status");
            let text = String::from_utf8_lossy(&out.stdout);
            let _ = Command::new(sccache)
                .arg("--stop-server")
                .env("SCCACHE_SERVER_PORT", &port)
                .output();
            if text.contains(&format!("\"num_servers\":{servers},")) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the scheduler did not see {servers} servers: {text}\nscheduler log: {}",
                std::fs::read_to_string(self.dir.join("scheduler.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Kills build server `n` (as a crashed machine would go).
    pub fn kill_server(&mut self, n: usize) {
        if let Some(mut child) = self.servers[n].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for LoopbackFarm {
    fn drop(&mut self) {
        for n in 0..self.servers.len() {
            self.kill_server(n);
        }
        let _ = self.scheduler.kill();
        let _ = self.scheduler.wait();
    }
}
