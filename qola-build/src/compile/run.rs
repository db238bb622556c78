//! Planning and running a build: [`HipBuild::try_plan`] and [`HipBuild::try_compile`].
//!
//! Both look each unit up once in the object cache ([`ObjectCache::facts`]) and ask the pure
//! [`plan::decide`] what to do with it; `try_plan` says so, `try_compile` does it through the
//! steps in `execute`: compiles the units the plan compiles (in the links' directory of the
//! roots, every path by its name), stores their objects, links the library, and writes the log,
//! the Cargo directives and the cache's statistics.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::build_script::{Directives, Env};
use crate::common::io::write_atomic;
use crate::common::text::shell_quote;
use crate::common::time::{unix_now, utc_timestamp};
use crate::compile::error::{CompileError, Result};
use crate::compile::object_cache::{BuildStats, ObjectCache, UnitFacts, unit_id};
use crate::compile::plan::{self, UnitPlan};
use crate::compile::report::{CompilePlan, CompileReport, PlannedUnit};
use crate::compile::resolve::{Resolved, full_path};
use crate::compile::{HipBuild, execute, farm, link, memory, progress};

/// One unit as the build sees it: where its source is, its name and id, and the plan for it.
pub(super) struct Unit {
    /// The source file.
    pub source: PathBuf,
    /// The source's name (see `roots`).
    pub name: String,
    /// The unit id (see `object_cache`).
    pub id: String,
    /// What the cache knows of it.
    pub facts: UnitFacts,
    /// What to do with it.
    pub plan: UnitPlan,
}

impl HipBuild {
    /// Every unit of the build, looked up once, with the plan for it; the farm is asked only
    /// when something compiles.
    fn units(
        &self,
        resolved: &mut Resolved,
        env: &Env,
        library: &str,
        objects: &mut ObjectCache,
    ) -> Result<Vec<Unit>> {
        let mut units = Vec::new();
        for file in &self.files {
            let source = full_path(file)?;
            let name = resolved.roots.name(&source);
            let id = unit_id(&resolved.toolchain.identity, &resolved.args, &name);
            let facts = objects.facts(&id, library, &name, &resolved.roots);
            let plan = plan::decide(&facts, &resolved.toolchain.identity, &resolved.args, false);
            units.push(Unit {
                source,
                name,
                id,
                facts,
                plan,
            });
        }
        if units
            .iter()
            .any(|u| matches!(u.plan, UnitPlan::Compile { .. }))
        {
            resolved.join_farm(env)?;
            let up = matches!(resolved.farm, farm::Farm::Up { .. });
            for unit in &mut units {
                unit.plan = plan::decide(
                    &unit.facts,
                    &resolved.toolchain.identity,
                    &resolved.args,
                    up,
                );
            }
        }
        Ok(units)
    }

    /// How many of the units whose ids are `to_compile` run at once, and why.
    fn parallelism(
        &self,
        r: &Resolved,
        objects: &ObjectCache,
        to_compile: &[&str],
    ) -> memory::Parallelism {
        if let (Some(capacity), farm::Farm::Up { servers, cpus }) = (r.farm.capacity(), &r.farm) {
            // Remote compiles use neither the local cores nor the local memory.
            return memory::Parallelism {
                jobs: capacity,
                reason: format!(
                    "{capacity} at once: the compile farm's capacity ({servers} build servers, {cpus} CPUs; sccache --dist-status)"
                ),
            };
        }
        let measured: Vec<Option<u64>> = to_compile.iter().map(|id| objects.peak(id)).collect();
        let estimate = memory::Estimate::choose(r.env_memory, &measured, self.memory_per_job);
        memory::decide(r.limit, &r.limit_source, estimate, memory::available())
    }

