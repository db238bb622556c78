//! `qola`: prepare AITER and build its modules from the command line (for CMake builds, for
//! QoLA's users, and for people).
//!
//! Exit status: 0 on success, 2 when local edits made qola refuse, 1 on any error (a usage
//! error included). With `--json`, standard output is exactly one JSON object; messages go to
//! standard error.

mod args;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use qola_build::{Action, Error, Preparation};

use args::{BuildCmd, CacheCmd, CheckoutCmd, Cli, Command, DiffCmd, PrepareCmd};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            // Help and the version are answers; anything else a usage error, status 1 (2 means
            // a refusal).
            return ExitCode::from(if usage { 1 } else { 0 });
        }
    };
    let Some(command) = cli.command else {
        let _ = <Cli as clap::CommandFactory>::command().print_help();
        return ExitCode::SUCCESS;
    };
    match command {
        Command::Prepare(c) => prepare("prepare", &c, c.options().try_prepare()),
        Command::Checkout(c) => checkout(&c),
        Command::Status(c) => prepare("status", &c, c.options().try_status()),
        Command::Diff(c) => diff(&c),
        Command::Build(c) => build(&c),
        Command::Plan(c) => plan(&c),
        Command::Cache(c) => cache(&c),
    }
}

fn print_json(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = writeln!(out);
}

fn fail(verb: &str, json: bool, e: &Error) -> ExitCode {
    if json {
        print_json(&serde_json::json!({ "action": "error", "error": e.to_string() }));
    }
    eprintln!("qola {verb}: error: {e}");
    ExitCode::from(1)
}

