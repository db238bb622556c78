//! `qola plan` in words: per module its counts, its library key, and each decision with its
//! reason; with `-v` also the compiler, the flags every unit compiles with, each generator's
//! command and each unit with its command.

use std::collections::BTreeMap;
use std::fmt::Write;

use qola_build::ModulePlan;
use qola_build::aiter::prebuilt::LibraryKey;

/// The words for one module, each line ended.
pub(crate) fn module(module: &ModulePlan) -> String {
    let mut out = String::new();
    let units = &module.compile.units;
    let cached = units.iter().filter(|u| u.cached).count();
    let _ = writeln!(
        out,
        "qola plan: {}: {} generators, {} units ({cached} cached), {} hsa code objects, {} link steps",
        module.md_name,
        module.generators.len(),
        units.len(),
        module.hsa_blobs,
        module.compile.link.len()
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
    if module.verbose {
        verbose(&mut out, module);
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
fn verbose(out: &mut String, module: &ModulePlan) {
    let compile = &module.compile;
    let toolchain = &compile.toolchain;
    let _ = writeln!(
        out,
        "  compiler {} ({}), {} at once ({})",
        toolchain.path.display(),
        toolchain.version(),
        compile.jobs,
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
    for unit in &compile.units {
        let _ = writeln!(
            out,
            "  {:10} {} ({})",
            unit.decision,
            unit.source.display(),
            unit.reason
        );
        let _ = writeln!(out, "             {}", unit.command.join(" "));
    }
    for step in &compile.link {
        let _ = writeln!(out, "  link: {step}");
    }
}
