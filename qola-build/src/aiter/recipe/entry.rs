//! A module's entry of `aiter/jit/optCompilerConfig.json`, read and evaluated into its
//! [`ModuleRecipe`], and the manifest's overrides of it (QoLA's `[[modules]]` fields).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::command::{option_value, replace_option};
use super::evaluate::{Eval, Evaluator};
use super::{AiterPaths, ModuleRecipe, Result};
use crate::aiter::AiterError;
use crate::build_script::Env;
use crate::common::text::{python_quoted, python_unescape};

/// Reads `aiter/jit/optCompilerConfig.json` from the prepared tree at `paths.root` and evaluates
/// the entry `module`, with the fields of `overrides` (a manifest's) replacing the entry's.
pub(crate) fn load(
    paths: &AiterPaths,
    module: &str,
    overrides: &BTreeMap<String, Value>,
    env: &Env,
) -> Result<ModuleRecipe> {
    let file = paths.root.join("aiter/jit/optCompilerConfig.json");
    let text =
        std::fs::read_to_string(&file).map_err(crate::common::io::io_error("read", &file))?;
    let all: BTreeMap<String, Value> =
        serde_json::from_str(&text).map_err(|e| AiterError::AiterConfig {
            module: module.to_string(),
            field: "(file)".to_string(),
            expression: file.display().to_string(),
            why: e.to_string(),
        })?;
    let mut entry = all
        .get(module)
        .cloned()
        .ok_or_else(|| AiterError::AiterConfig {
            module: module.to_string(),
            field: "(entry)".to_string(),
            expression: String::new(),
            why: format!(
                "no such module in {}; known: {}",
                file.display(),
                all.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        })?;
    if let Value::Object(fields) = &mut entry {
        for (field, value) in overrides {
            fields.insert(field.clone(), value.clone());
        }
    }
    let entry = Entry {
        module,
        paths,
        env,
        value: entry,
    };
    // What qola cannot build, whoever asks for it (the entry itself or the manifest, whose
    // values were merged in): QoLA's own builds of these fail or need PyTorch.
    for (field, why) in [
        (
            "is_standalone",
            "a standalone build is an executable (AITER links `<md_name>` without `.so`), which QoLA's layout has no place for: build it with AITER's own tools, or set is_standalone = false in the manifest's entry",
        ),
        (
            "hipify",
            "hipify converts CUDA sources with PyTorch's hipify tool before compiling, and qola compiles the tree's sources as they are: carry the converted sources as a patch of the series, or set hipify = false in the manifest's entry",
        ),
    ] {
        if entry.flag(field)? {
            return Err(AiterError::AiterConfig {
                module: module.to_string(),
                field: field.to_string(),
                expression: "True".to_string(),
                why: why.to_string(),
            });
        }
    }
    let per_source = per_source_flags(module, entry.value.get("flags_extra_hip_per_source"))?;
    let hip_clang_path = entry
        .strings("hip_clang_path")?
        .into_iter()
        .next()
        .map(PathBuf::from);
    Ok(ModuleRecipe {
        name: module.to_string(),
        extra_ldflags: entry.strings("extra_ldflags")?,
        verbose: entry.flag("verbose")?,
        hip_clang_path,
        third_party: entry.strings("third_party")?,
        flags_extra_hip_per_source: per_source,
        origins: BTreeMap::new(),
        srcs: entry
            .strings("srcs")?
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        flags_extra_cc: entry.strings("flags_extra_cc")?,
        flags_extra_hip: entry.strings("flags_extra_hip")?,
        extra_include: entry
            .strings("extra_include")?
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        // An empty command runs no generator, as in AITER (`if blob_gen_cmd:`).
        blob_gen_cmd: entry
            .strings("blob_gen_cmd")?
            .into_iter()
            .filter(|cmd| !cmd.trim().is_empty())
            .collect(),
        hsa_kernels: Vec::new(),
    })
}

/// `flags_extra_hip_per_source`: a table of a source path or wildcard to a list of flags. AITER
/// passes the flags as they are (no evaluation); a flag written as a Python string literal
/// (QoLA's series writes `"'-mllvm -enable-post-misched=1'"`) is its text; each is split at
/// whitespace, as qola gives every flag.
fn per_source_flags(module: &str, value: Option<&Value>) -> Result<Vec<(String, Vec<String>)>> {
    let fail = |expression: &Value, why: &str| AiterError::AiterConfig {
        module: module.to_string(),
        field: "flags_extra_hip_per_source".to_string(),
        expression: expression.to_string(),
        why: why.to_string(),
    };
    let map = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(fail(
                other,
                "not a table of a source (or wildcard) to flags",
            ));
        }
    };
    let mut out = Vec::new();
    for (pattern, flags) in map {
        let items: Vec<&Value> = match flags {
            Value::Array(items) => items.iter().collect(),
            one @ Value::String(_) => vec![one],
            other => return Err(fail(other, "the flags of a source are a list of strings")),
        };
        let mut words = Vec::new();
        for item in items {
            let Value::String(flag) = item else {
                return Err(fail(item, "a flag is a string"));
            };
            let text = python_quoted(flag)
                .map(python_unescape)
                .unwrap_or_else(|| flag.clone());
            words.extend(text.split_whitespace().map(String::from));
        }
        out.push((pattern.clone(), words));
    }
    Ok(out)
}

