//! [`HipBuild::try_plan`] and [`HipBuild::try_compile`]: the whole pipeline, in order.
//!
//! 1. [`Resolved::new`]: output directory, cache, compiler, architectures (probed), roots and
//!    arguments as names, the launcher, parallelism limits, the cache's size.
//! 2. [`HipBuild::units`]: each unit looked up once in the object cache; when the library will
//!    be linked, each reusable object is checked (a corrupt one compiles instead); when
//!    something compiles, the launcher is asked once whether compiles go elsewhere; then each
//!    unit's plan is decided once by the pure [`plan::decide`] (reuse, compile, or distribute,
//!    with the reason).
//! 3. `try_plan` says so; `try_compile` acts through the steps of `execute`: stage (a job per
//!    unit to compile), run (in the links' directory, the log written as each ends; run again in
//!    the build's own cache when the shared one turns out full or read-only), store (each
//!    object under its key), link, watch the inputs, evict, record the build's statistics, and
//!    finish the log.

mod building;
mod execute;
mod link;
pub(crate) mod plan;
mod stage;

pub(crate) use link::SharedLink;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::build_script::{Directives, Env};
use crate::common::io::io_error;
use crate::common::time::{unix_now, utc_timestamp};
use crate::compile::Result;
use crate::compile::cache::{BuildStats, Busy, Claims, ObjectCache};
use crate::compile::passes::Prepared;
use crate::compile::passes::{self, Context, ToCompile};
use crate::compile::resolve::{Resolved, full_path};
use crate::compile::run::{Echo, Estimate, Parallelism, available_memory, decide_parallelism};
use crate::compile::{CompilePlan, CompileReport, PlannedJob, PlannedUnit, UnitReport};
use crate::compile::{HipBuild, timings};
use building::{Building, Jobs};
use plan::{Looked, Unit, UnitPlan};
use stage::Staged;

impl HipBuild {
    /// The units' jobs: their passes worked out first when the build splits them (see
    /// `passes`: only builds with something to compile, and no launcher, do).
    fn stage(&self, units: &[Unit], r: &Resolved, objects: &ObjectCache) -> Result<Staged> {
        // A unit with flags of its own compiles in one call (its passes and a shared header
        // would need its flags).
        let to_compile: Vec<ToCompile> = units
            .iter()
            .enumerate()
            .filter(|(_, u)| u.plan.compiles() && u.extra.is_empty())
            .map(|(index, u)| ToCompile {
                index,
                source: &u.source,
            })
            .collect();
        let scratch = objects.compile_tmpdir()?;
        let layout = match to_compile.is_empty() {
            true => None,
            false => {
                r.roots.link()?;
                r.bundle_layout(&scratch)
            }
        };
        let prepared = match &layout {
            Some(_) => {
                let name = |p: &std::path::Path| r.roots.name(p);
                let path = |n: &str| r.roots.resolve(n);
                let command = r.command();
                let ctx = Context {
                    command: &command,
                    identity: &r.toolchain.identity,
                    archs: &r.archs,
                    links: r.roots.dir(),
                    scratch: scratch.parent().unwrap_or(&scratch),
                    cache: &r.cache,
                    out_dir: &r.out_dir,
                    name: &name,
                    path: &path,
                    env: r.launcher.env(),
                    limit: r.limit,
                    host_pch: r.host_pch,
                };
                passes::analyze(&ctx, &to_compile)
                    .map_err(io_error("prepare the passes in", &r.out_dir))?
            }
            None => Prepared::default(),
        };
        stage::stage(units, r, objects, &prepared, layout.as_ref())
    }

