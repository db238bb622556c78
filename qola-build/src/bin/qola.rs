//! `qola`: prepare AITER from the command line (for CMake builds and for people).
//!
//! Exit status: 0 on success, 2 when local edits made qola refuse, 1 on any error.
//! With `--json`, standard output is exactly one JSON object; messages go to standard error.

use std::io::Write;
use std::process::ExitCode;

use qola_build::{Action, Error, Preparation, Prepare};

const USAGE: &str = "\
usage: qola <command> [options]

commands:
  prepare   make the checkout the prepared state (clone, resync, or nothing when up to date)
  status    say what prepare would do and why; writes nothing, takes no lock, never fetches
  diff      print local edits relative to the prepared state as a patch for the series
  plan      every command a build of the manifest's AITER modules would run (code generation
            runs into --gen-dir; nothing compiles); the tree must be prepared

options:
  --manifest FILE   manifest (default: QOLA_MANIFEST, else ./qola.toml if present)
  --root DIR        the AITER checkout (default: QOLA_AITER_ROOT, else qola's cache)
  --url URL         AITER repository (default: QOLA_AITER_URL, manifest, github.com/ROCm/aiter)
  --commit REV      AITER commit: SHA, tag or branch (default: QOLA_AITER_COMMIT, manifest)
  --patches DIR     patch series directory (default: QOLA_PATCHES_DIR, manifest)
  --force           save local edits as a backup patch, then prepare (QOLA_FORCE_PREPARE=1)
  --skip            use the tree as it is, write nothing (QOLA_SKIP_PREPARE=1)
  --offline         never use the network (QOLA_OFFLINE=1)
  --json            print one JSON object on standard output (prepare, status)
  -o FILE           diff: write the patch to FILE instead of standard output
  --gen-dir DIR     plan: where generated code goes (default: qola-plan/gen)
  --filter GLOB     plan: only CK instances whose name matches (CK's --filter)
  -h, --help        this text
  -V, --version     qola's version

exit status: 0 success, 2 refused (local edits), 1 error";

struct Cli {
    command: String,
    options: Prepare,
    json: bool,
    output: Option<String>,
    gen_dir: Option<String>,
    filter: Option<String>,
}

fn parse(args: &[String]) -> Result<Option<Cli>, String> {
    let mut options = Prepare::new();
    options.cargo_metadata(false);
    let mut command = None;
    let mut json = false;
    let mut output = None;
    let mut gen_dir = None;
    let mut filter = None;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let mut value = |name: &str| -> Result<String, String> {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg {
            "-h" | "--help" => return Ok(None),
            "-V" | "--version" => {
                println!("qola {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "--manifest" => {
                options.manifest(value(arg)?);
            }
            "--root" => {
                options.root(value(arg)?);
            }
            "--url" => {
                options.url(value(arg)?);
            }
            "--commit" => {
                options.commit(value(arg)?);
            }
            "--patches" => {
                options.patches_dir(value(arg)?);
            }
            "-o" | "--output" => output = Some(value(arg)?),
            "--gen-dir" => gen_dir = Some(value(arg)?),
            "--filter" => filter = Some(value(arg)?),
            "--force" => {
                options.force(true);
            }
            "--skip" => {
                options.skip(true);
            }
            "--offline" => {
                options.offline(true);
            }
            "--json" => json = true,
            _ if arg.starts_with('-') => return Err(format!("unknown option {arg}")),
            _ if command.is_none() => command = Some(arg.to_string()),
            _ => return Err(format!("unexpected argument {arg}")),
        }
        i += 1;
    }
    let Some(command) = command else {
        return Ok(None);
    };
    if !matches!(command.as_str(), "prepare" | "status" | "diff" | "plan") {
        return Err(format!("unknown command `{command}`"));
    }
    if command == "diff" && json {
        return Err("diff prints a patch; --json applies to prepare and status".to_string());
    }
    if command != "diff" && output.is_some() {
        return Err("-o applies to diff only".to_string());
    }
    Ok(Some(Cli {
        command,
        options,
        json,
        output,
        gen_dir,
        filter,
    }))
}

fn print_json(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value);
    let _ = writeln!(out);
}

fn report(cli: &Cli, prepared: &Preparation) {
    if cli.json {
        print_json(&serde_json::to_value(prepared).expect("a report always serializes"));
    }
    eprintln!("qola {}: {prepared}", cli.command);
    for warning in &prepared.warnings {
        eprintln!("qola: warning: {warning}");
    }
    if cli.command == "status" {
        for path in &prepared.edited_paths {
            eprintln!("  edited: {path}");
        }
        for path in &prepared.untracked_paths {
            eprintln!("  untracked: {path}");
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cli = match parse(&args) {
        Ok(Some(cli)) => cli,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("qola: {message}\n\n{USAGE}");
            return ExitCode::from(1);
        }
    };
    if cli.command == "plan" {
        return plan(&cli);
    }
    let result = match cli.command.as_str() {
        "prepare" => cli.options.try_prepare(),
        "status" => cli.options.try_status(),
        _ => {
            return match cli.options.try_diff() {
                Ok(patch) => write_diff(cli.output.as_deref(), &patch),
                Err(e) => {
                    eprintln!("qola diff: error: {e}");
                    ExitCode::from(1)
                }
            };
        }
    };
    match result {
        Ok(prepared) => {
            report(&cli, &prepared);
            if prepared.action == Action::Refused {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(Error::Refused(prepared)) => {
            if cli.json {
                print_json(&serde_json::to_value(&*prepared).expect("a report always serializes"));
            }
            eprintln!("qola {}: {}", cli.command, Error::Refused(prepared));
            ExitCode::from(2)
        }
        Err(e) => {
            if cli.json {
                print_json(&serde_json::json!({ "action": "error", "error": e.to_string() }));
            }
            eprintln!("qola {}: error: {e}", cli.command);
            ExitCode::from(1)
        }
    }
}

fn plan(cli: &Cli) -> ExitCode {
    let base = std::path::PathBuf::from("qola-plan");
    let gen_dir = cli
        .gen_dir
        .as_deref()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| base.join("gen"));
    match cli
        .options
        .try_plan(&gen_dir, &base.join("out"), cli.filter.as_deref())
    {
        Ok(plan) => {
            if cli.json {
                print_json(&serde_json::to_value(&plan).expect("a plan always serializes"));
            }
            for module in &plan.modules {
                let cached = module.compile.units.iter().filter(|u| u.cached).count();
                eprintln!(
                    "qola plan: {}: {} generators, {} units ({cached} cached), {} link steps",
                    module.name,
                    module.generators.len(),
                    module.compile.units.len(),
                    module.compile.link.len()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            if cli.json {
                print_json(&serde_json::json!({ "action": "error", "error": e.to_string() }));
            }
            eprintln!("qola plan: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn write_diff(output: Option<&str>, patch: &[u8]) -> ExitCode {
    let written = match output {
        Some(path) => std::fs::write(path, patch).map(|()| {
            eprintln!("qola diff: {} bytes written to {path}", patch.len());
        }),
        None => std::io::stdout().lock().write_all(patch),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qola diff: error: cannot write the patch: {e}");
            ExitCode::from(1)
        }
    }
}
