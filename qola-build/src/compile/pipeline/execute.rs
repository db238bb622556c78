//! Acting on the plan: the steps of [`HipBuild::try_compile`] after `stage`, each taking what
//! the one before it gave.
//!
//! 1. [`run`]: the jobs, with the build log written as each unit ends and the launcher's and
//!    the farm's counters read around them.
//! 2. [`store`]: each compiled object installed under its key with the headers its depfiles
//!    listed, by name.
//! 3. [`link_library`], [`watch_inputs`], then [`finish_log`]: the library, the Cargo
//!    directives, the log and the summary; or, when a compile failed, [`failed_compile`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::build_script::Directives;
use crate::common::depfile;
use crate::common::io::io_error;
use crate::common::io::write_atomic;
use crate::common::text::shell_quote;
use crate::compile::HipBuild;
use crate::compile::cache::{Compiled, Measured, ObjectCache};
use crate::compile::launcher::{Answered, requests};
use crate::compile::pipeline::link;
use crate::compile::pipeline::plan::Unit;
use crate::compile::pipeline::stage::{Scratch, Staged};
use crate::compile::resolve::Resolved;
use crate::compile::run::{self as jobs, Echo, Parallelism, Progress};
use crate::compile::{CompileError, Result};
use crate::compile::{CompileReport, UnitReport};

/// What running the jobs gave.
pub(crate) struct Ran {
    /// One per job.
    pub outcomes: Vec<jobs::Outcome>,
    /// What the launcher answered (its cache, the farm), when it reports it.
    pub answered: Answered,
    /// The build log, open while the build goes on (none when nothing ran).
    pub progress: Option<Progress>,
}

impl Ran {
    /// What the first failed compile said, if one failed.
    pub(super) fn failure_text(&self) -> Option<&str> {
        self.outcomes
            .iter()
            .find_map(|o| o.failure.as_ref().map(|(_, said)| said.as_str()))
    }
}

/// Whether the build will link its library: something compiles, or the library is not up to
/// date with the objects of `units` (all reused).
pub(super) fn will_link(
    build: &HipBuild,
    resolved: &Resolved,
    name: &str,
    reusable: &[Option<&str>],
) -> Result<bool> {
    if build.objects_only {
        // The caller links: every object must be there when the build ends.
        return Ok(true);
    }
    let mut keys = Vec::new();
    for key in reusable {
        match key {
            Some(key) => keys.push(key.to_string()),
            None => return Ok(true),
        }
    }
    Ok(!library_stamp(build, resolved, name, &keys)?.holds())
}

/// Runs the jobs of `staged` (in the roots' links directory, made here), `parallelism.jobs` at
/// once, each unit ending in the log `log` of `log_units` when its last job ends (or one fails);
/// nothing at all when there are none.
pub(super) fn run(
    resolved: &Resolved,
    staged: &mut Staged,
    parallelism: &Parallelism,
    log: &Path,
    log_units: Vec<(PathBuf, String)>,
    echo: Echo,
) -> Result<Ran> {
    let jobs = std::mem::take(&mut staged.jobs);
    if jobs.is_empty() {
        return Ok(Ran {
            outcomes: Vec::new(),
            answered: Answered::default(),
            progress: None,
        });
    }
    resolved.roots.link()?;
    let before = resolved.launcher.counters();
    let progress = Progress::start(
        log,
        &parallelism.reason,
        log_units,
        staged.scratch.len(),
        parallelism.jobs,
        echo,
    )?;
    // A unit's time is from its first job's start to its last one's end; its peak, its
    // largest job's.
    let units = std::sync::Mutex::new(BTreeMap::<usize, (Instant, Option<u64>, Duration)>::new());
    let ends_unit = &staged.ends_unit;
    let outcomes = jobs::run_all(
        jobs,
        parallelism.jobs,
        jobs::Mode {
            local: !resolved.launcher.distributes(),
            keep_going: false,
        },
        &|j| {
            if j.step.is_none() {
                progress.started(&j.argv)
            }
        },
        &|o| {
            if o.unit == usize::MAX {
                return;
            }
            let mut units = units.lock().expect("unit times");
            let (first, peak, cpu) =
                units
                    .entry(o.unit)
                    .or_insert((o.started, None, Duration::ZERO));
            *first = (*first).min(o.started);
            *peak = (*peak).max(o.peak_memory);
            *cpu += o.cpu;
            if ends_unit[o.job] || o.failure.is_some() {
                let elapsed = (o.started + o.elapsed).duration_since(*first);
                progress.ended(o.unit, o.failure.is_some(), elapsed, *peak, *cpu);
            }
        },
    );
    Ok(Ran {
        outcomes,
        answered: resolved
            .launcher
            .answered_since(before, staged.remote_log.as_deref()),
        progress: Some(progress),
    })
}

