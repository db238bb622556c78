//! Planning and running a build: [`HipBuild::try_plan`] and [`HipBuild::try_compile`].
//!
//! Both look each unit up once in the object cache ([`ObjectCache::facts`]) and ask the pure
//! [`plan::decide`] what to do with it; `try_plan` says so, `try_compile` does it: compiles the
//! units the plan compiles (in the links' directory of the roots, every path by its name),
//! stores their objects, links the library, and writes the log, the Cargo directives and the
//! cache's statistics.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build_script::{Directives, Env};
use crate::common::io::write_atomic;
use crate::common::text::shell_quote;
use crate::common::time::{unix_now, utc_timestamp};
use crate::compile::error::{CompileError, Result, io_error};
use crate::compile::object_cache::{BuildStats, LastCompile, ObjectCache, UnitFacts, unit_id};
use crate::compile::plan::{self, UnitPlan};
use crate::compile::report::{CompilePlan, CompileReport, PlannedUnit, UnitReport};
use crate::compile::resolve::{Resolved, full_path};
use crate::compile::{HipBuild, depfile, farm, jobs, launcher, link, memory, progress};

/// One unit as the build sees it: where its source is, its name and id, and the plan for it.
struct Unit {
    source: PathBuf,
    name: String,
    id: String,
    facts: UnitFacts,
    plan: UnitPlan,
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

    /// Compiles what changed and links `lib<name>.a` (see the module docs).
    pub fn try_compile(&self, name: &str) -> Result<CompileReport> {
        let start = Instant::now();
        let directives = Directives::new(self.cargo_metadata);
        let env = Env::new(&directives);
        let mut resolved = self.resolve(&env)?;
        let out_dir = resolved.out_dir.clone();
        let mut objects = ObjectCache::open(resolved.cache.join(crate::cache::OBJECTS));
        let units = self.units(&mut resolved, &env, name, &mut objects)?;
        if units
            .iter()
            .any(|u| matches!(u.plan, UnitPlan::Compile { .. }))
        {
            resolved.start_sccache_server();
        }
        let mut reports = Vec::new();
        let mut jobs_to_run = Vec::new();
        let mut scratch = Vec::new();
        for (index, unit) in units.iter().enumerate() {
            let mut report = UnitReport {
                object: PathBuf::new(),
                source: unit.source.clone(),
                compiled: false,
                reason: String::new(),
                elapsed: Duration::ZERO,
                headers: Vec::new(),
                peak_memory: None,
            };
            match &unit.plan {
                UnitPlan::Reuse { key, compiled_for } => {
                    objects.hold(key);
                    report.object = objects.object_path(key);
                    report.reason = format!("compiled for {compiled_for}");
                    let recorded = unit.facts.recorded.as_ref().map(|r| &r.headers[..]);
                    report.headers = recorded
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|h| resolved.roots.resolve(h))
                        .collect();
                }
                UnitPlan::Compile { reason, .. } => {
                    report.compiled = true;
                    report.reason = reason.to_string();
                    let object = objects.scratch(&unit.id, "o")?;
                    let depfile = objects.scratch(&unit.id, "d")?;
                    jobs_to_run.push(jobs::Job {
                        unit: index,
                        argv: resolved.compile_command(&unit.source, &object, &depfile),
                        cwd: resolved.roots.dir().to_path_buf(),
                        env: resolved.launcher_env.clone(),
                    });
                    scratch.push((index, object, depfile));
                }
            }
            reports.push(report);
        }
        if !jobs_to_run.is_empty() {
            resolved.roots.link()?;
        }
        let argv_of: Vec<(usize, Vec<String>)> = jobs_to_run
            .iter()
            .map(|j| (j.unit, j.argv.clone()))
            .collect();
        let to_compile: Vec<&str> = scratch
            .iter()
            .map(|(i, ..)| units[*i].id.as_str())
            .collect();
        let parallelism = self.parallelism(&resolved, &objects, &to_compile);
        let counters_before = (!jobs_to_run.is_empty())
            .then(|| launcher::Counters::read(&resolved.launcher))
            .flatten();
        let farm_before = match (&resolved.farm_command, jobs_to_run.is_empty()) {
            (Some(f), false) => farm::DistStats::read(&f.server),
            _ => None,
        };
        let log = out_dir.join(format!("qola-compile-{name}.log"));
        let echo = progress::Echo::choose(self.cargo_metadata, self.terminal);
        let log_units: Vec<(PathBuf, String)> = reports
            .iter()
            .map(|u| (u.source.clone(), u.reason.clone()))
            .collect();
        // A build that compiles nothing writes no log (unless it relinks the library).
        let progress = if jobs_to_run.is_empty() {
            None
        } else {
            Some(progress::Progress::start(
                &log,
                &parallelism.reason,
                log_units.clone(),
                jobs_to_run.len(),
                parallelism.jobs,
                echo,
            )?)
        };
        let outcomes = match &progress {
            Some(p) => jobs::run_all(
                jobs_to_run,
                parallelism.jobs,
                resolved.farm_command.is_none(),
                &|j| p.started(j),
                &|o| p.ended(o),
            ),
            None => Vec::new(),
        };
        let launcher_hits = counters_before.and_then(|before| {
            launcher::Counters::read(&resolved.launcher).map(|after| before.since(&after))
        });
        let farm_report = match (&resolved.farm_command, farm_before) {
            (Some(f), Some(before)) => {
                farm::DistStats::read(&f.server).map(|after| before.since(&after))
            }
            _ => None,
        };
        let farm_down = match &resolved.farm {
            farm::Farm::Down { why } => Some(why.clone()),
            _ => None,
        };
        // A launcher's cache answer is not a compile: its peak says nothing about the unit's.
        let record_peaks =
            resolved.launcher.is_empty() || launcher_hits.is_some_and(|h| h.hits == 0);
        if let Some(failed) = outcomes.iter().find(|o| o.failure.is_some()) {
            for (_, object, depfile) in &scratch {
                let _ = std::fs::remove_file(object);
                let _ = std::fs::remove_file(depfile);
            }
            let (code, stderr) = failed.failure.clone().expect("a failure");
            let (code, stderr) = match &resolved.farm_command {
                Some(_) => farm::compiler_status(code, &stderr),
                None => (code, stderr),
            };
            let argv = &argv_of
                .iter()
                .find(|(u, _)| *u == failed.unit)
                .expect("the failed job's command")
                .1;
            return Err(failed_compile(
                &resolved,
                &out_dir,
                &reports[failed.unit].source,
                argv,
                code,
                stderr,
            )?);
        }
        let last = LastCompile {
            identity: resolved.toolchain.identity.clone(),
            args: resolved.args.clone(),
        };
        let compiled_for = out_dir.display().to_string();
        for outcome in &outcomes {
            let (_, object, depfile) = scratch
                .iter()
                .find(|(u, ..)| *u == outcome.unit)
                .expect("a scratch entry per job");
            let unit = &units[outcome.unit];
            let deps =
                std::fs::read_to_string(depfile).map_err(io_error("read the depfile", depfile))?;
            let _ = std::fs::remove_file(depfile);
            // The compiler names what it read as it was given (names) or found (absolute
            // system headers); a header this machine does not have belongs to a sandboxed
            // toolchain (its root is not this machine's): the compiler identity stands for it.
            let mut headers: Vec<String> = Vec::new();
            for written in depfile::prerequisites(&deps) {
                if farm::is_short_name(&written) {
                    continue;
                }
                let header = resolved.roots.rename(&written);
                let exists = resolved.roots.resolve(&header).is_some_and(|p| p.exists());
                if header != unit.name && exists && !headers.contains(&header) {
                    headers.push(header);
                }
            }
            if resolved.farm_command.is_some() {
                farm::localize_empty_cuid(object)?;
            }
            let peak = outcome.peak_memory.filter(|_| record_peaks);
            let key = objects.install(
                &unit.id,
                name,
                &unit.name,
                &headers,
                &resolved.roots,
                object,
                peak,
                &last,
                &compiled_for,
            )?;
            let report = &mut reports[outcome.unit];
            report.object = objects.object_path(&key);
            report.headers = headers
                .iter()
                .filter_map(|h| resolved.roots.resolve(h))
                .collect();
            report.elapsed = outcome.elapsed;
            report.peak_memory = outcome.peak_memory;
        }

