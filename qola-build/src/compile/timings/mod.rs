//! The timings report of a build that compiled (`--timings`, `QOLA_TIMINGS=1`,
//! [`crate::HipBuild::timings`]): what ran when, where, how each unit ended, and what held the
//! build back. Written next to the library's log as `qola-timings-<name>.html` (one
//! self-contained page: its data, styles and script inline, nothing fetched) and
//! `qola-timings-<name>.json` (Chrome's trace format, for chrome://tracing and Perfetto).
//!
//! The model, built once from what the build already knows ([`Timeline::new`]), then drawn:
//!
//! | part | from | shown as |
//! |---|---|---|
//! | a span per job: the unit, what the job is (`one call`, `device gfx942`, `empty device gfx950`, `bundle`, `host`, `precompiled header`), its slot, start, seconds, CPU seconds, peak memory | the runner's outcomes (`run`) and the staged jobs' labels (`stage`) | a bar on the slot's lane |
//! | what a unit holds besides itself: a batch's composable_kernel instances | the build's [`crate::HipBuild::file_holds`] | in the bar's tooltip, the slowest units' table and the trace's arguments |
//! | how each unit ended: compiled here, from qola's cache, from the launcher's local cache, from its remote storage, distributed, failed | the plan (qola's cache), ccache's stats log (one entry per compile, `CCACHE_STATSLOG`), the farm launcher | the bar's colour, the legend with counts |
//! | concurrency and memory in use over time | the spans (a job holds its measured peak for its whole span: an upper bound) | two step charts, against the job cap and the memory the cap divided |
//! | the slowest units | the units' seconds, with the plan's reason (`new content: …`) | a table |
//! | the critical path | the spans and the jobs each waited for ([`critical_path`]) | outlined bars and a list, against the build's wall time |
//!
//! Units reused from qola's cache ran no job: they sit on a lane of their own at the start.
//! sccache says per build, not per compile, what its cache answered: on sccache and the farm
//! a unit's bar says `compiled by sccache` / `distributed`, and the summary line the totals.

pub(crate) mod collect;
mod html;
mod trace;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// How a unit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Ended {
    /// Compiled on this machine (by the compiler, or a launcher that says nothing per compile).
    Compiled,
    /// Taken from qola's object cache.
    QolaCache,
    /// Answered by the launcher's local cache.
    LauncherCache,
    /// Answered by the launcher's remote storage.
    RemoteCache,
    /// Sent to the compile farm.
    Distributed,
    /// Its compile failed.
    Failed,
}

impl Ended {
    /// Every ending, in the legend's order.
    pub(crate) const ALL: [Ended; 6] = [
        Ended::Compiled,
        Ended::QolaCache,
        Ended::LauncherCache,
        Ended::RemoteCache,
        Ended::Distributed,
        Ended::Failed,
    ];

    /// In words, for the legend.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Ended::Compiled => "compiled",
            Ended::QolaCache => "from qola's cache",
            Ended::LauncherCache => "from the launcher's cache",
            Ended::RemoteCache => "from the launcher's remote storage",
            Ended::Distributed => "distributed to the farm",
            Ended::Failed => "failed",
        }
    }
}

/// One job of the build.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Span {
    /// Its unit (index into [`Timeline::units`]); `None` for a job of several units (a
    /// precompiled header).
    pub unit: Option<usize>,
    /// What the job is.
    pub label: String,
    /// The worker that ran it.
    pub slot: usize,
    /// Seconds from the build's start.
    pub start: f64,
    /// Wall seconds.
    pub seconds: f64,
    /// CPU seconds (user and system, with every process it waited for).
    pub cpu: f64,
    /// Peak resident memory in bytes, when measured.
    pub peak: Option<u64>,
    /// The jobs it waited for (indices into [`Timeline::spans`]).
    pub after: Vec<usize>,
    /// Whether it failed.
    pub failed: bool,
}