/// Removes every compiled unit's scratch files (after a failed compile).
pub(super) fn remove_scratch(scratch: &[Scratch]) {
    for s in scratch {
        for file in std::iter::once(&s.object)
            .chain(&s.depfiles)
            .chain(&s.other)
        {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Installs each compiled object of `library` in the cache under its key, with the headers its
/// depfiles listed, and completes its report.
pub(super) fn store(
    objects: &mut ObjectCache,
    library: &str,
    units: &[Unit],
    staged: &mut Staged,
    ran: &Ran,
    resolved: &Resolved,
) -> Result<()> {
    // A launcher's cache answer is not a compile: its peak says nothing about the unit's.
    let record_peaks = resolved.launcher.peaks_count(&ran.answered);
    let origin = crate::compile::cache::Origin {
        out_dir: resolved.out_dir.display().to_string(),
        compiler: resolved.toolchain.version(),
    };
    let scratch_dir = objects.compile_tmpdir()?;
    let scratch_dir = scratch_dir.parent().unwrap_or(&scratch_dir).to_path_buf();
    for scratch in &staged.scratch {
        let parts: Vec<&jobs::Outcome> = ran
            .outcomes
            .iter()
            .filter(|o| scratch.jobs.contains(&o.job))
            .collect();
        let first = parts
            .iter()
            .map(|o| o.started)
            .min()
            .expect("a unit's jobs ran");
        let last = parts
            .iter()
            .map(|o| o.started + o.elapsed)
            .max()
            .expect("a unit's jobs ran");
        let peak = parts.iter().filter_map(|o| o.peak_memory).max();
        let cpu = parts.iter().map(|o| o.cpu).sum();
        let unit = &units[scratch.unit];
        let mut headers = Vec::new();
        for depfile in &scratch.depfiles {
            for header in depfile_headers(resolved, unit, depfile, &scratch_dir)? {
                if !headers.contains(&header) {
                    headers.push(header);
                }
            }
        }
        for file in &scratch.other {
            let _ = std::fs::remove_file(file);
        }
        resolved.launcher.finish_object(&scratch.object)?;
        let elapsed = last.duration_since(first);
        let compiled = Compiled {
            library,
            source: &unit.name,
            settings: &unit.settings,
            headers: &headers,
            object: &scratch.object,
            measured: Measured {
                peak: peak.filter(|_| record_peaks),
                seconds: elapsed.as_secs_f64(),
            },
        };
        let key = objects.install(&compiled, &resolved.roots, &origin)?;
        let report = &mut staged.reports[scratch.unit];
        report.object = objects.object_path(&key);
        report.headers = headers
            .iter()
            .filter_map(|h| resolved.roots.resolve(h))
            .collect();
        report.elapsed = elapsed;
        report.peak_memory = peak;
        report.cpu = cpu;
    }
    Ok(())
}

/// The headers `depfile` (of `unit`) lists, by name (read and removed). The compiler names
/// what it read as it was given (names) or found (absolute system headers); a header this
/// machine does not have belongs to a sandboxed toolchain (its root is not this machine's): the
/// compiler identity stands for it. The build's own scratch files (a precompiled header's
/// header, the farm's short names) are not inputs.
fn depfile_headers(
    resolved: &Resolved,
    unit: &Unit,
    depfile: &Path,
    scratch: &Path,
) -> Result<Vec<String>> {
    let deps = std::fs::read_to_string(depfile).map_err(io_error("read the depfile", depfile))?;
    let _ = std::fs::remove_file(depfile);
    let mut headers: Vec<String> = Vec::new();
    for written in depfile::prerequisites(&deps) {
        if resolved.launcher.is_alias(&written) {
            continue;
        }
        let header = resolved.roots.rename(&written);
        let Some(path) = resolved.roots.resolve(&header) else {
            continue;
        };
        if header != unit.name
            && path.exists()
            && !path.starts_with(scratch)
            && !headers.contains(&header)
        {
            headers.push(header);
        }
    }
    Ok(headers)
}

/// Tells Cargo to watch every source and header of `reports` outside `out_dir`: inputs only,
/// since sources and headers this build script generated (under `OUT_DIR`) are outputs, and
/// watching them would rerun the script after every build.
pub(super) fn watch_inputs(directives: &Directives, reports: &[UnitReport], out_dir: &Path) {
    for unit in reports {
        for path in std::iter::once(&unit.source).chain(&unit.headers) {
            if !path.starts_with(out_dir) {
                directives.rerun_if_changed(path);
            }
        }
    }
}

/// Links `reports`' objects into `build`'s library `name` (static, or the shared one asked for)
/// and tells Cargo what to link with it.
pub(super) fn link_library(
    build: &HipBuild,
    resolved: &Resolved,
    name: &str,
    reports: &[UnitReport],
) -> Result<link::Linked> {
    let object_paths: Vec<PathBuf> = reports.iter().map(|u| u.object.clone()).collect();
    let keys: Vec<String> = object_paths
        .iter()
        .map(|p| {
            p.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let stamp = library_stamp(build, resolved, name, &keys)?;
    let linked = match &build.shared {
        Some(path) => link::link_shared(
            &resolved.toolchain,
            build.shared_link(path),
            &object_paths,
            &stamp,
        )?,
        None => link::link(
            name,
            &object_paths,
            &build.exported,
            &resolved.out_dir,
            &resolved.target,
            build.cargo_metadata,
            &stamp,
        )?,
    };
    if build.cargo_metadata {
        if let Some(dir) = &resolved.toolchain.lib_dir {
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
        println!("cargo:rustc-link-lib=dylib=amdhip64");
        // HIP is C++: its runtime (static guards, exceptions, the standard library) as cc-rs
        // links it for C++ on Linux.
        println!("cargo:rustc-link-lib=dylib=stdc++");
    }
    Ok(linked)
}

/// The record of what `build`'s library `name` was linked from, for the objects of `keys`.
fn library_stamp(
    build: &HipBuild,
    resolved: &Resolved,
    name: &str,
    keys: &[String],
) -> Result<link::LinkRecord> {
    match &build.shared {
        Some(path) => link::shared_link_record(
            &resolved.toolchain,
            build.shared_link(path),
            keys,
            &resolved.out_dir,
        ),
        None => Ok(link::static_link_record(
            name,
            keys,
            &build.exported,
            &resolved.out_dir,
        )),
    }
}

/// Ends the build's log with the summary and says the summary when something compiled and
/// `says_summary` (on standard error when `to_terminal`, else as a warning). A build that
/// compiled nothing and relinked nothing writes no log; one that relinked the library from the
/// cache writes its own (the previous log spoke of another build).
pub(super) fn finish_log(
    directives: &Directives,
    progress: Option<Progress>,
    report: &CompileReport,
    log_units: Vec<(PathBuf, String)>,
    (to_terminal, says_summary): (bool, bool),
    timings: Option<(PathBuf, Duration)>,
) -> Result<()> {
    let progress = match progress {
        Some(progress) => progress,
        None if report.library_written => Progress::start(
            &report.log,
            &report.jobs_reason,
            log_units,
            0,
            report.jobs,
            Echo::Off,
        )?,
        None => return Ok(()),
    };
    let summary = report.summary();
    let reused: Vec<usize> = (0..report.units.len())
        .filter(|i| !report.units[*i].compiled)
        .collect();
    let timings = timings.map(|(path, took)| {
        format!(
            "timings: {}, written in {:.1} ms",
            crate::compile::timings::where_written(&path),
            took.as_secs_f64() * 1e3
        )
    });
    progress.finish(&reused, &summary, timings.as_deref())?;
    let remote = report
        .launcher_hits
        .filter(|h| h.remote_errors > 0)
        .map(|h| match h.remote_failures {
            Some(failures) if failures != Default::default() => failures.words(h.launcher),
            _ => vec![format!(
                "{}'s remote storage failed {} of this build (refused, or not answered: with a log_file of your own, qola cannot tell which; it is in that log): those compiles ran here; check the server and the URL ({}'s remote_storage)",
                h.launcher,
                requests(h.remote_errors),
                h.launcher
            )],
        })
        .unwrap_or_default();
    if report.compiled() > 0 {
        let said = |line: &str| match to_terminal {
            true => eprintln!("qola: {line}"),
            false => directives.info(line),
        };
        if says_summary {
            said(&summary);
            if let Some(line) = &timings {
                said(line);
            }
        }
        for line in &remote {
            directives.warning(line);
        }
    }
    Ok(())
}

/// The error of the compile job that `failed`, with its exact command; writes `repro.sh` (the
/// unit's one hipcc call, or the failed command when it is no unit's) next to the log.
pub(super) fn failed_compile(
    resolved: &Resolved,
    staged: &Staged,
    failed: &jobs::Outcome,
) -> Result<CompileError> {
    let (code, stderr) = failed.failure.clone().expect("a failure");
    let (code, stderr) = resolved.launcher.failure(code, &stderr);
    let failed_command = &staged.commands[failed.job];
    let (source, repro_argv) = match staged.scratch.iter().find(|s| s.unit == failed.unit) {
        Some(scratch) => (staged.reports[failed.unit].source.clone(), &scratch.argv),
        None => {
            let header = staged
                .pchs
                .iter()
                .find(|(_, job)| *job == failed.job)
                .map(|(pch, _)| pch.header.clone())
                .unwrap_or_default();
            (header, failed_command)
        }
    };
    let words = |argv: &[String]| {
        argv.iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let cwd = resolved.roots.dir();
    let mut env_words: String = resolved
        .launcher
        .env()
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
            words(repro_argv)
        )
        .as_bytes(),
    )?;
    Ok(CompileError::Compile {
        source_file: source,
        command: format!("(in {}) {}", cwd.display(), words(failed_command)),
        status: code,
        stderr: stderr.trim().to_string(),
        repro,
    })
}