    /// Every unit of the build, looked up once, with the plan for it, decided once. When the
    /// library `library` will be linked (`check`: by a build, not a plan), each reusable object is
    /// checked first; the launcher is asked whether it sends compiles elsewhere only when
    /// something compiles.
    fn units(
        &self,
        resolved: &mut Resolved,
        env: &Env,
        library: &str,
        objects: &mut ObjectCache,
        check: bool,
    ) -> Result<Vec<Unit>> {
        let mut units = Vec::new();
        for file in &self.files {
            let source = full_path(file)?;
            let name = resolved.roots.name(&source);
            let extra: Vec<String> = match self.file_flags.iter().find(|(f, _)| f == file) {
                Some((_, flags)) => flags
                    .iter()
                    .map(|f| resolved.roots.rewrite_arg(f))
                    .collect(),
                None => Vec::new(),
            };
            let holds = match self.file_holds.iter().find(|(f, _)| f == file) {
                Some((_, names)) => names.clone(),
                None => Vec::new(),
            };
            let mut settings = resolved.settings.clone();
            settings.args.extend(extra.iter().cloned());
            let id = crate::compile::cache::unit_id(&settings, &name);
            let facts = objects.facts(&id, library, &name, &settings, &resolved.roots);
            units.push(Looked {
                source,
                name,
                extra,
                holds,
                settings,
                id,
                facts,
            });
        }
        // What the decision needs besides each unit's facts: whether each reusable object can be
        // used (checked only when the library will be linked) and, when something compiles,
        // whether the launcher sends compiles elsewhere.
        let reusable: Vec<Option<&str>> = units.iter().map(|u| plan::reusable(&u.facts)).collect();
        let mut taken: Vec<Option<std::result::Result<PathBuf, String>>> =
            units.iter().map(|_| None).collect();
        if check && execute::will_link(self, resolved, library, &reusable)? {
            for (taken, key) in taken.iter_mut().zip(&reusable) {
                *taken = key.map(|key| objects.take(key));
            }
        }
        let compiles = reusable
            .iter()
            .zip(&taken)
            .any(|(key, taken)| key.is_none() || matches!(taken, Some(Err(_))));
        let distribute = compiles && resolved.ask_launcher(env)?;
        Ok(units
            .into_iter()
            .zip(taken)
            .map(|(unit, taken)| unit.decide(taken, distribute))
            .collect())
    }

