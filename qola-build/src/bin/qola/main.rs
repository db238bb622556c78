//! `qola`: prepare AITER and build its modules from the command line (for CMake builds, for
//! QoLA's users, and for people).
//!
//! Conventions (as cargo, git and ccache keep them): a command's report goes to standard output;
//! progress, information and warnings to standard error. With `--json`, standard output is
//! exactly one JSON object and the report is not repeated anywhere. The exit status is one of
//! [`exit`]'s, the table docs/command-line.md gives.

mod args;
mod exit;
mod plan_words;
mod switch_te;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use qola_build::{Action, Error, Preparation};

use args::{BuildCmd, CacheCmd, CheckoutCmd, Cli, Command, DiffCmd, KeyAction, KeyCmd, PrepareCmd};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            // Help and the version are answers; anything else is a usage error.
            return match usage {
                true => exit::status(exit::USAGE),
                false => ExitCode::SUCCESS,
            };
        }
    };
    let Some(command) = cli.command else {
        // As argparse (QoLA's) does: the usage on standard error, a usage error's status.
        let mut usage = <Cli as clap::CommandFactory>::command();
        let _ = writeln!(std::io::stderr(), "{}", usage.render_help());
        return exit::status(exit::USAGE);
    };
    match command {
        Command::Prepare(c) => prepare("prepare", &c, c.options().try_prepare()),
        Command::Checkout(c) => checkout(&c),
        Command::Status(c) => prepare("status", &c, c.options().try_status()),
        Command::Diff(c) => diff(&c),
        Command::Build(c) => build(&c),
        Command::Plan(c) => plan(&c),
        Command::Cache(c) => cache(&c),
        Command::Key(c) => key(&c),
        Command::SwitchTe(c) => {
            switch_te::switch_te(c.dir.as_deref().unwrap_or(std::path::Path::new(".")))
        }
    }
}

fn print_json(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = writeln!(out);
}

/// A failed command: its error (and, with `--json`, the error as the one JSON object). A build
/// refused because of local edits exits as a refusal.
fn fail(verb: &str, json: bool, e: &Error) -> ExitCode {
    if json {
        print_json(&serde_json::json!({ "action": "error", "error": e.to_string() }));
    }
    eprintln!("qola {verb}: error: {e}");
    match e.refused() {
        Some(_) => exit::status(exit::REFUSED),
        None => exit::status(exit::ERROR),
    }
}

/// A usage error found after parsing (options that do not go together): nothing ran.
fn usage(verb: &str, message: &str) -> ExitCode {
    eprintln!("qola {verb}: error: {message}");
    exit::status(exit::USAGE)
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
            return exit::status(exit::REFUSED);
        }
    };
    for warning in &prepared.warnings {
        eprintln!("qola: warning: {warning}");
    }
    if c.json {
        print_json(&serde_json::to_value(&prepared).expect("a report always serializes"));
    } else if verb == "checkout" {
        // QoLA's command: its line is the report, for the scripts that read it; qola's says
        // more, as information.
        eprintln!("qola {verb}: {prepared}");
        if prepared.action != Action::Refused {
            let root = prepared
                .root
                .canonicalize()
                .unwrap_or(prepared.root.clone());
            println!("AITER ready at {}", root.display());
        }
    } else {
        println!("qola {verb}: {prepared}");
        if verb == "status" {
            for path in &prepared.edited_paths {
                println!("  edited: {path}");
            }
            for path in &prepared.untracked_paths {
                println!("  untracked: {path}");
            }
        }
    }
    match prepared.action {
        Action::Refused => exit::status(exit::REFUSED),
        _ => ExitCode::SUCCESS,
    }
}

/// `checkout`: QoLA's name for prepare; its groups must be the manifest's (the tree is the same
/// for every group).
fn checkout(c: &CheckoutCmd) -> ExitCode {
    if !c.groups.is_empty()
        && let Err(e) = qola_build::aiter::check_groups(&c.prepare.options(), &c.groups)
    {
        return fail("checkout", c.prepare.json, &Error::from(e));
    }
    prepare("checkout", &c.prepare, c.prepare.options().try_prepare())
}

fn diff(c: &DiffCmd) -> ExitCode {
    let patch = match c.source.options().try_diff() {
        Ok(patch) => patch,
        Err(e) => return fail("diff", false, &e.into()),
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
            exit::status(exit::ERROR)
        }
    }
}