/// `prepare`, `status` and `checkout`: the report (or the refusal) and the exit status.
fn prepare(
    verb: &str,
    c: &PrepareCmd,
    result: Result<Preparation, qola_build::PrepareError>,
) -> ExitCode {
    let prepared = match result {
        Ok(prepared) => prepared,
        Err(e) => {
            let e = Error::from(e);
            let Some(refused) = e.refused() else {
                return fail(verb, c.json, &e);
            };
            if c.json {
                print_json(&serde_json::to_value(refused).expect("a report always serializes"));
            }
            eprintln!("qola {verb}: {e}");
            return ExitCode::from(2);
        }
    };
    if c.json {
        print_json(&serde_json::to_value(&prepared).expect("a report always serializes"));
    }
    eprintln!("qola {verb}: {prepared}");
    for warning in &prepared.warnings {
        eprintln!("qola: warning: {warning}");
    }
    if verb == "checkout" && !c.json && prepared.action != Action::Refused {
        // QoLA's line, on standard output, for the scripts that read it.
        let root = prepared
            .root
            .canonicalize()
            .unwrap_or(prepared.root.clone());
        println!("AITER ready at {}", root.display());
    }
    if verb == "status" {
        for path in &prepared.edited_paths {
            eprintln!("  edited: {path}");
        }
        for path in &prepared.untracked_paths {
            eprintln!("  untracked: {path}");
        }
    }
    if prepared.action == Action::Refused {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// `checkout`: QoLA's name for prepare; its groups must be the manifest's (the tree is the same
/// for every group).
fn checkout(c: &CheckoutCmd) -> ExitCode {
    if !c.groups.is_empty()
        && let Err(e) = qola_build::aiter::check_groups(&c.prepare.options(), &c.groups)
    {
        return fail("checkout", c.prepare.json, &e);
    }
    prepare("checkout", &c.prepare, c.prepare.options().try_prepare())
}

fn diff(c: &DiffCmd) -> ExitCode {
    let patch = match c.source.options().try_diff() {
        Ok(patch) => patch,
        Err(e) => {
            eprintln!("qola diff: error: {e}");
            return ExitCode::from(1);
        }
    };
    let written = match &c.output {
        Some(path) => std::fs::write(path, &patch).map(|()| {
            eprintln!(
                "qola diff: {} bytes written to {}",
                patch.len(),
                path.display()
            );
        }),
        None => std::io::stdout().lock().write_all(&patch),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qola diff: error: cannot write the patch: {e}");
            ExitCode::from(1)
        }
    }
}

fn build(c: &BuildCmd) -> ExitCode {
    let outcome = match c.output_build().try_build() {
        Ok(outcome) => outcome,
        Err(e) => return fail("build", c.prepare.json, &e),
    };
    let r = &outcome.record;
    if c.prepare.json {
        print_json(&serde_json::to_value(r).expect("a record always serializes"));
    }
    let prebuilt = match &outcome.prebuilt[..] {
        [] => String::new(),
        modules => format!(
            " ({} prebuilt, {} bytes fetched: {})",
            modules.len(),
            modules.iter().map(|(_, bytes)| bytes).sum::<u64>(),
            modules
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    eprintln!(
        "qola build: {}/{} modules built{prebuilt}, {} failed; {} of {} units compiled{}",
        r.summary.success,
        r.summary.total,
        r.summary.failed,
        outcome.compiled,
        outcome.units,
        if outcome.record_written {
            ""
        } else {
            "; nothing changed in the output directory"
        }
    );
    if !c.prepare.json {
        // QoLA's lines, on standard output, for the scripts that read them.
        println!(
            "Build complete: {}/{} succeeded, {} failed.",
            r.summary.success, r.summary.total, r.summary.failed
        );
        for m in r.modules.iter().filter(|m| !m.success) {
            println!("  FAILED: {}: {}", m.md_name, m.error);
        }
    }
    if r.summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn plan(c: &BuildCmd) -> ExitCode {
    if c.timings {
        eprintln!(
            "qola plan: error: --timings: a plan compiles nothing, so there is nothing to time; `qola build --timings` writes the report"
        );
        return ExitCode::from(2);
    }
    let plan = match c.output_build().try_plan() {
        Ok(plan) => plan,
        Err(e) => return fail("plan", c.prepare.json, &e),
    };
    if c.prepare.json {
        print_json(&serde_json::to_value(&plan).expect("a plan always serializes"));
    }
    for warning in &plan.warnings {
        eprintln!("qola: warning: {warning}");
    }
    for module in &plan.modules {
        let cached = module.compile.units.iter().filter(|u| u.cached).count();
        eprintln!(
            "qola plan: {}: {} generators, {} units ({cached} cached), {} hsa code objects, {} link steps",
            module.md_name,
            module.generators.len(),
            module.compile.units.len(),
            module.hsa_blobs,
            module.compile.link.len()
        );
        match &module.library_key {
            qola_build::aiter::prebuilt::LibraryKey::Key { key, inputs } => eprintln!(
                "  library key {key}: AITER {}, {} patches, {} for {}, compiler {}, {}",
                inputs.aiter_commit,
                inputs.series.len(),
                inputs.mode,
                inputs.archs.join(";"),
                &inputs.compiler[..inputs.compiler.len().min(16)],
                inputs.interpreter.lines().next().unwrap_or("")
            ),
            qola_build::aiter::prebuilt::LibraryKey::None { why } => {
                eprintln!("  no library key: {why}")
            }
        }
        // Each decision with its reason, counted; each unit with -v.
        let mut counts: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        for unit in &module.compile.units {
            let reason = if unit.decision == "reuse" {
                "in qola's cache"
            } else {
                unit.reason.as_str()
            };
            *counts.entry((unit.decision, reason)).or_default() += 1;
            if module.verbose {
                eprintln!(
                    "  {:10} {} ({})",
                    unit.decision,
                    unit.source.display(),
                    unit.reason
                );
            }
        }
        for ((decision, reason), n) in counts {
            eprintln!("  {n} {decision}: {reason}");
        }
    }
    ExitCode::SUCCESS
}

fn cache(c: &CacheCmd) -> ExitCode {
    let dir = c.cache_dir.as_deref();
    let cleared = if c.clear {
        match qola_build::clear_object_cache(dir) {
            Ok(n) => Some(n),
            Err(e) => return fail("cache", c.json, &e),
        }
    } else {
        None
    };
    let usage = match qola_build::object_cache_usage(dir) {
        Ok(usage) => usage,
        Err(e) => return fail("cache", c.json, &e),
    };
    if c.json {
        let mut value = serde_json::to_value(&usage).expect("usage serializes");
        if let Some(n) = cleared {
            value["cleared"] = n.into();
        }
        print_json(&value);
    }
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    if let Some(n) = cleared {
        eprintln!("qola cache: removed {n} objects");
    }
    eprintln!(
        "qola cache: {}\n  {} objects, {:.2} GiB (and {:.2} GiB of records and scratch) of {:.2} GiB; {} units recorded; {} builds running; {} left by builds that are gone",
        usage.dir.display(),
        usage.objects,
        gib(usage.bytes),
        gib(usage.other_bytes),
        gib(usage.max_bytes),
        usage.units,
        usage.running_builds,
        usage.leftovers
    );
    for (what, groups) in [
        ("per library", &usage.libraries),
        ("per compiler", &usage.compilers),
    ] {
        if groups.is_empty() {
            continue;
        }
        eprintln!("  {what} (objects, size, last used):");
        for g in groups {
            eprintln!(
                "    {:>6} {:>9.1} MiB  {}  {}",
                g.objects,
                g.bytes as f64 / (1u64 << 20) as f64,
                g.last_used,
                g.name
            );
        }
    }
    if !usage.builds.is_empty() {
        eprintln!("  last builds (reused from the cache / compiled):");
        for b in usage.builds.iter().rev().take(10) {
            eprintln!(
                "    {}  {:>5} / {:<5} {} ({})",
                b.at, b.hits, b.misses, b.library, b.out_dir
            );
        }
    }
    ExitCode::SUCCESS
}
