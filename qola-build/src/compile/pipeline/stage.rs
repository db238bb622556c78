//! Staging a build: a report for every unit (a reused unit's object and headers from the cache)
//! and the jobs of every unit the plan compiles: one hipcc call, or its passes (see `passes`),
//! all writing to the build's scratch. Jobs of the units that took longest last time come first.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::compile::Result;
use crate::compile::UnitReport;
use crate::compile::cache::ObjectCache;
use crate::compile::passes::{self, Layout, Pch, Prepared, Split};
use crate::compile::pipeline::plan::{Unit, UnitPlan};
use crate::compile::resolve::Resolved;
use crate::compile::run::Job;

/// The scratch files of one compiled unit and the commands that write them.
pub(super) struct Scratch {
    /// Index of the unit.
    pub unit: usize,
    /// The object its last job writes.
    pub object: PathBuf,
    /// The depfiles its jobs write (merged into its headers).
    pub depfiles: Vec<PathBuf>,
    /// Its other scratch files (code objects, the fat binary).
    pub other: Vec<PathBuf>,
    /// The one hipcc call that compiles it (what `repro.sh` runs).
    pub argv: Vec<String>,
    /// Its jobs (indices into [`Staged::jobs`]).
    pub jobs: Vec<usize>,
}

/// The build before any compile ran.
pub(super) struct Staged {
    /// One per unit; the compiled ones are completed by `execute::store`.
    pub reports: Vec<UnitReport>,
    /// Every job: precompiled headers first, then each compiled unit's.
    pub jobs: Vec<Job>,
    /// Each job's command, for messages.
    pub commands: Vec<Vec<String>>,
    /// Whether a job ends its unit (its last one).
    pub ends_unit: Vec<bool>,
    /// The jobs each job waits for.
    pub after: Vec<Vec<usize>>,
    /// What each job is, in words (`one call`, `device gfx942`, `bundle`, `host`,
    /// `precompiled header`): the timings report's labels.
    pub labels: Vec<String>,
    /// One per compiled unit.
    pub scratch: Vec<Scratch>,
    /// The precompiled headers and their jobs.
    pub pchs: Vec<(Pch, usize)>,
    /// The launcher's log of its remote storage's failures, when it keeps one.
    pub remote_log: Option<PathBuf>,
}

/// A report for every unit and the jobs of every unit the plan compiles, split as `prepared`
/// says (with the bundle `layout`).
pub(super) fn stage(
    units: &[Unit],
    resolved: &Resolved,
    objects: &ObjectCache,
    prepared: &Prepared,
    layout: Option<&Layout>,
) -> Result<Staged> {
    let mut env = resolved.launcher.env().to_vec();
    let mut remote_log = None;
    // The compiler's own environment (a module's clang: HIP_CLANG_PATH).
    env.extend(resolved.toolchain.env.iter().cloned());
    if units.iter().any(|u| u.plan.compiles()) {
        // Compilers' temporary files go to the build's scratch, removed when it ends; not on a
        // farm, whose servers get the compile's environment but have no such directory.
        let tmpdir = objects.compile_tmpdir()?;
        if !resolved.launcher.distributes() {
            env.push(("TMPDIR".to_string(), tmpdir.display().to_string()));
        }
        // Why requests to the launcher's remote storage failed, to say so.
        if let Some(var) = resolved.launcher.remote_log_var() {
            let log = tmpdir.join("launcher-remote.log");
            env.push((var.to_string(), log.display().to_string()));
            remote_log = Some(log);
        }
        // Where the launcher answered each compile from, for the timings report.
        if let (true, Some(var)) = (resolved.timings, resolved.launcher.unit_log_var()) {
            env.push((var.to_string(), launcher_log(&tmpdir).display().to_string()));
        }
    }
    let mut staged = Staged {
        reports: Vec::new(),
        jobs: Vec::new(),
        commands: Vec::new(),
        ends_unit: Vec::new(),
        after: Vec::new(),
        labels: Vec::new(),
        scratch: Vec::new(),
        pchs: Vec::new(),
        remote_log,
    };
    for pch in &prepared.pchs {
        let job = staged.push(
            Job::command(
                usize::MAX,
                pch_command(resolved, pch),
                resolved.roots.dir(),
                &env,
            ),
            false,
            "precompiled header",
        );
        staged.pchs.push((pch.clone(), job));
    }
    let mut order: Vec<usize> = (0..units.len()).collect();
    // The longest units first (their last compile's time; unknown ones after, in order).
    order.sort_by(|a, b| {
        let took = |i: usize| objects.seconds(&units[i].id).unwrap_or(0.0);
        took(*b).total_cmp(&took(*a))
    });
    let mut reports: Vec<Option<UnitReport>> = (0..units.len()).map(|_| None).collect();
    for index in order {
        let unit = &units[index];
        let mut report = UnitReport {
            object: PathBuf::new(),
            source: unit.source.clone(),
            compiled: false,
            reason: String::new(),
            elapsed: Duration::ZERO,
            headers: Vec::new(),
            peak_memory: None,
            cpu: Duration::ZERO,
            passes: String::new(),
        };
        match &unit.plan {
            UnitPlan::Reuse { key, compiled_for } => {
                report.object = match &unit.object {
                    Some(checked) => checked.clone(),
                    None => objects.object_path(key),
                };
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
                let split = prepared.splits.get(&index).zip(layout);
                report.passes = describe(split.map(|(s, _)| s));
                let scratch = stage_unit(&mut staged, index, unit, resolved, objects, &env, split)?;
                staged.scratch.push(scratch);
            }
        }
        reports[index] = Some(report);
    }
    staged.reports = reports
        .into_iter()
        .map(|r| r.expect("a report per unit"))
        .collect();
    Ok(staged)
}