/// The manifest's overrides of a recipe (QoLA's `[[modules]]` fields); returns a warning for
/// each `drop_srcs` or `drop_directions` entry that names nothing of this tree's recipe (TE's
/// manifests are written for several AITERs: one that lists a source another generates).
pub(crate) fn apply_overrides(
    recipe: &mut ModuleRecipe,
    module: &crate::manifest::Module,
    archs: &[String],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(receipt) = module.receipt {
        for cmd in &mut recipe.blob_gen_cmd {
            *cmd = replace_option(cmd, "--receipt", &receipt.to_string());
        }
    }
    // By file name, as QoLA matches them.
    let named = |src: &PathBuf, drop: &str| src.file_name().is_some_and(|n| n == drop);
    for drop in &module.drop_srcs {
        if !recipe.srcs.iter().any(|src| named(src, drop)) {
            warnings.push(format!(
                "drop_srcs: {drop:?} is no listed source of {} at this AITER (its srcs: {}); nothing dropped (generated sources are chosen by drop_directions)",
                module.name,
                list_names(recipe.srcs.iter().filter_map(|s| s.file_name()).map(|n| n.to_string_lossy().into_owned()))
            ));
        }
    }
    recipe
        .srcs
        .retain(|src| !module.drop_srcs.iter().any(|drop| named(src, drop)));
    let direction_of = |cmd: &str| option_value(cmd, "-d").map(String::from);
    for drop in &module.drop_directions {
        if !recipe
            .blob_gen_cmd
            .iter()
            .any(|cmd| direction_of(cmd).as_deref() == Some(drop.as_str()))
        {
            warnings.push(format!(
                "drop_directions: {drop:?} is the direction (`-d`) of no generator of {} at this AITER (its directions: {}); nothing dropped",
                module.name,
                list_names(recipe.blob_gen_cmd.iter().filter_map(|c| direction_of(c)))
            ));
        }
    }
    recipe.blob_gen_cmd.retain(|cmd| {
        !module
            .drop_directions
            .iter()
            .any(|d| direction_of(cmd).as_deref() == Some(d.as_str()))
    });
    // CK's generator takes the architectures to generate for.
    for cmd in &mut recipe.blob_gen_cmd {
        if cmd.contains("01_fmha/generate.py") {
            let targets = archs.join(",");
            *cmd = if cmd.contains("--targets") {
                replace_option(cmd, "--targets", &targets)
            } else {
                format!("{cmd} --targets {targets}")
            };
        }
    }
    if let Some(md_name) = &module.md_name {
        recipe.name = md_name.clone();
    }
    warnings
}

