//! The sccache servers qola starts for a farm build, and what they answer.
//!
//! An sccache client starts a server on its port when none listens there, and that server keeps
//! the environment and config of the client that started it until it exits (after
//! `SCCACHE_IDLE_TIMEOUT`, 600 s by default). qola never shares one: each [`Server`] listens on
//! a port free when it was chosen, is started with qola's whole environment for it (config,
//! port, basedirs), and is stopped (`sccache --stop-server`) when the value is dropped, so no
//! server outlives the build that started it, and none is reused with another configuration.
//! (A build killed outright leaves its server to sccache's idle timeout.)

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::compile::CompileError;
use crate::compile::error::Result;
use crate::compile::farm::status::{self, DistStats, SchedulerStatus};

/// An sccache server of qola's own: its environment names its config and port.
#[derive(Debug)]
pub(crate) struct Server {
    sccache: PathBuf,
    env: Vec<(String, String)>,
}

impl Server {
    /// A server for `config` on a free local port (started by its first request).
    pub(crate) fn new(sccache: &Path, config: &Path) -> Result<Server> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| CompileError::Farm {
                problem: format!("no free local port for qola's sccache server: {e}"),
            })?
            .port();
        Ok(Server {
            sccache: sccache.to_path_buf(),
            env: vec![
                ("SCCACHE_CONF".to_string(), config.display().to_string()),
                ("SCCACHE_SERVER_PORT".to_string(), port.to_string()),
            ],
        })
    }

    /// Adds a variable to the server's environment (before its first request).
    pub(crate) fn with(mut self, name: &str, value: String) -> Server {
        self.env.push((name.to_string(), value));
        self
    }

    /// The environment every client of this server runs with.
    pub(crate) fn env(&self) -> &[(String, String)] {
        &self.env
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.sccache);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// `sccache --dist-status`: the scheduler's answer, or why there is none.
    pub(crate) fn ask(&self) -> std::result::Result<SchedulerStatus, String> {
        let out = self
            .command()
            .arg("--dist-status")
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.sccache.display()))?;
        status::parse_status(&String::from_utf8_lossy(&out.stdout))
    }

    /// Its statistics (`--show-stats`).
    pub(crate) fn stats(&self) -> Option<DistStats> {
        let out = self
            .command()
            .args(["--show-stats", "--stats-format=json"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        DistStats::parse(&String::from_utf8_lossy(&out.stdout))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Stops it when it runs; nothing when no request started it.
        let _ = self
            .command()
            .arg("--stop-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The compiler's exit status of a compile that failed on a build server, and its message.
/// sccache 0.16 hands a server's exit code back as a raw wait status, so a compiler that exited
/// with 1 reads as "sccache: Compiler killed by signal 1" and the client exits 254 (measured with
/// clang on a loopback farm); the number it names is the compiler's code. That line is dropped
/// from the message, which keeps sccache's "Job failed on server …" and the compiler's words.
pub(crate) fn compiler_status(code: Option<i32>, stderr: &str) -> (Option<i32>, String) {
    const FAILED_ON_SERVER: &str = "sccache: Job failed on server";
    const KILLED: &str = "sccache: Compiler killed by signal ";
    let named = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix(KILLED)?.trim().parse::<i32>().ok());
    match named {
        Some(status) if stderr.contains(FAILED_ON_SERVER) => {
            let kept: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.trim().starts_with(KILLED))
                .collect();
            (Some(status), kept.join("\n"))
        }
        _ => (code, stderr.to_string()),
    }
}