impl Staged {
    /// Adds `job` (ending its unit, or not; what it is: `label`); returns its index.
    fn push(&mut self, job: Job, ends_unit: bool, label: &str) -> usize {
        self.commands.push(job.argv.clone());
        self.ends_unit.push(ends_unit);
        self.labels.push(label.to_string());
        self.after.push(job.after.clone());
        self.jobs.push(job);
        self.jobs.len() - 1
    }
}

/// The jobs of the unit `index`: one call, or (with `split` and its bundle layout) its passes.
fn stage_unit(
    staged: &mut Staged,
    index: usize,
    unit: &Unit,
    resolved: &Resolved,
    objects: &ObjectCache,
    env: &[(String, String)],
    split: Option<(&Split, &Layout)>,
) -> Result<Scratch> {
    let object = objects.scratch(&unit.id, "o")?;
    let depfile = objects.scratch(&unit.id, "d")?;
    let cuid = passes::cuid(&unit.id);
    let single = resolved.compile_command(&unit.extra, &unit.source, &object, &depfile, &cuid);
    let cwd = resolved.roots.dir();
    let Some((split, layout)) = split else {
        let job = staged.push(
            Job::command(index, single.clone(), cwd, env),
            true,
            "one call",
        );
        return Ok(Scratch {
            unit: index,
            object,
            depfiles: vec![depfile],
            other: Vec::new(),
            argv: single,
            jobs: vec![job],
        });
    };
    let name = |path: &Path| resolved.roots.name(path);
    let source = name(&unit.source);
    let command = resolved.command();
    let mut scratch = Scratch {
        unit: index,
        object: object.clone(),
        depfiles: Vec::new(),
        other: Vec::new(),
        argv: single,
        jobs: Vec::new(),
    };
    let mut code_objects = Vec::new();
    let empty = passes::empty_unit(&resolved.out_dir);
    let device_only = ["--cuda-device-only", "--no-gpu-bundle-output"].map(String::from);
    for (arch, live) in split
        .live
        .iter()
        .map(|a| (a, true))
        .chain(split.dead.iter().map(|a| (a, false)))
    {
        let code_object = objects.scratch(&unit.id, &format!("{arch}.co"))?;
        // No depfile: clang 21 writes none for a device pass, and the one call's depfile is its
        // host pass's anyway (below).
        let mut argv = passes::device_args(&command, arch);
        argv.extend(device_only.iter().cloned());
        argv.push(cuid.clone());
        argv.extend(["-o".to_string(), name(&code_object)]);
        argv.extend([
            "-c".to_string(),
            if live { source.clone() } else { name(&empty) },
        ]);
        let label = match live {
            true => format!("device {arch}"),
            false => format!("empty device {arch}"),
        };
        let job = staged.push(Job::command(index, argv, cwd, env), false, &label);
        scratch.jobs.push(job);
        code_objects.push((arch.clone(), code_object.clone()));
        scratch.other.push(code_object);
    }
    let fat_binary = objects.scratch(&unit.id, "hipfb")?;
    scratch.other.push(fat_binary.clone());
    let bundle = {
        let (layout, inputs, output) = (layout.clone(), code_objects.clone(), fat_binary.clone());
        let mut job = Job::command(
            index,
            vec!["(bundle)".to_string(), name(&fat_binary)],
            cwd,
            env,
        );
        job.after = scratch.jobs.clone();
        job.step = Some(Box::new(move || {
            let inputs: Vec<(String, &Path)> = inputs
                .iter()
                .map(|(a, p)| (a.clone(), p.as_path()))
                .collect();
            layout.write(&inputs, &output)
        }));
        staged.push(job, false, "bundle")
    };
    scratch.jobs.push(bundle);
    let mut argv = command.clone();
    argv.extend([cuid, "--cuda-host-only".to_string()]);
    argv.extend(["-Xclang", "-fcuda-include-gpubinary", "-Xclang"].map(String::from));
    argv.push(name(&fat_binary));
    let mut after = vec![bundle];
    if let Some(pch) = split.pch {
        let (pch, job) = &staged.pchs[pch];
        after.push(*job);
        argv.extend(["-Xclang", "-include-pch", "-Xclang"].map(String::from));
        argv.push(name(&pch.pch));
        // The precompiled header names its headers by absolute path: `__FILE__` as the plain
        // compile spells it.
        argv.push(format!("-fmacro-prefix-map={}/=", cwd.display()));
    }
    argv.extend(["-MD".to_string(), "-MF".to_string(), name(&depfile)]);
    argv.extend(["-o".to_string(), name(&object)]);
    argv.extend(["-c".to_string(), source]);
    scratch.depfiles.push(depfile);
    let mut host = Job::command(index, argv, cwd, env);
    host.after = after;
    let host = staged.push(host, true, "host");
    scratch.jobs.push(host);
    Ok(scratch)
}

