//! Running compile commands in parallel inside Cargo's `-j` budget.
//!
//! Up to `limit` commands run at once (`NUM_JOBS` in a build script, else the number of CPUs).
//! Inside Cargo, every command beyond the first also holds a token of Cargo's jobserver (the
//! same jobserver protocol `cc` uses), so a build never runs more compilers than `cargo -j`
//! allows across all crates. After a failure no new command starts. A job may wait for others
//! (a host pass for its unit's device passes, see `passes`); of the jobs ready to start, the
//! first in the given order starts first. A job may also be a step qola does itself (the
//! bundle of a unit's code objects).
//!
//! Each command is reaped with `wait4(2)`, whose resource usage gives its peak memory: the
//! largest resident set of the command or any process it waited for (the compiler proper, under
//! hipcc and launchers). Those peaks become the per-unit memory estimates of later builds.

mod memory;
mod progress;

pub(crate) use memory::{
    Estimate, Parallelism, available as available_memory, decide as decide_parallelism,
};
pub(crate) use progress::{Echo, Progress};

use std::collections::VecDeque;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A command to run for one unit (or a part of it).
pub(crate) struct Job {
    /// Index of the unit it compiles.
    pub unit: usize,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// The directory it runs in.
    pub cwd: std::path::PathBuf,
    /// Variables added to its environment.
    pub env: Vec<(String, String)>,
    /// Jobs (indices in the list given to [`run_all`]) that must have succeeded first.
    pub after: Vec<usize>,
    /// A step qola does itself instead of running `argv`.
    pub step: Option<Box<dyn Fn() -> std::io::Result<()> + Send + Sync>>,
}

impl Job {
    /// A command for `unit`, in `cwd` with `env` added, waiting for nothing.
    pub(crate) fn command(
        unit: usize,
        argv: Vec<String>,
        cwd: &std::path::Path,
        env: &[(String, String)],
    ) -> Job {
        Job {
            unit,
            argv,
            cwd: cwd.to_path_buf(),
            env: env.to_vec(),
            after: Vec::new(),
            step: None,
        }
    }
}

/// What happened to one job.
pub(crate) struct Outcome {
    /// Index of the unit.
    pub unit: usize,
    /// Index of the job in the list given to [`run_all`].
    pub job: usize,
    /// The worker that ran it (`0..limit`): a slot of the timings report.
    pub slot: usize,
    /// When it started.
    pub started: Instant,
    /// Wall time of the command.
    pub elapsed: Duration,
    /// `None` when it succeeded; else the exit code (if any) and what it said (standard error,
    /// then standard output).
    pub failure: Option<(Option<i32>, String)>,
    /// Peak resident memory in bytes of the command's largest process, when known.
    pub peak_memory: Option<u64>,
    /// CPU time (user and system) of the command and every process it waited for.
    pub cpu: Duration,
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
fn wait_with_peak(child: &mut Child) -> std::io::Result<(ExitStatus, Option<u64>, Duration)> {
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
            let time = |t: libc::timeval| {
                Duration::from_secs(t.tv_sec.max(0) as u64)
                    + Duration::from_micros(t.tv_usec.max(0) as u64)
            };
            let cpu = time(usage.ru_utime) + time(usage.ru_stime);
            return Ok((ExitStatus::from_raw(status), peak, cpu));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

fn run_one(job: &Job, index: usize, slot: usize) -> Outcome {
    let start = Instant::now();
    let outcome = |failure, peak_memory, cpu| Outcome {
        unit: job.unit,
        job: index,
        slot,
        started: start,
        elapsed: start.elapsed(),
        failure,
        peak_memory,
        cpu,
    };
    if let Some(step) = &job.step {
        return match step() {
            Ok(()) => outcome(None, None, Duration::ZERO),
            Err(e) => outcome(Some((None, e.to_string())), None, Duration::ZERO),
        };
    }
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
                Duration::ZERO,
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
        Ok((status, peak, cpu)) if status.success() => outcome(None, peak, cpu),
        Ok((status, peak, cpu)) => outcome(Some((status.code(), said)), peak, cpu),
        Err(e) => outcome(
            Some((None, format!("cannot wait for {}: {e}", job.argv[0]))),
            None,
            Duration::ZERO,
        ),
    }
}

/// How [`run_all`] runs its jobs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mode {
    /// The commands run on this machine and share Cargo's jobserver budget (remote ones, on a
    /// compile farm, do not).
    pub local: bool,
    /// A failed job does not stop the others (questions to the compiler, not compiles).
    pub keep_going: bool,
}