        let object_paths: Vec<PathBuf> = reports.iter().map(|u| u.object.clone()).collect();
        let keys: Vec<String> = object_paths
            .iter()
            .map(|p| {
                p.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let linked = match &self.shared {
            Some(path) => link::link_shared(
                &resolved.toolchain,
                path,
                &object_paths,
                &keys,
                self.version_script.as_deref(),
                &out_dir,
            )?,
            None => link::link(
                name,
                &object_paths,
                &keys,
                &self.exported,
                &out_dir,
                &resolved.target,
                self.cargo_metadata,
            )?,
        };
        if self.cargo_metadata {
            if let Some(dir) = &resolved.toolchain.lib_dir {
                println!("cargo:rustc-link-search=native={}", dir.display());
            }
            println!("cargo:rustc-link-lib=dylib=amdhip64");
        }
        // Inputs only: sources and headers this build script generated (under OUT_DIR) are
        // outputs, and watching them would rerun the script after every build.
        for unit in &reports {
            for path in std::iter::once(&unit.source).chain(&unit.headers) {
                if !path.starts_with(&out_dir) {
                    directives.rerun_if_changed(path);
                }
            }
        }
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
            out_dir: compiled_for.clone(),
            hits: reports.len() - compiled,
            misses: compiled,
        });
        let report = CompileReport {
            units: reports,
            library: linked.library,
            library_written: linked.written,
            archs: resolved.archs.clone(),
            toolchain: resolved.toolchain.clone(),
            log: log.clone(),
            elapsed: start.elapsed(),
            jobs: parallelism.jobs,
            jobs_reason: parallelism.reason.clone(),
            launcher_hits,
            farm: farm_report,
            farm_down,
            evicted,
        };
        let progress = match progress {
            Some(progress) => Some(progress),
            // A library relinked from the cache gets its own log too: the previous one spoke
            // of another build.
            None if linked.written => Some(progress::Progress::start(
                &log,
                &parallelism.reason,
                log_units,
                0,
                parallelism.jobs,
                progress::Echo::Off,
            )?),
            None => None,
        };
        if let Some(progress) = progress {
            let summary = report.summary();
            let reused: Vec<usize> = (0..report.units.len())
                .filter(|i| !report.units[*i].compiled)
                .collect();
            progress.finish(&reused, &summary)?;
            if report.compiled() > 0 {
                if !self.cargo_metadata && self.terminal.is_some() {
                    eprintln!("qola: {summary}");
                } else {
                    directives.warning(&summary);
                }
            }
        }
        Ok(report)
    }
}

/// The error of a compile that failed, with its exact command; writes `repro.sh` next to the log.
fn failed_compile(
    resolved: &Resolved,
    out_dir: &Path,
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
    let repro = out_dir.join("repro.sh");
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
