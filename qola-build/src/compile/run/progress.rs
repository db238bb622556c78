//! Progress of a build that compiles: the library's log, `qola-compile-<name>.log` in its
//! output directory, is started before the first compile (its first line says how many run at
//! once and why) and appended and flushed as each unit ends, with how many are done, the unit's
//! time, peak memory and why it compiled, and an estimate of the time left; reused units (and
//! where their objects were compiled) and the summary follow at the end. In a build script its
//! path and each compile command are printed as plain lines, which `cargo build -vv` shows; on a
//! command line its path and each finished unit go to standard error. A build that relinks its
//! library from the cache writes the log too (every unit reused); a build that neither compiles
//! nor relinks leaves the previous log as it is (a no-op writes nothing).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common::io::{IoError, io_error};
use crate::common::text::shell_quote;

/// Where progress is shown besides the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    /// Nowhere.
    Off,
    /// A build script's standard output (`cargo build -vv`): the log's path, each command and
    /// each finished unit.
    BuildScript,
    /// A command line's standard error: the log's path and each finished unit.
    Terminal,
    /// As `Terminal`, and each compile command (`qola build -v`).
    TerminalVerbose,
}

impl Echo {
    /// Build script directives win: their standard output is Cargo's.
    pub(crate) fn choose(cargo_metadata: bool, terminal: Option<bool>) -> Echo {
        match (cargo_metadata, terminal) {
            (true, _) => Echo::BuildScript,
            (false, Some(false)) => Echo::Terminal,
            (false, Some(true)) => Echo::TerminalVerbose,
            (false, None) => Echo::Off,
        }
    }

    fn say(self, line: &str) {
        match self {
            Echo::Off => {}
            Echo::BuildScript => println!("{line}"),
            Echo::Terminal | Echo::TerminalVerbose => eprintln!("{line}"),
        }
    }
}

/// The log of a running build.
pub(crate) struct Progress {
    file: Mutex<(std::fs::File, usize)>,
    path: PathBuf,
    /// Each unit's source and why it compiles (or where its object was compiled).
    units: Vec<(PathBuf, String)>,
    total: usize,
    start: Instant,
    echo: Echo,
}

impl Progress {
    /// Starts the log at `path` for `total` compiles of `units` (source and reason, by unit
    /// index), `jobs` at once; `echo`: where else to show it.
    pub(crate) fn start(
        path: &Path,
        jobs_reason: &str,
        units: Vec<(PathBuf, String)>,
        total: usize,
        jobs: usize,
        echo: Echo,
    ) -> Result<Progress, IoError> {
        let mut file = std::fs::File::create(path).map_err(io_error("create the log", path))?;
        writeln!(file, "jobs: {jobs_reason}").map_err(io_error("write the log", path))?;
        echo.say(&format!(
            "qola: compiling {total} of {} HIP units, {jobs} at once; progress in {}",
            units.len(),
            path.display()
        ));
        Ok(Progress {
            file: Mutex::new((file, 0)),
            path: path.to_path_buf(),
            units,
            total,
            start: Instant::now(),
            echo,
        })
    }

    /// A compile starts: its command `argv` (`-vv`).
    pub(crate) fn started(&self, argv: &[String]) {
        if matches!(self.echo, Echo::BuildScript | Echo::TerminalVerbose) {
            let command: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
            self.echo
                .say(&format!("qola: running {}", command.join(" ")));
        }
    }

    /// The compile of unit `unit` ended (`failed` or not, after `elapsed`, at `peak` bytes,
    /// `cpu` of user and system time): one line, flushed.
    pub(crate) fn ended(
        &self,
        unit: usize,
        failed: bool,
        elapsed: Duration,
        peak: Option<u64>,
        cpu: Duration,
    ) {
        let mut guard = self.file.lock().expect("log lock");
        guard.1 += 1;
        let done = guard.1;
        // Wall time per unit so far (the parallelism is in it), times the units left.
        let spent = self.start.elapsed();
        let left = spent.mul_f64(self.total.saturating_sub(done) as f64 / done as f64);
        let line = format!(
            "{} ({done}/{} done, {:.0}s so far, about {} left)",
            unit_line(
                if failed { "failed" } else { "compiled" },
                elapsed,
                peak,
                Some(cpu),
                &self.units[unit],
            ),
            self.total,
            spent.as_secs_f64(),
            duration_words(left),
        );
        let _ = writeln!(guard.0, "{line}").and_then(|()| guard.0.flush());
        self.echo.say(&format!("qola: {line}"));
    }

    /// The reused units (by index), the summary and where the timings report is close the log.
    pub(crate) fn finish(
        self,
        reused: &[usize],
        summary: &str,
        timings: Option<&str>,
    ) -> Result<(), IoError> {
        let (mut file, _) = self.file.into_inner().expect("log lock");
        let mut text = String::new();
        for &unit in reused {
            let _ = writeln!(
                text,
                "{}",
                unit_line("cached", Duration::ZERO, None, None, &self.units[unit])
            );
        }
        let _ = writeln!(text, "summary: {summary}");
        if let Some(line) = timings {
            let _ = writeln!(text, "{line}");
        }
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(io_error("write the log", &self.path))
    }
}

/// One unit: what happened, seconds, peak memory, CPU seconds, source, why.
fn unit_line(
    what: &str,
    elapsed: Duration,
    peak: Option<u64>,
    cpu: Option<Duration>,
    (source, why): &(PathBuf, String),
) -> String {
    let memory = peak.map_or("-".to_string(), |b| format!("{}MB", b >> 20));
    let cpu = cpu.map_or("-".to_string(), |c| format!("{:.2}s", c.as_secs_f64()));
    format!(
        "{what:8} {:7.2}s {memory:>7} cpu {cpu:>8} {} ({why})",
        elapsed.as_secs_f64(),
        source.display()
    )
}

/// `3h 05m`, `12m 40s`, `35s`.
fn duration_words(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration_words(Duration::from_secs(35)), "35s");
        assert_eq!(duration_words(Duration::from_secs(760)), "12m 40s");
        assert_eq!(duration_words(Duration::from_secs(11_100)), "3h 05m");
    }
}
