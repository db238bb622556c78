//! The timeline of a build from what its steps left: the units' reports, the staged jobs'
//! labels and dependencies, the runner's outcomes, and where the launcher answered each compile.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{Ended, Inputs, Span, Timeline, UnitRow};
use crate::compile::UnitReport;
use crate::compile::launcher::Answer;
use crate::compile::run::Outcome;

/// The jobs of a build, as staged and as run.
pub(crate) struct Jobs<'a> {
    /// What each job is.
    pub labels: &'a [String],
    /// The jobs each job waited for.
    pub after: &'a [Vec<usize>],
    /// What happened to each job that ran.
    pub outcomes: &'a [Outcome],
    /// When the build started.
    pub start: Instant,
}

/// How the units were compiled.
pub(crate) struct Answers<'a> {
    /// Per unit name (as the compiles named the source): where the launcher answered from.
    pub launcher: &'a BTreeMap<String, Answer>,
    /// The compiles went to a farm.
    pub distributed: bool,
}

/// The timeline of `library`'s build: its units (`reports`, each named in `names` with what it
/// holds besides itself), jobs and answers.
pub(crate) fn timeline(
    head: Inputs,
    reports: &[UnitReport],
    names: &[(String, Vec<String>)],
    jobs: &Jobs,
    answers: &Answers,
) -> Timeline {
    let failed_units: Vec<usize> = jobs
        .outcomes
        .iter()
        .filter(|o| o.failure.is_some())
        .map(|o| o.unit)
        .collect();
    let units = reports
        .iter()
        .enumerate()
        .map(|(i, report)| {
            let ended = if !report.compiled {
                Ended::QolaCache
            } else if failed_units.contains(&i) {
                Ended::Failed
            } else if answers.distributed {
                Ended::Distributed
            } else {
                match answers.launcher.get(&names[i].0) {
                    Some(Answer::Local) => Ended::LauncherCache,
                    Some(Answer::Remote) => Ended::RemoteCache,
                    Some(Answer::Miss) | None => Ended::Compiled,
                }
            };
            UnitRow {
                source: names[i].0.clone(),
                holds: names[i].1.clone(),
                ended,
                reason: report.reason.clone(),
                passes: report.passes.clone(),
                seconds: report.elapsed.as_secs_f64(),
                cpu: report.cpu.as_secs_f64(),
                peak: report.peak_memory,
            }
        })
        .collect();
    // Spans in job order; the jobs that never ran (after a failure) have none.
    let mut ran: Vec<&Outcome> = jobs.outcomes.iter().collect();
    ran.sort_by_key(|o| o.job);
    let span_of: BTreeMap<usize, usize> = ran.iter().enumerate().map(|(i, o)| (o.job, i)).collect();
    let spans = ran
        .iter()
        .map(|o| Span {
            unit: (o.unit != usize::MAX).then_some(o.unit),
            label: jobs.labels.get(o.job).cloned().unwrap_or_default(),
            slot: o.slot,
            start: o
                .started
                .saturating_duration_since(jobs.start)
                .as_secs_f64(),
            seconds: o.elapsed.as_secs_f64(),
            cpu: o.cpu.as_secs_f64(),
            peak: o.peak_memory,
            after: jobs
                .after
                .get(o.job)
                .into_iter()
                .flatten()
                .filter_map(|a| span_of.get(a).copied())
                .collect(),
            failed: o.failure.is_some(),
        })
        .collect();
    Timeline::new(Inputs {
        units,
        spans,
        ..head
    })
}
