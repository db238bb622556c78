//! `qola plan` in words: per module its counts, its library key, the jobs a build runs by kind,
//! and each decision with its reason; with `-v` also the compiler, each generator's command, and
//! each unit with how it compiles and its jobs (what each is, why, its command: the flags).

use std::collections::BTreeMap;
use std::fmt::Write;

use qola_build::aiter::prebuilt::LibraryKey;
use qola_build::{ModulePlan, PlannedJob};

/// The words for one module, each line ended.
pub(crate) fn module(module: &ModulePlan) -> String {
    let mut out = String::new();
    let Some(compile) = &module.compile else {
        let _ = writeln!(
            out,
            "qola plan: {}: {} generators, {} hsa code objects; no compile plan with this compiler (see the warnings)",
            module.md_name,
            module.generators.len(),
            module.hsa_blobs,
        );
        return out;
    };
    let units = &compile.units;
    let cached = units.iter().filter(|u| u.cached).count();
    let _ = writeln!(
        out,
        "qola plan: {}: {} generators, {} units ({cached} cached), {} hsa code objects, {} link steps",
        module.md_name,
        module.generators.len(),
        units.len(),
        module.hsa_blobs,
        compile.link.len()
    );
    let _ = match &module.library_key {
        LibraryKey::Key { key, inputs } => writeln!(
            out,
            "  library key {key}: AITER {}, {} patches, {} for {}, compiler {}, {}",
            inputs.aiter_commit,
            inputs.series.len(),
            inputs.mode,
            inputs.archs.join(";"),
            &inputs.compiler[..inputs.compiler.len().min(16)],
            inputs.interpreter.lines().next().unwrap_or("")
        ),
        LibraryKey::None { why } => writeln!(out, "  no library key: {why}"),
    };
    // The jobs a build runs, by kind (the timings report's names).
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let jobs = units
        .iter()
        .flat_map(|u| &u.jobs)
        .chain(&compile.shared_jobs);
    for job in jobs {
        let kind = match job.job.split(' ').next().unwrap_or_default() {
            "device" => "device passes",
            "empty" => "empty device passes",
            "bundle" => "bundles",
            "host" => "host passes",
            "precompiled" => "precompiled headers",
            _ => "one-call compiles",
        };
        *kinds.entry(kind).or_default() += 1;
    }
    if !kinds.is_empty() {
        let listed: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(out, "  jobs: {}", listed.join(", "));
    }
    if module.verbose {
        verbose(&mut out, module, compile);
    }
    // Each decision with its reason, counted.
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for unit in units {
        let reason = match unit.decision {
            "reuse" => "in qola's cache",
            _ => unit.reason.as_str(),
        };
        *counts.entry((unit.decision, reason)).or_default() += 1;
    }
    for ((decision, reason), n) in counts {
        let _ = writeln!(out, "  {n} {decision}: {reason}");
    }
    out
}

/// `-v`: the compiler and its flags, the generators, each unit and the link.
fn verbose(out: &mut String, module: &ModulePlan, compile: &qola_build::CompilePlan) {
    let toolchain = &compile.toolchain;
    let _ = writeln!(
        out,
        "  compiler {} ({}); {}",
        toolchain.path.display(),
        toolchain.version(),
        compile.jobs_reason
    );
    if !module.dropped_flags.is_empty() {
        let _ = writeln!(
            out,
            "  flags left out (not for hipcc): {}",
            module.dropped_flags.join(" ")
        );
    }
    for g in &module.generators {
        let _ = writeln!(
            out,
            "  generator ({}, {} files): {}",
            if g.ran { "ran" } else { "current" },
            g.files,
            g.command.replace("{}", &g.dir.display().to_string())
        );
    }
    for job in &compile.shared_jobs {
        let _ = writeln!(out, "  shared by several units:");
        self::job(out, job);
    }
    for unit in &compile.units {
        let _ = writeln!(
            out,
            "  {:10} {} ({})",
            unit.decision,
            unit.source.display(),
            unit.reason
        );
        if !unit.how.is_empty() {
            let _ = writeln!(out, "    how: {}", unit.how);
        }
        for job in &unit.jobs {
            self::job(out, job);
        }
    }
    for step in &compile.link {
        let _ = writeln!(out, "  link: {step}");
    }
}

/// One job in words: what it is, why, and its command.
fn job(out: &mut String, job: &PlannedJob) {
    let _ = match job.why.is_empty() {
        true => writeln!(out, "    {}", job.job),
        false => writeln!(out, "    {}: {}", job.job, job.why),
    };
    let _ = writeln!(out, "      {}", job.command.join(" "));
}