/// `a, b` (or `none`).
fn list_names(names: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = names.collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// A module's entry, its fields evaluated on demand.
struct Entry<'a> {
    module: &'a str,
    paths: &'a AiterPaths,
    env: &'a Env<'a>,
    value: Value,
}

impl Entry<'_> {
    fn evaluator<'f>(&'f self, field: &'f str) -> Evaluator<'f> {
        Evaluator {
            module: self.module,
            field,
            paths: self.paths,
            env: self.env,
        }
    }

    /// A field of strings (one expression or a list of them; `None` gives nothing).
    fn strings(&self, field: &str) -> Result<Vec<String>> {
        let ev = self.evaluator(field);
        let items: Vec<&Value> = match self.value.get(field) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().collect(),
            Some(other) => vec![other],
        };
        let mut out = Vec::new();
        for item in items {
            let Value::String(expr) = item else {
                return Err(ev.fail(&item.to_string(), "not a string expression"));
            };
            match ev.eval(expr)? {
                Eval::Str(s) => out.push(s),
                Eval::None => {}
                Eval::Bool(_) => return Err(ev.fail(expr, "a boolean where a string is expected")),
            }
        }
        Ok(out)
    }

    /// A field of True or False (absent and `None`: false).
    fn flag(&self, field: &str) -> Result<bool> {
        let ev = self.evaluator(field);
        match self.value.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(expr)) => match ev.eval(expr)? {
                Eval::Bool(b) => Ok(b),
                Eval::None => Ok(false),
                Eval::Str(_) => Err(ev.fail(expr, "a string where True or False is expected")),
            },
            Some(other) => Err(ev.fail(&other.to_string(), "not True or False")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_generator_command_runs_no_generator_as_in_aiter() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("tree");
        std::fs::create_dir_all(root.join("aiter/jit")).unwrap();
        std::fs::write(
            root.join("aiter/jit/optCompilerConfig.json"),
            r#"{"module_none": {"srcs": [], "blob_gen_cmd": "''"},
                "module_some": {"srcs": [], "blob_gen_cmd": ["''", "f'{AITER_CSRC_DIR}/gen.py --out {{}}'"]}}"#,
        )
        .unwrap();
        let directives = crate::build_script::Directives::new(false);
        let env = Env::new(&directives);
        let paths = AiterPaths::new(&root, "gfx942", &env).unwrap();
        let none = load(&paths, "module_none", &BTreeMap::new(), &env).unwrap();
        assert_eq!(none.blob_gen_cmd, Vec::<String>::new());
        let some = load(&paths, "module_some", &BTreeMap::new(), &env).unwrap();
        assert_eq!(
            some.blob_gen_cmd,
            vec![format!("{}/csrc/gen.py --out {{}}", root.display())]
        );
    }

    #[test]
    fn overrides_rewrite_receipts_drop_directions_and_pin_targets() {
        let mut recipe = ModuleRecipe {
            srcs: vec!["/a/x.cu".into(), "/a/y.cu".into()],
            blob_gen_cmd: vec![
                "/ck/01_fmha/generate.py -d fwd --receipt 600 --output_dir {}".into(),
                "/ck/01_fmha/generate.py -d fwd_splitkv --receipt 600 --output_dir {}".into(),
            ],
            ..ModuleRecipe::named("libmha_fwd")
        };
        let module = crate::manifest::Module {
            name: "libmha_fwd".into(),
            receipt: Some(700),
            drop_srcs: vec!["y.cu".into()],
            drop_directions: vec!["fwd_splitkv".into()],
            md_name: Some("libqola_fwd".into()),
            ..Default::default()
        };
        let warnings = apply_overrides(&mut recipe, &module, &["gfx942".to_string()]);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(recipe.srcs, vec![PathBuf::from("/a/x.cu")]);
        assert_eq!(
            recipe.blob_gen_cmd,
            vec![
                "/ck/01_fmha/generate.py -d fwd --receipt 700 --output_dir {} --targets gfx942"
                    .to_string()
            ]
        );
        assert_eq!(recipe.name, "libqola_fwd");
    }
}