/// One unit of the build.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UnitRow {
    /// Its source, as the build names it.
    pub source: String,
    /// What it compiles besides itself (a batch's instances), by name.
    pub holds: Vec<String>,
    /// How it ended.
    pub ended: Ended,
    /// Why it compiled, or where its object was compiled.
    pub reason: String,
    /// How it compiled (`one call`, its passes).
    pub passes: String,
    /// Wall seconds, first job's start to last job's end.
    pub seconds: f64,
    /// CPU seconds of all its jobs.
    pub cpu: f64,
    /// Its largest job's peak memory.
    pub peak: Option<u64>,
}

/// A build's timings (see the module docs).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Timeline {
    /// The library.
    pub library: String,
    /// The build's summary line, as the log and the terminal have it.
    pub summary: String,
    /// Wall seconds of the whole build.
    pub wall: f64,
    /// Compiles at once, and why.
    pub jobs: usize,
    pub jobs_reason: String,
    /// The memory the job cap divided, when there was a cap.
    pub memory: Option<u64>,
    pub units: Vec<UnitRow>,
    pub spans: Vec<Span>,
    /// The critical path (indices into `spans`, in order) and its seconds.
    pub critical: Vec<usize>,
    pub critical_seconds: f64,
}

/// What [`Timeline::new`] reads.
pub(crate) struct Inputs<'a> {
    pub library: &'a str,
    pub summary: String,
    pub wall: f64,
    pub jobs: usize,
    pub jobs_reason: &'a str,
    pub memory: Option<u64>,
    /// Per unit: source name, compiled, reason, passes, seconds, CPU seconds, peak.
    pub units: Vec<UnitRow>,
    /// Per job: its span (start relative to the build's start).
    pub spans: Vec<Span>,
}

impl Timeline {
    /// The timeline of `inputs`, with its critical path.
    pub(crate) fn new(inputs: Inputs) -> Timeline {
        let (critical, critical_seconds) = critical_path(&inputs.spans);
        Timeline {
            library: inputs.library.to_string(),
            summary: inputs.summary,
            wall: inputs.wall,
            jobs: inputs.jobs,
            jobs_reason: inputs.jobs_reason.to_string(),
            memory: inputs.memory,
            units: inputs.units,
            spans: inputs.spans,
            critical,
            critical_seconds,
        }
    }

    /// Writes the report into `dir` (`qola-timings-<library>.html`, and its Chrome trace beside
    /// it, [`trace_path`]); returns the
    /// HTML file.
    pub(crate) fn write(&self, dir: &Path) -> Result<PathBuf, crate::common::io::IoError> {
        let html = dir.join(format!("qola-timings-{}.html", self.library));
        crate::common::io::write_atomic(&html, html::page(self).as_bytes())?;
        crate::common::io::write_atomic(&trace_path(&html), trace::chrome_trace(self).as_bytes())?;
        Ok(html)
    }
}

/// The Chrome trace beside the page `html`.
pub(crate) fn trace_path(html: &Path) -> PathBuf {
    html.with_extension("json")
}

/// Where the report is, in words: the page and its trace.
pub(crate) fn where_written(html: &Path) -> String {
    format!(
        "{} (its Chrome trace, for Perfetto or chrome://tracing: {})",
        html.display(),
        trace_path(html).display()
    )
}

/// The report of a library that came prebuilt (`qola build --prebuilt`): its line, the
/// seconds the fetch took, and no job. Written into `dir`; returns the HTML file.
pub(crate) fn write_prebuilt(
    dir: &Path,
    library: &str,
    summary: String,
    seconds: f64,
) -> Result<PathBuf, crate::common::io::IoError> {
    Timeline::new(Inputs {
        library,
        summary,
        wall: seconds,
        jobs: 0,
        jobs_reason: "prebuilt: fetched by its library key, nothing compiled",
        memory: None,
        units: Vec::new(),
        spans: Vec::new(),
    })
    .write(dir)
}

