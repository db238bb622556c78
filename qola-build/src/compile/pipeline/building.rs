//! One build of a library on its way (`Building`: what it resolved, its cache, its units, when
//! it started), the jobs it ran (`Jobs`), and what both give: the build's log and its timings
//! report.

use std::path::PathBuf;
use std::time::Instant;

use super::execute::Ran;
use super::plan::Unit;
use super::stage::{self, Staged};
use crate::build_script::Directives;
use crate::compile::cache::ObjectCache;
use crate::compile::resolve::Resolved;
use crate::compile::run::Parallelism;
use crate::compile::timings;

/// The jobs of a build and how they ran: as staged, how many at once and why, each unit's line
/// of the log, and the outcomes with what the launcher answered.
pub(super) struct Jobs {
    pub staged: Staged,
    pub parallelism: Parallelism,
    pub log_units: Vec<(PathBuf, String)>,
    pub ran: Ran,
}

/// One build of `lib<name>` on its way: what it resolved, its cache, its units with their plan,
/// and when it started.
pub(super) struct Building<'a> {
    pub directives: &'a Directives,
    pub resolved: Resolved,
    pub objects: ObjectCache<'a>,
    pub name: &'a str,
    pub units: Vec<Unit>,
    pub start: Instant,
}

impl Building<'_> {
    /// The build's log (`qola-compile-<name>.log` in the output directory).
    pub(super) fn log(&self) -> PathBuf {
        self.resolved
            .out_dir
            .join(format!("qola-compile-{}.log", self.name))
    }

    /// Writes the timings report of the build (when asked for; see `timings`) that ran `ran`,
    /// with its `summary` after `wall`: its path and how long writing it took. A report that
    /// cannot be written is a warning, never a failed build.
    pub(super) fn write_timings(
        &self,
        jobs: &Jobs,
        (summary, wall): (String, std::time::Duration),
    ) -> Option<(PathBuf, std::time::Duration)> {
        let (staged, ran, parallelism) = (&jobs.staged, &jobs.ran, &jobs.parallelism);
        let (directives, r, name, units, start, objects) = (
            self.directives,
            &self.resolved,
            self.name,
            &self.units,
            self.start,
            &self.objects,
        );
        if !r.timings {
            return None;
        }
        let began = Instant::now();
        let launcher = match objects.compile_tmpdir() {
            Ok(tmpdir) => r.launcher.unit_answers(&stage::launcher_log(&tmpdir)),
            Err(_) => Default::default(),
        };
        let names: Vec<(String, Vec<String>)> = units
            .iter()
            .map(|u| (u.name.clone(), u.holds.clone()))
            .collect();
        let timeline = timings::collect::timeline(
            timings::Inputs {
                library: name,
                summary,
                wall: wall.as_secs_f64(),
                jobs: parallelism.jobs,
                jobs_reason: &parallelism.reason,
                memory: parallelism.memory,
                units: Vec::new(),
                spans: Vec::new(),
            },
            &staged.reports,
            &names,
            &timings::collect::Jobs {
                labels: &staged.labels,
                after: &staged.after,
                outcomes: &ran.outcomes,
                start,
            },
            &timings::collect::Answers {
                launcher: &launcher,
                distributed: r.launcher.distributes(),
            },
        );
        match timeline.write(&r.out_dir) {
            Ok(path) => Some((path, began.elapsed())),
            Err(e) => {
                directives.warning(&format!(
                    "cannot write the timings report in {}: {e}",
                    r.out_dir.display()
                ));
                None
            }
        }
    }
}
