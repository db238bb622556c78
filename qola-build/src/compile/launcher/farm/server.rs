//! The sccache server of a build that runs sccache (as its launcher, or on a compile farm).
//!
//! An sccache client starts a server on its port when none listens there, daemonized, and that
//! server keeps the environment and config of the client that started it until it exits (after
//! `SCCACHE_IDLE_TIMEOUT`, 600 s by default). qola never lets a client do that: each [`Server`]
//! is a child process of qola (sccache's own server mode, `SCCACHE_START_SERVER=1` in the
//! foreground), on a port free when it was chosen, with qola's whole environment for it
//! (config, port, basedirs); clients only connect to it. Dropping the value stops it
//! (`sccache --stop-server`) and waits for the process to end, so no server outlives the build
//! that started it and none is reused with another configuration; on Linux the server also
//! ends when the thread that started it does (a build killed outright).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An sccache server of qola's own, running: its environment names its config and port.
#[derive(Debug)]
pub(crate) struct Server {
    sccache: PathBuf,
    env: Vec<(String, String)>,
    process: Child,
}

/// How long a new server may take to listen (it reads its config and the toolchain archive's
/// metadata first; seconds at most, measured) before qola gives up on the farm.
const STARTUP_LIMIT: Duration = Duration::from_secs(60);

impl Server {
    /// Starts a server with `config` (`None`: sccache's own choice, `SCCACHE_CONF` or the
    /// user's file) and the variables of `extra` on a free local port, and waits until it
    /// listens. `Err`: why not.
    pub(crate) fn start(
        sccache: &Path,
        config: Option<&Path>,
        extra: &[(String, String)],
    ) -> std::result::Result<Server, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free local port for qola's sccache server: {e}"))?
            .port();
        let mut env = Vec::new();
        if let Some(config) = config {
            env.push(("SCCACHE_CONF".to_string(), config.display().to_string()));
        }
        env.push(("SCCACHE_SERVER_PORT".to_string(), port.to_string()));
        env.extend(extra.iter().cloned());
        let mut command = Command::new(sccache);
        command
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("SCCACHE_START_SERVER", "1")
            .env("SCCACHE_NO_DAEMON", "1")
            .env_remove("SCCACHE_STARTUP_NOTIFY")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        end_with_this_thread(&mut command);
        let process = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", sccache.display()))?;
        let mut server = Server {
            sccache: sccache.to_path_buf(),
            env,
            process,
        };
        server.wait_until_listening(port)?;
        Ok(server)
    }

    /// Waits until the server accepts connections on `port`, or has ended.
    fn wait_until_listening(&mut self, port: u16) -> std::result::Result<(), String> {
        let start = Instant::now();
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.process.try_wait() {
                return Err(format!(
                    "qola's sccache server (port {port}) ended as it started ({status})"
                ));
            }
            if start.elapsed() > STARTUP_LIMIT {
                return Err(format!(
                    "qola's sccache server did not listen on port {port} within {} s",
                    STARTUP_LIMIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The environment every client of this server runs with.
    pub(crate) fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// An sccache client of this server (`sccache` with the server's environment).
    pub(crate) fn client(&self) -> Command {
        let mut command = Command::new(&self.sccache);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let stopped = self
            .client()
            .arg("--stop-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !stopped {
            let _ = self.process.kill();
        }
        let _ = self.process.wait();
    }
}

/// On Linux, the server gets SIGTERM when the thread that started it ends (a build killed
/// outright); elsewhere sccache's idle timeout ends it.
#[cfg(target_os = "linux")]
fn end_with_this_thread(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn end_with_this_thread(_: &mut Command) {}