/// The longest chain of jobs each waiting for the one before (what no number of slots could
/// shorten): for each job, its finish were every job to start as soon as the jobs it waits for
/// end; the chain ending at the latest. Jobs are listed in an order where each comes after the
/// jobs it waits for (the runner's list). Returns the chain (span indices, first to last) and
/// its seconds.
pub(crate) fn critical_path(spans: &[Span]) -> (Vec<usize>, f64) {
    let mut finish = vec![0.0f64; spans.len()];
    let mut before: Vec<Option<usize>> = vec![None; spans.len()];
    // Dependencies point to earlier or later indices (a unit's host pass is listed after its
    // device passes, a shared header's job first): visit in an order that respects them.
    let mut order = Vec::with_capacity(spans.len());
    let mut placed = vec![false; spans.len()];
    while order.len() < spans.len() {
        let mut progress = false;
        for (i, span) in spans.iter().enumerate() {
            if !placed[i] && span.after.iter().all(|&a| a >= spans.len() || placed[a]) {
                placed[i] = true;
                order.push(i);
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    for &i in &order {
        let (start, from) = spans[i]
            .after
            .iter()
            .filter(|&&a| a < spans.len())
            .map(|&a| (finish[a], Some(a)))
            .fold(
                (0.0, None),
                |best, next| if next.0 > best.0 { next } else { best },
            );
        finish[i] = start + spans[i].seconds;
        before[i] = from;
    }
    let Some(last) = (0..spans.len()).max_by(|&a, &b| finish[a].total_cmp(&finish[b])) else {
        return (Vec::new(), 0.0);
    };
    let mut chain = vec![last];
    while let Some(previous) = before[*chain.last().expect("a chain")] {
        chain.push(previous);
    }
    chain.reverse();
    (chain, finish[last])
}

/// Jobs running and memory held over time: `(seconds, jobs, bytes)` at each start and end, in
/// time order (a job holds its peak for its whole span).
pub(crate) fn load(spans: &[Span]) -> Vec<(f64, usize, u64)> {
    let mut events: Vec<(f64, i64, i128)> = Vec::new();
    for span in spans {
        let bytes = i128::from(span.peak.unwrap_or(0));
        events.push((span.start, 1, bytes));
        events.push((span.start + span.seconds, -1, -bytes));
    }
    // Ends before starts at the same moment: a slot handed on is not two jobs.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut jobs, mut bytes) = (0i64, 0i128);
    let mut out: Vec<(f64, usize, u64)> = vec![(0.0, 0, 0)];
    for (at, dj, db) in events {
        jobs += dj;
        bytes += db;
        let point = (at, jobs.max(0) as usize, bytes.max(0) as u64);
        match out.last_mut() {
            Some(last) if last.0 == at => *last = point,
            _ => out.push(point),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: f64, seconds: f64, after: &[usize], peak: u64) -> Span {
        Span {
            unit: Some(0),
            label: String::new(),
            slot: 0,
            start,
            seconds,
            cpu: seconds,
            peak: Some(peak),
            after: after.to_vec(),
            failed: false,
        }
    }

    #[test]
    fn the_critical_path_is_the_longest_chain_of_waiting_jobs() {
        // A unit's host pass (listed first) waits for two device passes and a shared header;
        // another unit is one long call.
        let spans = [
            span(9.0, 3.0, &[1, 2, 3], 0),
            span(1.0, 4.0, &[], 0),
            span(1.0, 8.0, &[], 0),
            span(0.0, 1.0, &[], 0),
            span(0.0, 10.0, &[], 0),
        ];
        let (chain, seconds) = critical_path(&spans);
        assert_eq!(chain, [2, 0]);
        assert_eq!(seconds, 11.0);
        assert_eq!(critical_path(&[]), (vec![], 0.0));
    }

    #[test]
    fn load_counts_running_jobs_and_their_memory_and_a_handed_on_slot_is_not_two() {
        let spans = [
            span(0.0, 2.0, &[], 5),
            span(2.0, 1.0, &[], 7),
            span(1.0, 3.0, &[], 1),
        ];
        assert_eq!(
            load(&spans),
            [
                (0.0, 1, 5),
                (1.0, 2, 6),
                (2.0, 2, 8),
                (3.0, 1, 1),
                (4.0, 0, 0)
            ]
        );
    }
}
