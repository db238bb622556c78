//! Running compile commands in parallel inside Cargo's `-j` budget.
//!
//! Up to `limit` commands run at once (`NUM_JOBS` in a build script, else the number of CPUs).
//! Inside Cargo, every command beyond the first also holds a token of Cargo's jobserver (the
//! same jobserver protocol `cc` uses), so a build never runs more compilers than `cargo -j`
//! allows across all crates. After a failure no new command starts.

use std::collections::VecDeque;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A command to run for one unit.
pub(crate) struct Job {
    /// Index of the unit it compiles.
    pub unit: usize,
    /// The program and its arguments.
    pub argv: Vec<String>,
}

/// What happened to one job.
pub(crate) struct Outcome {
    /// Index of the unit.
    pub unit: usize,
    /// Wall time of the command.
    pub elapsed: Duration,
    /// `None` when it succeeded; else the exit code (if any) and standard error.
    pub failure: Option<(Option<i32>, String)>,
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

fn run_one(job: &Job) -> Outcome {
    let start = Instant::now();
    let result = Command::new(&job.argv[0]).args(&job.argv[1..]).output();
    let failure = match result {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some((
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Err(e) => Some((None, format!("cannot run {}: {e}", job.argv[0]))),
    };
    Outcome {
        unit: job.unit,
        elapsed: start.elapsed(),
        failure,
    }
}

/// Runs `jobs`, at most `limit` at a time; returns the outcomes of the jobs that ran.
pub(crate) fn run_all(jobs: Vec<Job>, limit: usize) -> Vec<Outcome> {
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
                    let token = match (worker, jobserver()) {
                        (0, _) | (_, None) => None,
                        (_, Some(client)) => client.acquire().ok(),
                    };
                    let outcome = run_one(&job);
                    drop(token);
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