/// The log of where the launcher answered each compile from, in the build's scratch `tmpdir`.
pub(super) fn launcher_log(tmpdir: &Path) -> PathBuf {
    tmpdir.join("launcher-answers.log")
}

/// The command that precompiles `pch`'s header for host passes.
fn pch_command(resolved: &Resolved, pch: &Pch) -> Vec<String> {
    let name = |path: &Path| resolved.roots.name(path);
    let mut argv = resolved.command();
    argv.extend(["-cuid=0", "--cuda-host-only", "-iquote"].map(String::from));
    argv.push(name(&pch.dir));
    argv.extend(["-Xclang", "-emit-pch", "-Xclang", "-fno-pch-timestamp"].map(String::from));
    argv.extend(["-o".to_string(), name(&pch.pch)]);
    argv.extend(["-c".to_string(), name(&pch.header)]);
    argv
}

/// Why a job of `label` is as it is (see [`Staged::labels`]), in words for a plan.
pub(super) fn why(label: &str) -> String {
    let why = match label.split(' ').next().unwrap_or_default() {
        "empty" => {
            "the unit's guard leaves nothing for this architecture, so this pass compiles the empty unit instead (proved to stand for it)"
        }
        "device" => "the unit's code for this architecture",
        "bundle" => "qola writes the fat binary of the device code objects in the driver's layout",
        "host" => "the host code, with the fat binary embedded; its depfile is the unit's",
        "precompiled" => "the include prefix the units share, compiled once for their host passes",
        _ => "",
    };
    why.to_string()
}

/// How a unit compiles, in words (see [`UnitReport::passes`]).
fn describe(split: Option<&Split>) -> String {
    let Some(split) = split else {
        return "one call".to_string();
    };
    let mut parts: Vec<String> = split.live.iter().map(|a| format!("device {a}")).collect();
    parts.extend(split.dead.iter().map(|a| format!("empty device {a}")));
    parts.push(match split.pch {
        Some(_) => "host with a shared precompiled header".to_string(),
        None => "host".to_string(),
    });
    parts.join(", ")
}
