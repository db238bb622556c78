//! Before the first job of a build that splits its units: which architectures of each unit are
//! dead (its guard, the macros its prefix defines, the proof that an empty unit stands for the
//! dead pass; see `prefix`) and which units share a precompiled header for their host passes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::depfile;
use crate::compile::passes::prefix::{self, Question};
use crate::compile::passes::{Pch, Prepared, Split, device_args, empty_unit, guard};
use crate::compile::run::Job;

/// What the preparation needs of the build.
pub(crate) struct Context<'a> {
    /// The compiler and its arguments (every root by name, every `--offload-arch`).
    pub command: &'a [String],
    /// The compiler's identity.
    pub identity: &'a str,
    /// The build's architectures.
    pub archs: &'a [String],
    /// Where commands run (the links' directory).
    pub links: &'a Path,
    /// The build's scratch directory.
    pub scratch: &'a Path,
    /// qola's cache (the proofs are kept in its `probes/`).
    pub cache: &'a Path,
    /// The output directory (the empty translation unit).
    pub out_dir: &'a Path,
    /// A path's name (see `roots`).
    pub name: &'a dyn Fn(&Path) -> String,
    /// The path of a name.
    pub path: &'a dyn Fn(&str) -> Option<PathBuf>,
    /// The compiles' environment.
    pub env: &'a [(String, String)],
    /// Jobs at once.
    pub limit: usize,
    /// Whether units sharing their includes get a precompiled header for their host passes.
    pub host_pch: bool,
}

/// A unit to compile: its index and source.
pub(crate) struct ToCompile<'a> {
    pub index: usize,
    pub source: &'a Path,
}

/// The passes of `units` (see the module docs); a unit with one live architecture and no
/// shared includes stays one call.
pub(crate) fn analyze(ctx: &Context, units: &[ToCompile]) -> std::io::Result<Prepared> {
    let mut texts = Vec::new();
    for unit in units {
        texts.push(std::fs::read_to_string(unit.source).unwrap_or_default());
    }
    let guards: Vec<Option<guard::Guard>> = texts.iter().map(|t| guard::read(t)).collect();
    let dir_of = |unit: &ToCompile| unit.source.parent().unwrap_or(Path::new("/")).to_path_buf();
    // Guarded units by their prefix (and where it is read): the macros and the proofs are the
    // prefix's, each unit's own condition is read with them.
    let mut prefixes: BTreeMap<(String, PathBuf), Vec<usize>> = BTreeMap::new();
    for (i, unit) in units.iter().enumerate() {
        if let Some(g) = &guards[i] {
            prefixes
                .entry((g.prefix.clone(), dir_of(unit)))
                .or_default()
                .push(i);
        }
    }
    crate::common::io::write_if_changed(&empty_unit(ctx.out_dir), b"").map_err(|e| e.source)?;
    let dead = dead_architectures(ctx, &prefixes, &guards)?;
    // Precompiled headers for the host passes of units sharing their includes.
    let mut groups: BTreeMap<(String, PathBuf), Vec<usize>> = BTreeMap::new();
    if ctx.host_pch {
        for (i, unit) in units.iter().enumerate() {
            if let Some(text) = super::include_prefix(&texts[i], guards[i].as_ref()) {
                groups.entry((text, dir_of(unit))).or_default().push(i);
            }
        }
    }
    let mut prepared = Prepared::default();
    let mut pch_of = BTreeMap::new();
    for ((text, dir), members) in groups
        .into_iter()
        .filter(|((text, dir), m)| m.len() > 1 && includes_guarded(ctx, text, dir))
    {
        let hash = blake3::hash(text.as_bytes()).to_hex()[..16].to_string();
        let header = ctx.scratch.join(format!("pch-{hash}.hpp"));
        std::fs::write(&header, &text)?;
        let index = prepared.pchs.len();
        prepared.pchs.push(Pch {
            header,
            pch: ctx.scratch.join(format!("pch-{hash}.pch")),
            dir,
        });
        for member in members {
            pch_of.insert(member, index);
        }
    }
    for (i, unit) in units.iter().enumerate() {
        let dead_here = dead.get(&i).cloned().unwrap_or_default();
        let live: Vec<String> = ctx
            .archs
            .iter()
            .filter(|a| !dead_here.contains(a))
            .cloned()
            .collect();
        let pch = pch_of.get(&i).copied();
        if live.len() > 1 || !dead_here.is_empty() || pch.is_some() {
            prepared.splits.insert(
                unit.index,
                Split {
                    live,
                    dead: dead_here,
                    pch,
                },
            );
        }
    }
    Ok(prepared)
}