    /// Why a unit of this build compiles in one call rather than passes (when its passes were
    /// not split; see `passes`).
    fn one_call_reason(&self, r: &Resolved) -> &'static str {
        r.never_split().unwrap_or(
            "one live architecture and no include prefix shared with other units (or a driver that does not say how it bundles)",
        )
    }

    /// How many of the units whose ids are `to_compile` run at once, and why.
    fn parallelism(&self, r: &Resolved, objects: &ObjectCache, to_compile: &[&str]) -> Parallelism {
        if let Some((jobs, reason)) = r.launcher.capacity() {
            // Compiles sent elsewhere use neither the local cores nor the local memory.
            return Parallelism {
                jobs,
                reason,
                memory: None,
            };
        }
        let measured: Vec<Option<u64>> = to_compile.iter().map(|id| objects.peak(id)).collect();
        let estimate = Estimate::choose(r.env_memory, &measured, self.memory_per_job);
        decide_parallelism(r.limit, &r.limit_source, estimate, available_memory())
    }

    /// Every command [`HipBuild::try_compile`] would run for `lib<name>.a`, with each unit's
    /// cache key, whether it is cached and the plan's decision and reason, without compiling
    /// anything.
    pub fn try_plan(&self, name: &str) -> Result<CompilePlan> {
        let directives = Directives::new(false);
        self.plan_in(name, &Env::new(&directives))
    }

    /// [`HipBuild::try_plan`] in the context `env` of the build that asks.
    pub(crate) fn plan_in(&self, name: &str, env: &Env) -> Result<CompilePlan> {
        let mut r = Resolved::new(self, env)?;
        let mut objects = r.object_cache(env.directives());
        let units = self.units(&mut r, env, name, &mut objects, false)?;
        // The jobs, as the build stages them (its passes worked out the same way: the compiler
        // is asked what the build asks it, kept in qola's cache; nothing is compiled).
        let staged = self.stage(&units, &r, &objects)?;
        let job = |j: usize| PlannedJob {
            job: staged.labels[j].clone(),
            why: stage::why(&staged.labels[j]),
            command: staged.commands[j].clone(),
        };
        let one_call = self.one_call_reason(&r);
        let mut planned = Vec::new();
        for (index, unit) in units.iter().enumerate() {
            let (key, object, decision, reason) = match &unit.plan {
                UnitPlan::Reuse { key, compiled_for } => (
                    Some(key.clone()),
                    objects.object_path(key),
                    "reuse",
                    format!("compiled for {compiled_for}"),
                ),
                UnitPlan::Compile { reason, distribute } => (
                    None,
                    objects.scratch(&unit.id, "o")?,
                    if *distribute { "distribute" } else { "compile" },
                    reason.to_string(),
                ),
            };
            let jobs: Vec<PlannedJob> = staged
                .scratch
                .iter()
                .filter(|s| s.unit == index)
                .flat_map(|s| s.jobs.iter().map(|j| job(*j)))
                .collect();
            let how = match (unit.plan.compiles(), staged.reports[index].passes.as_str()) {
                (false, _) => String::new(),
                (true, "one call") if !unit.extra.is_empty() => {
                    "one call: the unit has flags of its own".to_string()
                }
                (true, "one call") => format!("one call: {one_call}"),
                (true, passes) => passes.to_string(),
            };
            planned.push(PlannedUnit {
                how,
                jobs,
                command: r.compile_command(
                    &unit.extra,
                    &unit.source,
                    &object,
                    &object.with_extension("d"),
                    &crate::compile::passes::cuid(&unit.id),
                ),
                cached: key.is_some(),
                key,
                unit_id: unit.id.clone(),
                source: unit.source.clone(),
                decision,
                reason,
            });
        }
        let to_compile: Vec<&str> = units
            .iter()
            .filter(|u| u.plan.compiles())
            .map(|u| u.id.as_str())
            .collect();
        let parallelism = self.parallelism(&r, &objects, &to_compile);
        let (library, link) = match &self.shared {
            Some(path) => (
                path.clone(),
                vec![link::shared_command(
                    &r.toolchain.path,
                    self.shared_link(path),
                )],
            ),
            None => (
                r.out_dir.join(format!("lib{name}.a")),
                link::commands(name, &self.exported, &r.out_dir),
            ),
        };
        Ok(CompilePlan {
            library,
            shared_jobs: staged.pchs.iter().map(|(_, j)| job(*j)).collect(),
            link,
            units: planned,
            archs: r.archs,
            jobs: parallelism.jobs,
            jobs_reason: parallelism.reason,
            toolchain: r.toolchain,
        })
    }

    /// Compiles what changed and links `lib<name>.a` (see the module docs and `execute`): the
    /// build resolved and its plan decided, the jobs staged, run, and on success the objects
    /// stored, the library linked and the report made.
    pub fn try_compile(&self, name: &str) -> Result<CompileReport> {
        let directives = Directives::new(self.cargo_metadata);
        self.compile_in(name, &Env::new(&directives))
    }

    /// [`HipBuild::try_compile`] in the context `env` of the build that asks.
    pub(crate) fn compile_in(&self, name: &str, env: &Env) -> Result<CompileReport> {
        self.compile_claiming(name, env, &mut None, &BTreeMap::new(), Instant::now())
    }

    /// [`HipBuild::compile_in`] holding `claims` (made with the cache at the first call; see
    /// `cache::claims`): each unit it compiles is claimed first; when another live build holds a
    /// claim, [`HipBuild::compile_around`] goes on. `before` are the units an earlier round of
    /// this build compiled, by source: reported as compiled; `start` is when the build (its
    /// first round) started.
    fn compile_claiming(
        &self,
        name: &str,
        env: &Env,
        claims: &mut Option<Claims>,
        before: &BTreeMap<PathBuf, UnitReport>,
        start: Instant,
    ) -> Result<CompileReport> {
        let directives = env.directives();
        let mut resolved = Resolved::new(self, env)?;
        let mut objects = resolved.object_cache(directives);
        let units = self.units(&mut resolved, env, name, &mut objects, true)?;
        resolved.hooks.step("compile:planned");
        let busy = claims.get_or_insert_with(|| objects.claims()).claim(
            units
                .iter()
                .filter(|u| u.plan.compiles())
                .map(|u| u.id.as_str()),
        );
        if !busy.is_empty() {
            drop(objects);
            return self.compile_around(name, env, claims, (&units, &busy), start);
        }
        resolved.hooks.step("compile:claimed");
        if units.iter().any(|u| u.plan.compiles()) {
            resolved.launcher.start();
            objects.remove_leftovers();
        }
        let mut b = Building {
            directives,
            resolved,
            objects,
            name,
            units,
            start,
        };
        let jobs = self.run_jobs(&mut b)?;
        if let Some(failed) = jobs.ran.outcomes.iter().find(|o| o.failure.is_some()) {
            return Err(Self::failed(&b, &jobs, failed)?);
        }
        let report = self.finish(&mut b, jobs, before)?;
        // Their objects are in the cache: a build waiting for them takes them now.
        if let Some(claims) = claims {
            claims.release(b.units.iter().map(|u| u.id.as_str()));
        }
        Ok(report)
    }

    /// A build some of whose units (`busy`) another live build is compiling: this build's own
    /// compiles first (its other units, their objects stored, nothing linked), then it waits for
    /// each claim it found held, saying whose, and builds again, taking what the other builds
    /// stored from the cache (a unit whose holder failed or died compiles here, its claim held).
    /// Its own round says no summary: the build's one summary, with what that round compiled and
    /// the time since `start`, follows.
    fn compile_around(
        &self,
        name: &str,
        env: &Env,
        claims: &mut Option<Claims>,
        (units, busy): (&[Unit], &[Busy]),
        start: Instant,
    ) -> Result<CompileReport> {
        let waiting: BTreeSet<&str> = busy.iter().map(|b| b.id.as_str()).collect();
        let mine: BTreeSet<&Path> = units
            .iter()
            .filter(|u| u.plan.compiles() && !waiting.contains(u.id.as_str()))
            .map(|u| u.source.as_path())
            .collect();
        let mut before = BTreeMap::new();
        if !mine.is_empty() {
            let mut first = self.clone();
            first
                .files
                .retain(|f| full_path(f).is_ok_and(|p| mine.contains(p.as_path())));
            first.objects_only = true;
            first.says_summary = false;
            let report = first.compile_claiming(name, env, claims, &BTreeMap::new(), start)?;
            before.extend(
                report
                    .units
                    .into_iter()
                    .filter(|u| u.compiled)
                    .map(|u| (u.source.clone(), u)),
            );
        }
        let claims_now = claims.get_or_insert_with(|| Claims::new(PathBuf::new()));
        // In one order for every build (by id): two builds never wait for each other.
        let mut busy: Vec<&Busy> = busy.iter().collect();
        busy.sort_by(|a, b| a.id.cmp(&b.id));
        for b in busy {
            let unit = units
                .iter()
                .find(|u| u.id == b.id)
                .map_or(b.id.as_str(), |u| u.name.as_str());
            claims_now.wait(&b.id, |who| {
                env.directives().info(&format!(
                    "waiting for {who}, which compiles {unit}: this build needs it too, and takes its object from qola's cache once it is stored"
                ))
            });
        }
        self.compile_claiming(name, env, claims, &before, start)
    }

    /// Stages the build's jobs and runs them, a second time in the build's own cache when the
    /// shared one was found full or read-only while compiling.
    fn run_jobs(&self, b: &mut Building) -> Result<Jobs> {
        let mut staged = self.stage(&b.units, &b.resolved, &b.objects)?;
        let to_compile: Vec<&str> = staged
            .scratch
            .iter()
            .map(|s| b.units[s.unit].id.as_str())
            .collect();
        let parallelism = self.parallelism(&b.resolved, &b.objects, &to_compile);
        let log_units: Vec<(PathBuf, String)> = staged
            .reports
            .iter()
            .map(|u| (u.source.clone(), u.reason.clone()))
            .collect();
        let echo = Echo::choose(self.cargo_metadata, self.terminal);
        let log = b.log();
        let run = |staged: &mut Staged, resolved: &Resolved| {
            execute::run(
                resolved,
                staged,
                &parallelism,
                &log,
                log_units.clone(),
                echo,
            )
        };
        let mut ran = run(&mut staged, &b.resolved)?;
        if let Some(why) = ran
            .failure_text()
            .and_then(|said| b.objects.write_failure(said))
        {
            execute::remove_scratch(&staged.scratch);
            b.objects.fall_back(why);
            staged = self.stage(&b.units, &b.resolved, &b.objects)?;
            ran = run(&mut staged, &b.resolved)?;
        }
        Ok(Jobs {
            staged,
            parallelism,
            log_units,
            ran,
        })
    }

    /// The error of a build whose job `failed`, its timings written first.
    fn failed(
        b: &Building,
        jobs: &Jobs,
        failed: &crate::compile::run::Outcome,
    ) -> Result<crate::compile::CompileError> {
        let staged = &jobs.staged;
        let source = staged
            .reports
            .get(failed.unit)
            .map(|u| u.source.display().to_string());
        let summary = format!(
            "qola's compile of {} failed after {:.1}s",
            source.unwrap_or_else(|| "a precompiled header".to_string()),
            b.start.elapsed().as_secs_f64()
        );
        let timings = b.write_timings(jobs, (summary, b.start.elapsed()));
        if let Some((path, _)) = timings {
            b.directives.info(&format!(
                "timings of the failed build: {}",
                timings::where_written(&path)
            ));
        }
        execute::remove_scratch(&staged.scratch);
        execute::failed_compile(&b.resolved, staged, failed)
    }

    /// After every job succeeded: the objects stored, the library linked, the cache evicted
    /// and its history written, the report made, its timings and log written.
    fn finish(
        &self,
        b: &mut Building,
        mut jobs: Jobs,
        before: &BTreeMap<PathBuf, UnitReport>,
    ) -> Result<CompileReport> {
        let (name, resolved) = (b.name, &b.resolved);
        let (staged, ran) = (&mut jobs.staged, &mut jobs.ran);
        execute::store(&mut b.objects, name, &b.units, staged, ran, resolved)?;
        // What an earlier round of this build compiled (see `compile_around`) is its compile.
        for report in staged.reports.iter_mut().filter(|r| !r.compiled) {
            if let Some(compiled) = before.get(&report.source) {
                *report = compiled.clone();
            }
        }
        let linked = match self.objects_only {
            true => link::Linked {
                library: PathBuf::new(),
                written: false,
            },
            false => execute::link_library(self, resolved, name, &staged.reports)?,
        };
        execute::watch_inputs(b.directives, &staged.reports, &resolved.out_dir);
        let compiled = staged.reports.iter().filter(|u| u.compiled).count();
        let evicted = if compiled > 0 {
            b.objects.evict(resolved.max_cache_size)?.objects
        } else {
            0
        };
        // The cache's statistics are an optimisation's report: never a failed or a waiting build.
        b.objects.record_build(BuildStats {
            at: utc_timestamp(unix_now()),
            library: name.to_string(),
            out_dir: resolved.out_dir.display().to_string(),
            hits: staged.reports.len() - compiled,
            misses: compiled,
        });
        let mut report = CompileReport {
            units: std::mem::take(&mut staged.reports),
            library: linked.library,
            library_written: linked.written,
            archs: resolved.archs.clone(),
            toolchain: resolved.toolchain.clone(),
            log: b.log(),
            elapsed: b.start.elapsed(),
            jobs: jobs.parallelism.jobs,
            jobs_reason: jobs.parallelism.reason.clone(),
            launcher_hits: ran.answered.hits,
            elsewhere: ran.answered.elsewhere.take(),
            stayed_here: resolved.launcher.stays_here(),
            evicted,
        };
        let timings = match compiled {
            0 => None,
            _ => {
                let summary = report.summary();
                jobs.staged.reports = std::mem::take(&mut report.units);
                let written = b.write_timings(&jobs, (summary, report.elapsed));
                report.units = std::mem::take(&mut jobs.staged.reports);
                written
            }
        };
        let echo_summary = !self.cargo_metadata && self.terminal.is_some();
        execute::finish_log(
            b.directives,
            jobs.ran.progress,
            &report,
            jobs.log_units,
            (echo_summary, self.says_summary),
            timings,
        )?;
        Ok(report)
    }
}
