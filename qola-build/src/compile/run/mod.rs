//! Running compile commands in parallel inside Cargo's `-j` budget.
//!
//! Up to `limit` commands run at once (`NUM_JOBS` in a build script, else the number of CPUs).
//! Inside Cargo, every command beyond the first also holds a token of Cargo's jobserver (the
//! same jobserver protocol `cc` uses), so a build never runs more compilers than `cargo -j`
//! allows across all crates. After a failure no new command starts.
//!
//! Each command is reaped with `wait4(2)`, whose resource usage gives its peak memory: the
//! largest resident set of the command or any process it waited for (the compiler proper, under
//! hipcc and launchers). Those peaks become the per-unit memory estimates of later builds.

pub(crate) mod memory;
pub(crate) mod progress;

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A command to run for one unit.
pub(crate) struct Job {
    /// Index of the unit it compiles.
    pub unit: usize,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// The directory it runs in.
    pub cwd: std::path::PathBuf,
    /// Variables added to its environment.
    pub env: Vec<(String, String)>,
}

/// What happened to one job.
pub(crate) struct Outcome {
    /// Index of the unit.
    pub unit: usize,
    /// Wall time of the command.
    pub elapsed: Duration,
    /// `None` when it succeeded; else the exit code (if any) and what it said (standard error,
    /// then standard output).
    pub failure: Option<(Option<i32>, String)>,
    /// Peak resident memory in bytes of the command's largest process, when known.
    pub peak_memory: Option<u64>,
}

/// Cargo's jobserver, when this process was given one.
fn jobserver() -> Option<&'static jobserver::Client> {
    static CLIENT: std::sync::OnceLock<Option<jobserver::Client>> = std::sync::OnceLock::new();
    CLIENT
        // SAFETY: called once per process (the OnceLock), before any thread could close the
        // inherited file descriptors the jobserver protocol names.
        .get_or_init(|| unsafe { jobserver::Client::from_env() })
        .as_ref()
}

/// Waits for `child` with `wait4`: its exit status and peak memory (bytes).
fn wait_with_peak(child: &mut Child) -> std::io::Result<(ExitStatus, Option<u64>)> {
    use std::os::unix::process::ExitStatusExt;
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data that wait4 fills; zeroed is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not reaped yet (std only reaps in wait/try_wait, which
        // are never called on it); the pointers are to live locals.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            // Linux reports ru_maxrss in kilobytes.
            let peak = u64::try_from(usage.ru_maxrss).ok().map(|kb| kb * 1024);
            return Ok((ExitStatus::from_raw(status), peak));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

fn run_one(job: &Job) -> Outcome {
    let start = Instant::now();
    let outcome = |failure, peak_memory| Outcome {
        unit: job.unit,
        elapsed: start.elapsed(),
        failure,
        peak_memory,
    };
    let spawned = Command::new(&job.argv[0])
        .args(&job.argv[1..])
        .current_dir(&job.cwd)
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return outcome(
                Some((None, format!("cannot run {}: {e}", job.argv[0]))),
                None,
            );
        }
    };
    // A compiler says what went wrong on standard error; a launcher may say it on standard
    // output (sccache's "Compiler killed by signal"): both are kept, read at once.
    let stdout_pipe = child.stdout.take();
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = stdout_pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    });
    let mut stderr = Vec::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_end(&mut stderr);
    }
    let mut said = String::from_utf8_lossy(&stderr).into_owned();
    let stdout = stdout.join().unwrap_or_default();
    if !stdout.is_empty() {
        said.push_str(&String::from_utf8_lossy(&stdout));
    }
    match wait_with_peak(&mut child) {
        Ok((status, peak)) if status.success() => outcome(None, peak),
        Ok((status, peak)) => outcome(Some((status.code(), said)), peak),
        Err(e) => outcome(
            Some((None, format!("cannot wait for {}: {e}", job.argv[0]))),
            None,
        ),
    }
}

/// Runs `jobs`, at most `limit` at a time; returns the outcomes of the jobs that ran.
/// `started` and `ended` are called as each job starts and ends (progress). `local`: the
/// commands run on this machine and share Cargo's jobserver budget (remote ones, on a compile
/// farm, do not).
pub(crate) fn run_all(
    jobs: Vec<Job>,
    limit: usize,
    local: bool,
    started: &(dyn Fn(&Job) + Sync),
    ended: &(dyn Fn(&Outcome) + Sync),
) -> Vec<Outcome> {
    let workers = limit.max(1).min(jobs.len());
    let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
    let failed = AtomicBool::new(false);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (queue, failed, outcomes) = (&queue, &failed, &outcomes);
            scope.spawn(move || {
                loop {
                    if failed.load(Ordering::SeqCst) {
                        return;
                    }
                    let Some(job) = queue.lock().expect("queue lock").pop_front() else {
                        return;
                    };
                    // The first worker runs on the token this process already holds.
                    let token = match (worker, local.then(jobserver).flatten()) {
                        (0, _) | (_, None) => None,
                        (_, Some(client)) => client.acquire().ok(),
                    };
                    started(&job);
                    let outcome = run_one(&job);
                    drop(token);
                    ended(&outcome);
                    if outcome.failure.is_some() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    outcomes.lock().expect("outcome lock").push(outcome);
                }
            });
        }
    });
    outcomes.into_inner().expect("outcome lock")
}