/// Runs `jobs`, at most `limit` at a time, each after the jobs it waits for; returns the
/// outcomes of the jobs that ran. `started` and `ended` are called as each job starts and ends
/// (progress).
pub(crate) fn run_all(
    jobs: Vec<Job>,
    limit: usize,
    mode: Mode,
    started: &(dyn Fn(&Job) + Sync),
    ended: &(dyn Fn(&Outcome) + Sync),
) -> Vec<Outcome> {
    let workers = limit.max(1).min(jobs.len());
    let total = jobs.len();
    let state = Mutex::new(Queue {
        waiting: jobs.into_iter().enumerate().collect(),
        done: vec![false; total],
        running: 0,
        failed: false,
    });
    let changed = std::sync::Condvar::new();
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (state, changed, outcomes) = (&state, &changed, &outcomes);
            scope.spawn(move || {
                loop {
                    let (index, job) = {
                        let mut queue = state.lock().expect("queue lock");
                        loop {
                            if queue.failed || queue.waiting.is_empty() {
                                return;
                            }
                            if let Some(at) = queue.ready() {
                                queue.running += 1;
                                break queue.waiting.remove(at).expect("a ready job");
                            }
                            if queue.running == 0 {
                                // Waiting for jobs that can no longer end: none will start.
                                return;
                            }
                            queue = changed.wait(queue).expect("queue lock");
                        }
                    };
                    // The first worker runs on the token this process already holds.
                    let token = match (worker, mode.local.then(jobserver).flatten()) {
                        (0, _) | (_, None) => None,
                        // A step of qola's own is no compile.
                        _ if job.step.is_some() => None,
                        (_, Some(client)) => client.acquire().ok(),
                    };
                    started(&job);
                    let outcome = run_one(&job, index, worker);
                    drop(token);
                    ended(&outcome);
                    {
                        let mut queue = state.lock().expect("queue lock");
                        queue.running -= 1;
                        queue.done[index] = outcome.failure.is_none();
                        queue.failed |= outcome.failure.is_some() && !mode.keep_going;
                    }
                    changed.notify_all();
                    outcomes.lock().expect("outcome lock").push(outcome);
                }
            });
        }
    });
    outcomes.into_inner().expect("outcome lock")
}

/// The jobs not started yet, and what the ones that ran did.
struct Queue {
    waiting: VecDeque<(usize, Job)>,
    /// Per job: ended successfully.
    done: Vec<bool>,
    running: usize,
    failed: bool,
}

impl Queue {
    /// The position of the first waiting job whose jobs to wait for all succeeded.
    fn ready(&self) -> Option<usize> {
        self.waiting
            .iter()
            .position(|(_, job)| job.after.iter().all(|&a| self.done[a]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job appending `word` to `log` (a step of qola's own, no process).
    fn step(log: &std::sync::Arc<Mutex<Vec<String>>>, word: &str, after: Vec<usize>) -> Job {
        let (log, word) = (log.clone(), word.to_string());
        let mut job = Job::command(0, vec![word.clone()], std::path::Path::new("."), &[]);
        job.after = after;
        job.step = Some(Box::new(move || {
            if word == "broken" {
                return Err(std::io::Error::other("broken"));
            }
            log.lock().unwrap().push(word.clone());
            Ok(())
        }));
        job
    }

    #[test]
    fn a_job_runs_after_the_jobs_it_waits_for_and_not_after_a_failed_one() {
        let log = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mode = Mode {
            local: true,
            keep_going: false,
        };
        // The host pass is listed first but waits for both device passes.
        let jobs = vec![
            step(&log, "host", vec![1, 2]),
            step(&log, "device a", vec![]),
            step(&log, "device b", vec![]),
        ];
        let outcomes = run_all(jobs, 3, mode, &|_| {}, &|_| {});
        assert_eq!(outcomes.len(), 3);
        assert_eq!(log.lock().unwrap().last().unwrap(), "host");
        // A failed device pass: its host pass never starts, and nothing after it.
        log.lock().unwrap().clear();
        let jobs = vec![step(&log, "broken", vec![]), step(&log, "host", vec![0])];
        let outcomes = run_all(jobs, 2, mode, &|_| {}, &|_| {});
        assert_eq!(outcomes.len(), 1);
        assert!(log.lock().unwrap().is_empty());
        // Questions keep going past a failure.
        let jobs = vec![step(&log, "broken", vec![]), step(&log, "other", vec![])];
        let keep_going = Mode {
            keep_going: true,
            ..mode
        };
        assert_eq!(run_all(jobs, 1, keep_going, &|_| {}, &|_| {}).len(), 2);
    }
}