fn build(c: &BuildCmd) -> ExitCode {
    let outcome = match c.output_build().try_build() {
        Ok(outcome) => outcome,
        Err(e) => return fail("build", c.prepare.json, &Error::from(e)),
    };
    let r = &outcome.record;
    if c.prepare.json {
        print_json(&serde_json::to_value(r).expect("a record always serializes"));
    } else {
        let prebuilt = match &outcome.prebuilt[..] {
            [] => String::new(),
            modules => format!(
                " ({} prebuilt, {} fetched: {})",
                modules.len(),
                qola_build::scaled_size(modules.iter().map(|(_, bytes)| bytes).sum::<u64>()),
                modules
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        // QoLA's command: its lines below are the report; qola's says more, as information.
        // A module that failed has no unit count (it may have failed before its plan).
        eprintln!(
            "qola build: {}/{} modules built{prebuilt}, {} failed; {} of {} units compiled{}{}",
            r.summary.success,
            r.summary.total,
            r.summary.failed,
            outcome.compiled,
            outcome.units,
            if r.summary.failed > 0 {
                " in the modules built"
            } else {
                ""
            },
            written_summary(&outcome)
        );
        println!(
            "Build complete: {}/{} succeeded, {} failed.",
            r.summary.success, r.summary.total, r.summary.failed
        );
        for m in r.modules.iter().filter(|m| !m.success) {
            println!("  FAILED: {}: {}", m.md_name, m.error);
        }
    }
    match r.summary.failed {
        0 => ExitCode::SUCCESS,
        _ => exit::status(exit::ERROR),
    }
}

/// What `qola build` wrote in the output directory, said at the end of its summary line:
/// `; wrote lib/module_mha_fwd.so and manifest.json`, or that nothing changed there.
fn written_summary(outcome: &qola_build::BuildOutcome) -> String {
    let mut written: Vec<String> = outcome
        .libraries_written
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if outcome.record_written {
        written.push("manifest.json".to_string());
    }
    match &written[..] {
        [] => "; nothing changed in the output directory".to_string(),
        [one] => format!("; wrote {one}"),
        [first @ .., last] => format!("; wrote {} and {last}", first.join(", ")),
    }
}

fn plan(c: &BuildCmd) -> ExitCode {
    if c.timings {
        return usage(
            "plan",
            "--timings: a plan compiles nothing, so there is nothing to time; `qola build --timings` writes the report",
        );
    }
    let plan = match c.output_build().try_plan() {
        Ok(plan) => plan,
        Err(e) => return fail("plan", c.prepare.json, &Error::from(e)),
    };
    for warning in &plan.warnings {
        eprintln!("qola: warning: {warning}");
    }
    if c.prepare.json {
        print_json(&serde_json::to_value(&plan).expect("a plan always serializes"));
    } else {
        for module in &plan.modules {
            print!("{}", plan_words::module(module));
        }
    }
    // The plan as far as it could be made, and the build's refusal: an error's status.
    for why in &plan.refused {
        eprintln!("qola plan: the build would be refused: {why}");
    }
    match plan.refused.is_empty() {
        true => ExitCode::SUCCESS,
        false => exit::status(exit::ERROR),
    }
}

fn key(c: &KeyCmd) -> ExitCode {
    let shown = match &c.action {
        KeyAction::Generate { secret, public } => {
            qola_build::aiter::prebuilt::generate_key(secret, public).map(|(line, id)| {
                eprintln!(
                    "qola key: secret key {} (owner-only: keep it in a secret store, give it to `build --sign-key`), public key {}",
                    secret.display(),
                    public.display()
                );
                (line, id)
            })
        }
        KeyAction::Show { file } => qola_build::aiter::prebuilt::show_key(file),
    };
    match shown {
        Ok((line, id)) => {
            println!("public key: {line}\nkey id: {id}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("qola key: error: {why}");
            exit::status(exit::ERROR)
        }
    }
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
        if let Some(cleared) = &cleared {
            value["cleared"] = serde_json::to_value(cleared).expect("a count serializes");
        }
        print_json(&value);
        return ExitCode::SUCCESS;
    }
    let size = qola_build::scaled_size;
    if let Some(n) = &cleared {
        println!(
            "qola cache: removed {} objects ({}), {} unit records and {} builds of history",
            n.objects,
            size(n.bytes),
            n.records,
            n.builds
        );
    }
    println!(
        "qola cache: {}\n  {} objects, {} (and {} of records and scratch) of {}; {} units recorded; {} builds running; {} left by builds that are gone",
        usage.dir.display(),
        usage.objects,
        size(usage.bytes),
        size(usage.other_bytes),
        size(usage.max_bytes),
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
        println!("  {what} (objects, size, last used):");
        for g in groups {
            println!(
                "    {:>6} {:>10}  {}  {}",
                g.objects,
                size(g.bytes),
                g.last_used,
                g.name
            );
        }
    }
    if !usage.builds.is_empty() {
        println!("  last builds (reused from the cache / compiled):");
        for b in usage.builds.iter().rev().take(10) {
            println!(
                "    {}  {:>5} / {:<5} {} ({})",
                b.at, b.hits, b.misses, b.library, b.out_dir
            );
        }
    }
    ExitCode::SUCCESS
}