/// For each guarded unit (by its index in `guards`): the architectures its guard leaves dead
/// and whose dead pass the empty translation unit was shown to give for its prefix (the others
/// keep their full pass).
fn dead_architectures(
    ctx: &Context,
    prefixes: &BTreeMap<(String, PathBuf), Vec<usize>>,
    guards: &[Option<guard::Guard>],
) -> std::io::Result<BTreeMap<usize, Vec<String>>> {
    let condition = |unit: usize| &guards[unit].as_ref().expect("a guarded unit").condition;
    // 1. What each prefix defines, per architecture (with the headers it read).
    let mut questions = Vec::new();
    let mut asked = Vec::new();
    for (n, ((text, dir), _)) in prefixes.iter().enumerate() {
        let file = ctx.scratch.join(format!("prefix-{n}.hip"));
        std::fs::write(&file, text)?;
        for arch in ctx.archs {
            let output = ctx.scratch.join(format!("prefix-{n}-{arch}.macros"));
            let deps = output.with_extension("d");
            let mut argv = device_args(ctx.command, arch);
            argv.extend([
                "--cuda-device-only".to_string(),
                "-E".to_string(),
                "-dM".to_string(),
            ]);
            argv.extend(["-iquote".to_string(), (ctx.name)(dir)]);
            argv.extend(["-MD".to_string(), "-MF".to_string(), (ctx.name)(&deps)]);
            argv.extend(["-o".to_string(), (ctx.name)(&output), (ctx.name)(&file)]);
            questions.push(question(ctx, argv, output));
            asked.push((n, arch.clone(), deps));
        }
    }
    let answers = prefix::ask(questions, ctx.limit);
    // 2. Per prefix and architecture: the units it leaves dead, and the proofs still to make.
    let keys: Vec<&(String, PathBuf)> = prefixes.keys().collect();
    let mut candidates: Vec<(usize, String, Vec<usize>)> = Vec::new();
    let mut proofs = Vec::new();
    for ((n, arch, deps), answer) in asked.into_iter().zip(answers) {
        let Some(dump) = answer else {
            continue; // A prefix the compiler cannot read alone: every architecture compiles.
        };
        let names: BTreeSet<String> = prefix::defined_names(&String::from_utf8_lossy(&dump));
        let dead_units: Vec<usize> = prefixes[keys[n]]
            .iter()
            .copied()
            .filter(|&unit| !condition(unit).holds(&names))
            .collect();
        if dead_units.is_empty() {
            continue;
        }
        let (text, dir) = keys[n];
        let headers = depfile_contents(ctx, &deps);
        let key = prefix::proof_key(
            ctx.identity,
            &device_args(ctx.command, &arch),
            &arch,
            text,
            &(ctx.name)(dir),
            &headers,
        );
        match std::fs::read_to_string(prefix::proof_path(ctx.cache, &key)).as_deref() {
            Ok("same") => candidates.push((n, arch, dead_units)),
            Ok(_) => {}
            Err(_) => {
                proofs.push((candidates.len(), key));
                candidates.push((n, arch, dead_units));
            }
        }
    }
    // 3. The proofs: the prefix alone and the empty unit, one `-cuid`, the same bytes?
    let mut questions = Vec::new();
    for (candidate, _) in &proofs {
        let (n, arch, _) = &candidates[*candidate];
        let file = ctx.scratch.join(format!("prefix-{n}.hip"));
        for (what, source) in [("prefix", file), ("empty", empty_unit(ctx.out_dir))] {
            let output = ctx.scratch.join(format!("proof-{n}-{arch}-{what}.co"));
            let mut argv = device_args(ctx.command, arch);
            argv.extend(
                ["--cuda-device-only", "--no-gpu-bundle-output", "-cuid=0"].map(String::from),
            );
            argv.extend(["-iquote".to_string(), (ctx.name)(&keys[*n].1)]);
            argv.extend(["-o".to_string(), (ctx.name)(&output)]);
            argv.extend(["-c".to_string(), (ctx.name)(&source)]);
            questions.push(question(ctx, argv, output));
        }
    }
    let answers = prefix::ask(questions, ctx.limit);
    let mut disproved = BTreeSet::new();
    for (i, (candidate, key)) in proofs.into_iter().enumerate() {
        let (prefix_co, empty_co) = (&answers[2 * i], &answers[2 * i + 1]);
        let same = prefix_co.is_some() && prefix_co == empty_co;
        // A cache that cannot be written keeps no answer: this build still has it.
        let path = prefix::proof_path(ctx.cache, &key);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = crate::common::io::write_atomic(&path, if same { b"same" } else { b"differs" });
        if !same {
            disproved.insert(candidate);
        }
    }
    let mut dead: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (index, (_, arch, units)) in candidates.into_iter().enumerate() {
        if disproved.contains(&index) {
            continue;
        }
        for unit in units {
            dead.entry(unit).or_default().push(arch.clone());
        }
    }
    Ok(dead)
}
/// Whether every header `prefix` includes itself (found beside the units in `dir`, else in an
/// `-I` directory of the command) keeps itself from being read twice: a host pass reads its
/// unit's includes again after the precompiled header, and a header without `#pragma once` or
/// an `#ifndef` guard would define its names twice (AITER's generated `impl/*.cuh` have none).
/// A header found nowhere (the compiler's own, the system's) is taken as guarded.
fn includes_guarded(ctx: &Context, prefix: &str, dir: &Path) -> bool {
    let mut dirs = vec![dir.to_path_buf()];
    let mut args = ctx.command.iter();
    while let Some(arg) = args.next() {
        let named = match arg.as_str() {
            "-I" => args.next().cloned(),
            other => other.strip_prefix("-I").map(String::from),
        };
        dirs.extend(named.map(|name| ctx.links.join(name)));
    }
    prefix.lines().filter_map(included_name).all(|name| {
        dirs.iter()
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .is_none_or(|p| std::fs::read_to_string(p).is_ok_and(|t| guarded(&t)))
    })
}