    /// Every command [`HipBuild::try_compile`] would run for `lib<name>.a`, with each unit's
    /// cache key, whether it is cached and the plan's decision and reason, without compiling
    /// anything.
    pub fn try_plan(&self, name: &str) -> Result<CompilePlan> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let mut r = self.resolve(&env)?;
        let mut objects = ObjectCache::open(r.cache.join(crate::cache::OBJECTS));
        let units = self.units(&mut r, &env, name, &mut objects)?;
        let mut planned = Vec::new();
        for unit in &units {
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
            planned.push(PlannedUnit {
                command: r.compile_command(&unit.source, &object, &object.with_extension("d")),
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
            .filter(|u| matches!(u.plan, UnitPlan::Compile { .. }))
            .map(|u| u.id.as_str())
            .collect();
        let parallelism = self.parallelism(&r, &objects, &to_compile);
        let (library, link) = match &self.shared {
            Some(path) => (
                path.clone(),
                vec![link::shared_command(
                    &r.toolchain.path,
                    path,
                    self.version_script.as_deref(),
                )],
            ),
            None => (
                r.out_dir.join(format!("lib{name}.a")),
                link::commands(name, &self.exported, &r.out_dir),
            ),
        };
        Ok(CompilePlan {
            library,
            link,
            units: planned,
            archs: r.archs,
            jobs: parallelism.jobs,
            jobs_reason: parallelism.reason,
            toolchain: r.toolchain,
        })
    }

    /// Compiles what changed and links `lib<name>.a` (see the module docs and `execute`).
    pub fn try_compile(&self, name: &str) -> Result<CompileReport> {
        let start = Instant::now();
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let mut resolved = self.resolve(&env)?;
        let mut objects = ObjectCache::open(resolved.cache.join(crate::cache::OBJECTS));
        let units = self.units(&mut resolved, &env, name, &mut objects)?;
        if units
            .iter()
            .any(|u| matches!(u.plan, UnitPlan::Compile { .. }))
        {
            resolved.start_sccache_server();
        }
        let mut staged = execute::stage(&units, &resolved, &mut objects)?;
        let to_compile: Vec<&str> = staged
            .scratch
            .iter()
            .map(|s| units[s.unit].id.as_str())
            .collect();
        let parallelism = self.parallelism(&resolved, &objects, &to_compile);
        let log = resolved.out_dir.join(format!("qola-compile-{name}.log"));
        let log_units: Vec<(PathBuf, String)> = staged
            .reports
            .iter()
            .map(|u| (u.source.clone(), u.reason.clone()))
            .collect();
        let echo = progress::Echo::choose(self.cargo_metadata, self.terminal);
        let jobs = std::mem::take(&mut staged.jobs);
        let ran = execute::run(&resolved, jobs, &parallelism, &log, log_units.clone(), echo)?;
        if let Some(failed) = ran.outcomes.iter().find(|o| o.failure.is_some()) {
            execute::remove_scratch(&staged.scratch);
            let (code, stderr) = failed.failure.clone().expect("a failure");
            let (code, stderr) = match &resolved.farm_command {
                Some(_) => farm::compiler_status(code, &stderr),
                None => (code, stderr),
            };
            let scratch = staged
                .scratch
                .iter()
                .find(|s| s.unit == failed.unit)
                .expect("the failed job's scratch entry");
            return Err(failed_compile(
                &resolved,
                &staged.reports[failed.unit].source,
                &scratch.argv,
                code,
                stderr,
            )?);
        }
        execute::store(&mut objects, name, &units, &mut staged, &ran, &resolved)?;
        let reports = staged.reports;
        let linked = self.link_library(&resolved, name, &reports)?;
        execute::watch_inputs(&directives, &reports, &resolved.out_dir);
        let compiled = reports.iter().filter(|u| u.compiled).count();
        let evicted = if compiled > 0 {
            objects.evict(resolved.max_cache_size)?.objects
        } else {
            0
        };
        // The cache's statistics are an optimisation's report: a failure to keep them is not a
        // failed build.
        let _ = objects.record_build(BuildStats {
            at: utc_timestamp(unix_now()),
            library: name.to_string(),
            out_dir: resolved.out_dir.display().to_string(),
            hits: reports.len() - compiled,
            misses: compiled,
        });
        let report = CompileReport {
            units: reports,
            library: linked.library,
            library_written: linked.written,
            archs: resolved.archs.clone(),
            toolchain: resolved.toolchain.clone(),
            log,
            elapsed: start.elapsed(),
            jobs: parallelism.jobs,
            jobs_reason: parallelism.reason,
            launcher_hits: ran.launcher_hits,
            farm: ran.farm,
            farm_down: match &resolved.farm {
                farm::Farm::Down { why } => Some(why.clone()),
                _ => None,
            },
            evicted,
        };
        self.finish_log(&directives, ran.progress, &report, log_units)?;
        Ok(report)
    }
}

/// The error of a compile that failed, with its exact command; writes `repro.sh` next to the log.
fn failed_compile(
    resolved: &Resolved,
    source: &Path,
    argv: &[String],
    code: Option<i32>,
    stderr: String,
) -> Result<CompileError> {
    let command = argv
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    let cwd = resolved.roots.dir();
    let mut env_words: String = resolved
        .launcher_env
        .iter()
        .map(|(k, v)| format!("{k}={} ", shell_quote(v)))
        .collect();
    if !env_words.is_empty() {
        env_words.insert_str(0, "env ");
    }
    let repro = resolved.out_dir.join("repro.sh");
    write_atomic(
        &repro,
        format!(
            "#!/bin/sh\n# qola: the compile that failed ({}).\ncd {} && {env_words}{}\n",
            source.display(),
            shell_quote(&cwd.to_string_lossy()),
            command
        )
        .as_bytes(),
    )?;
    Ok(CompileError::Compile {
        source_file: source.to_path_buf(),
        command: format!("(in {}) {command}", cwd.display()),
        status: code,
        stderr: stderr.trim().to_string(),
        repro,
    })
}
