//! `qola`: prepare AITER from the command line (for CMake builds and for people).
//!
//! Exit status: 0 on success, 2 when local edits made qola refuse, 1 on any error.
//! With `--json`, standard output is exactly one JSON object; messages go to standard error.

use std::io::Write;
use std::process::ExitCode;

use qola_build::manifest::BuildMode;
use qola_build::{Action, Error, OutputBuild, Preparation, Prepare};

const USAGE: &str = "\
usage: qola <command> [options]

commands:
  prepare   make the checkout the prepared state (clone, resync, or nothing when up to date)
  checkout  the same as prepare (QoLA's name; never a blind reset: local edits are refused)
  status    say what prepare would do and why; writes nothing, takes no lock, never fetches
  diff      print local edits relative to the prepared state as a patch for the series
  build     prepare, then build the manifest's [[modules]] into --output-dir as QoLA lays it
            out (lib/<ns>_<md_name>.so, include/, configs/, manifest.json); incremental
  plan      every command `build` would run, without compiling (code generation runs)

options (QoLA's names first):
  -m, --manifest FILE      manifest (default: QOLA_MANIFEST, else ./qola.toml if present)
  -a, --aiter-root DIR     the AITER checkout (--root; default: QOLA_AITER_ROOT, else qola's cache)
  --aiter-commit REV       AITER commit: SHA, tag or branch (--commit; default: QOLA_AITER_COMMIT,
                           manifest)
  --patches-dir DIR        patch series directory (--patches; default: QOLA_PATCHES_DIR, manifest,
                           else qola's own series)
  --url URL                AITER repository (default: QOLA_AITER_URL, manifest, github.com/ROCm/aiter)
  -o, --output-dir DIR     build, plan: the output directory; diff: write the patch to this file
  --arch ARCH              build, plan: GPU architecture, repeatable or `;`-separated (over the
                           manifest's [build] architectures, then GPU_ARCHS, then this machine's)
  --mode MODE              build: cpp_itfs (pybind needs PyTorch: refused)
  --group GROUP            build, plan: only modules of this group, repeatable (QOLA_BUILD_GROUPS)
  --skip-checkout          build, plan: use the tree as it is (QOLA_AITER_SOURCE_DIR also does)
  --filter GLOB            build, plan: only CK instances whose name matches (CK's --filter)
  -v, --verbose            build: print each compile command
  --force                  save local edits as a backup patch, then prepare (QOLA_FORCE_PREPARE=1)
  --skip                   use the tree as it is, write nothing (QOLA_SKIP_PREPARE=1)
  --offline                never use the network (QOLA_OFFLINE=1)
  --json                   print one JSON object on standard output
  -h, --help               this text
  -V, --version            qola's version

exit status: 0 success, 2 refused (local edits), 1 error (build: any module failed)";

struct Cli {
    command: String,
    options: Prepare,
    json: bool,
    output: Option<String>,
    archs: Vec<String>,
    mode: Option<BuildMode>,
    groups: Vec<String>,
    skip_checkout: bool,
    verbose: bool,
    filter: Option<String>,
}

const COMMANDS: &[&str] = &["prepare", "checkout", "status", "diff", "build", "plan"];

fn parse(args: &[String]) -> Result<Option<Cli>, String> {
    let mut options = Prepare::new();
    options.cargo_metadata(false);
    let mut command = None;
    let mut json = false;
    let mut output = None;
    let mut archs = Vec::new();
    let mut mode = None;
    let mut groups = Vec::new();
    let mut skip_checkout = false;
    let mut verbose = false;
    let mut filter = None;
    let mut i = 0;
    while i < args.len() {
        // `--name=value` is `--name value`.
        let (arg, inline) = match args[i].split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (args[i].as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
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
            "-m" | "--manifest" => {
                options.manifest(value(arg)?);
            }
            "-a" | "--aiter-root" | "--root" => {
                options.root(value(arg)?);
            }
            "--url" => {
                options.url(value(arg)?);
            }
            "--aiter-commit" | "--commit" => {
                options.commit(value(arg)?);
            }
            "--patches-dir" | "--patches" => {
                options.patches_dir(value(arg)?);
            }
            "-o" | "--output-dir" | "--output" => output = Some(value(arg)?),
            "--arch" => archs.extend(
                value(arg)?
                    .split(';')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(String::from),
            ),
            "--mode" => {
                mode = Some(match value(arg)?.as_str() {
                    "cpp_itfs" => BuildMode::CppItfs,
                    "pybind" => BuildMode::Pybind,
                    other => return Err(format!("--mode {other}: expected cpp_itfs or pybind")),
                })
            }
            "--group" => groups.push(value(arg)?),
            "--skip-checkout" => skip_checkout = true,
            "-v" | "--verbose" => verbose = true,
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
    if !COMMANDS.contains(&command.as_str()) {
        return Err(format!("unknown command `{command}`"));
    }
    if command == "diff" && json {
        return Err("diff prints a patch; --json applies to the other commands".to_string());
    }
    let builds = matches!(command.as_str(), "build" | "plan");
    if !builds && !matches!(command.as_str(), "diff") && output.is_some() {
        return Err(
            "-o names build's and plan's output directory, or diff's patch file".to_string(),
        );
    }
    if builds && output.is_none() {
        return Err(format!("{command} needs -o/--output-dir"));
    }
    let build_only = !archs.is_empty()
        || mode.is_some()
        || !groups.is_empty()
        || skip_checkout
        || filter.is_some();
    if build_only && !builds {
        return Err(
            "--arch, --mode, --group, --skip-checkout and --filter apply to build and plan"
                .to_string(),
        );
    }
    Ok(Some(Cli {
        command,
        options,
        json,
        output,
        archs,
        mode,
        groups,
        skip_checkout,
        verbose,
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
    match cli.command.as_str() {
        "plan" => return plan(&cli),
        "build" => return build(&cli),
        _ => {}
    }
    let result = match cli.command.as_str() {
        "prepare" | "checkout" => cli.options.try_prepare(),
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
        Err(e) if e.refused().is_some() => {
            if let (true, Some(prepared)) = (cli.json, e.refused()) {
                print_json(&serde_json::to_value(prepared).expect("a report always serializes"));
            }
            eprintln!("qola {}: {e}", cli.command);
            ExitCode::from(2)
        }
        Err(e) => fail(&cli, &Error::from(e)),
    }
}

fn output_build(cli: &Cli) -> OutputBuild {
    let mut build = OutputBuild::new(
        cli.options.clone(),
        cli.output.as_deref().expect("checked by parse"),
    );
    build
        .archs(&cli.archs)
        .groups(&cli.groups)
        .skip_checkout(cli.skip_checkout)
        .verbose(cli.verbose);
    if let Some(mode) = cli.mode {
        build.mode(mode);
    }
    if let Some(filter) = &cli.filter {
        build.ck_filter(filter);
    }
    build
}

fn fail(cli: &Cli, e: &Error) -> ExitCode {
    if cli.json {
        print_json(&serde_json::json!({ "action": "error", "error": e.to_string() }));
    }
    eprintln!("qola {}: error: {e}", cli.command);
    ExitCode::from(1)
}

fn build(cli: &Cli) -> ExitCode {
    match output_build(cli).try_build() {
        Ok(outcome) => {
            let r = &outcome.record;
            if cli.json {
                print_json(&serde_json::to_value(r).expect("a record always serializes"));
            }
            eprintln!(
                "qola build: {}/{} modules built, {} failed; {} of {} units compiled{}",
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
            for m in r.modules.iter().filter(|m| !m.success) {
                eprintln!("  FAILED: {}: {}", m.md_name, m.error);
            }
            if r.summary.failed > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => fail(cli, &Error::from(e)),
    }
}

fn plan(cli: &Cli) -> ExitCode {
    match output_build(cli).try_plan() {
        Ok(modules) => {
            if cli.json {
                print_json(&serde_json::json!({ "modules": modules }));
            }
            for module in &modules {
                let cached = module.compile.units.iter().filter(|u| u.cached).count();
                eprintln!(
                    "qola plan: {}: {} generators, {} units ({cached} cached), {} hsa code objects, {} link steps",
                    module.md_name,
                    module.generators.len(),
                    module.compile.units.len(),
                    module.hsa_blobs,
                    module.compile.link.len()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(cli, &Error::from(e)),
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