/// The name an `#include` line names (`"a.h"` or `<a.h>`).
fn included_name(line: &str) -> Option<&str> {
    let rest = line
        .trim()
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("include")?;
    let rest = rest.trim();
    let close = match rest.chars().next()? {
        '"' => '"',
        '<' => '>',
        _ => return None,
    };
    rest[1..].split(close).next()
}

/// Whether a header's text keeps it from being read twice: `#pragma once`, or its first
/// directive `#ifndef X` followed by `#define X`.
fn guarded(text: &str) -> bool {
    let mut directives = text
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix('#'))
        .map(|d| d.split_whitespace().collect::<Vec<_>>());
    if text.lines().any(|l| {
        l.trim()
            .strip_prefix('#')
            .is_some_and(|d| d.split_whitespace().eq(["pragma", "once"]))
    }) {
        return true;
    }
    match (directives.next().as_deref(), directives.next().as_deref()) {
        (Some(["ifndef", a]), Some(["define", b, ..])) => a == b,
        _ => false,
    }
}

/// A question's job (run in the links' directory).
fn question(ctx: &Context, argv: Vec<String>, output: PathBuf) -> Question {
    Question {
        job: Job::command(0, argv, ctx.links, ctx.env),
        output,
    }
}

/// Every file a depfile lists, by name, with its content's hash.
fn depfile_contents(ctx: &Context, deps: &Path) -> Vec<(String, Option<blake3::Hash>)> {
    let text = std::fs::read_to_string(deps).unwrap_or_default();
    depfile::prerequisites(&text)
        .into_iter()
        .skip(1)
        .map(|written| {
            let path = if written.is_absolute() {
                Some(written.clone())
            } else {
                Some(ctx.links.join(&written))
            };
            let name = path
                .as_deref()
                .map_or_else(|| written.display().to_string(), |p| (ctx.name)(p));
            let content = (ctx.path)(&name)
                .and_then(|p| std::fs::read(p).ok())
                .map(|b| blake3::hash(&b));
            (name, content)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_guarded_by_pragma_once_or_an_ifndef_define_pair() {
        assert!(guarded("// c\n#pragma once\nint x;\n"));
        assert!(guarded(
            "/* c */\n#ifndef A_H\n#define A_H\nint x;\n#endif\n"
        ));
        assert!(!guarded("#include \"b.h\"\nint x;\n"));
        assert!(!guarded("#ifndef A_H\n#define B_H\n#endif\n"));
    }

    #[test]
    fn an_include_line_names_its_header() {
        assert_eq!(included_name("#include \"impl/a.cuh\""), Some("impl/a.cuh"));
        assert_eq!(
            included_name("  #  include <hip/hip_runtime.h>"),
            Some("hip/hip_runtime.h")
        );
        assert_eq!(included_name("#pragma once"), None);
    }
}
