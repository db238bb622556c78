//! A module's build recipe from AITER's `aiter/jit/optCompilerConfig.json`, evaluated without
//! Python.
//!
//! Every field of an entry is a Python expression in a string. The small language those entries
//! use is evaluated here: string literals (`'-DFOO=1'`), f-strings over the known path variables
//! (`f'{CK_DIR}/example/...'`, `{{}}` for the output-directory placeholder), `get_asm_dir()`,
//! `get_gfx()`, `os.environ.get(NAME[, default])` (read through qola's environment helper), and
//! `None`, `True`, `False`. Anything else is an error naming the module and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod core_flags;
mod rocm_needs;
mod tuned_tables;

pub use core_flags::CoreFlags;
pub(crate) use core_flags::core_flags;
pub(crate) use rocm_needs::check as check_rocm_needs;

use crate::aiter::AiterError;
use crate::build_script::Env;
use crate::common::text::{python_quoted, python_unescape};

/// The recipe's own errors: an expression of AITER's config it cannot evaluate.
type Result<T, E = AiterError> = std::result::Result<T, E>;

/// Where the AITER tree's parts are, as AITER's `core.py` names them and QoLA's resolver
/// reconstructs them: `AITER_ROOT_DIR` is the prepared checkout; `AITER_META_DIR` (its `csrc`,
/// `gradlib`, `hsa` and `3rdparty`) is the checkout too, unless the environment's
/// `AITER_META_DIR` names a directory with a `csrc` (an installed AITER's `aiter_meta`), as
/// QoLA honours it.
#[derive(Debug, Clone)]
pub struct AiterPaths {
    /// The prepared checkout (`AITER_ROOT_DIR`).
    pub root: PathBuf,
    /// `AITER_META_DIR`: the checkout, or the environment's.
    pub meta: PathBuf,
    /// The architecture `get_gfx()` answers (the first one compiled for).
    pub arch: String,
    /// Where tuned tables AITER would merge are merged (in qola's cache); `None`: such a merge
    /// is an error.
    pub(crate) tuned_tables: Option<PathBuf>,
}

impl AiterPaths {
    /// The paths of the checkout at `root` for `arch`, `AITER_META_DIR` read through `env`.
    pub(crate) fn new(root: &Path, arch: &str, env: &Env) -> Result<AiterPaths> {
        let meta = match env.var_os("AITER_META_DIR") {
            Some(dir) if Path::new(&dir).join("csrc").is_dir() => {
                std::path::absolute(&dir).unwrap_or_else(|_| PathBuf::from(dir))
            }
            _ => root.to_path_buf(),
        };
        Ok(AiterPaths {
            root: root.to_path_buf(),
            meta,
            arch: arch.to_string(),
            tuned_tables: None,
        })
    }

    /// These paths, merging tuned tables under `cache` (qola's cache directory).
    pub(crate) fn merging_tables_in(mut self, cache: &Path) -> AiterPaths {
        self.tuned_tables = Some(cache.join(crate::cache_dir::TUNED_TABLES));
        self
    }

    /// The value of a path variable, or `None` for an unknown name.
    pub(crate) fn variable(&self, name: &str, env: &Env) -> Result<Option<String>> {
        let root = self.root.to_string_lossy();
        let meta = self.meta.to_string_lossy();
        Ok(Some(match name {
            "AITER_ROOT_DIR" => root.into_owned(),
            "AITER_META_DIR" => meta.into_owned(),
            "AITER_CSRC_DIR" => format!("{meta}/csrc"),
            "AITER_GRADLIB_DIR" => format!("{meta}/gradlib"),
            "CK_HELPER_DIR" => format!("{meta}/3rdparty/ck_helper"),
            "CK_DIR" | "CK_3RDPARTY_DIR" => match env.var("CK_DIR")? {
                Some(dir) => dir,
                None => format!("{meta}/3rdparty/composable_kernel"),
            },
            "AITER_ASM_DIR" => format!("{meta}/hsa/{}/", self.arch),
            other => match other.strip_suffix("_FILE") {
                Some(table) if table.starts_with("AITER_CONFIG_") => {
                    self.tuned_table(table, env)?
                }
                _ => return Ok(None),
            },
        }))
    }

    /// A tuned table of AITER's configs (`AITER_CONFIG_GEMM_A4W4_FILE`), as `core.py` picks it:
    /// the environment's `AITER_CONFIG_GEMM_A4W4` (a `:`-separated list) when set, else the
    /// default `core.py` names (`{AITER_ROOT_DIR}/aiter/configs/<table>.csv`) and every
    /// `model_configs/*<table>*.csv` that is not untuned; several are merged as AITER merges
    /// them (see `tuned_tables`).
    fn tuned_table(&self, variable: &str, env: &Env) -> Result<String> {
        let fail = |why: String| AiterError::AiterConfig {
            module: "(AITER's configs)".to_string(),
            field: format!("{variable}_FILE"),
            expression: variable.to_string(),
            why,
        };
        let core = self.root.join("aiter/jit/core.py");
        let text = std::fs::read_to_string(&core).unwrap_or_default();
        let default = text
            .split(&format!("{variable} = os.getenv("))
            .nth(1)
            .and_then(|rest| rest.split("AITER_ROOT_DIR}/").nth(1))
            .and_then(|rest| rest.split('"').next())
            .map(|rel| self.root.join(rel))
            .ok_or_else(|| {
                fail(format!(
                    "{} names no default table for {variable}; set {variable} to the table",
                    core.display()
                ))
            })?;
        let name = default
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let listed: Vec<PathBuf> = match env.var(variable)? {
            Some(given) => given.split(':').map(PathBuf::from).collect(),
            None => {
                let mut models: Vec<PathBuf> =
                    std::fs::read_dir(self.root.join("aiter/configs/model_configs"))
                        .into_iter()
                        .flatten()
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| {
                            let n = p.file_name().unwrap_or_default().to_string_lossy();
                            n.contains(&name) && n.ends_with(".csv") && !n.contains("untuned")
                        })
                        .collect();
                models.sort();
                std::iter::once(default).chain(models).collect()
            }
        };
        let merged = match (&listed[..], &self.tuned_tables) {
            ([one], _) => one.clone(),
            (_, Some(dir)) => tuned_tables::merged(&self.root, &name, &listed, dir)
                .map_err(|why| fail(format!("merging {name}: {why}")))?,
            (_, None) => {
                return Err(fail(format!(
                    "{name} is merged from several tables, which this evaluation has no cache to write into"
                )));
            }
        };
        Ok(merged.to_string_lossy().into_owned())
    }
}

/// A module's recipe with every expression evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModuleRecipe {
    /// The module's name (`libmha_fwd`).
    pub name: String,
    /// Listed sources.
    pub srcs: Vec<PathBuf>,
    /// Extra flags for C++ host compiles.
    pub flags_extra_cc: Vec<String>,
    /// Extra flags for HIP compiles.
    pub flags_extra_hip: Vec<String>,
    /// Extra include directories.
    pub extra_include: Vec<PathBuf>,
    /// Code generator commands (a Python script and its arguments), `{}` standing for the
    /// output directory.
    pub blob_gen_cmd: Vec<String>,
    /// The hsa kernels (subdirectories of `hsa/<arch>/`) whose configs the module's sources
    /// include (see `needs`): what it embeds unless the manifest says.
    pub hsa_kernels: Vec<String>,
    /// Flags for the shared library's link (`extra_ldflags`; `None` evaluates to none).
    pub extra_ldflags: Vec<String>,
    /// Show this module's compile commands (`verbose`), as AITER's `build_module` does.
    pub verbose: bool,
    /// The clang directory hipcc runs for this module (`hip_clang_path`: `HIP_CLANG_PATH` of
    /// its compiles, as AITER sets it), when the entry or the manifest names one.
    pub hip_clang_path: Option<PathBuf>,
    /// The third-party checkouts AITER's build would fetch for the module (`third_party`).
    pub third_party: Vec<String>,
    /// HIP flags for single sources (`flags_extra_hip_per_source`): a source path or wildcard
    /// (matched against the source's path and its file name), and the flags.
    pub flags_extra_hip_per_source: Vec<(String, Vec<String>)>,
    /// Where each generator not of AITER's recipe was named (a registry's file, line and
    /// value), by its command: said when it fails.
    pub origins: BTreeMap<String, String>,
}

#[cfg(test)]
impl ModuleRecipe {
    /// A recipe named `name` with nothing in it, for tests to fill.
    pub(crate) fn named(name: &str) -> ModuleRecipe {
        ModuleRecipe {
            name: name.to_string(),
            srcs: vec![],
            flags_extra_cc: vec![],
            flags_extra_hip: vec![],
            extra_include: vec![],
            blob_gen_cmd: vec![],
            hsa_kernels: vec![],
            extra_ldflags: vec![],
            verbose: false,
            hip_clang_path: None,
            third_party: vec![],
            flags_extra_hip_per_source: vec![],
            origins: BTreeMap::new(),
        }
    }
}

/// An evaluated expression.
#[derive(Debug, Clone, PartialEq)]
enum Eval {
    Str(String),
    None,
    Bool(bool),
}

struct Evaluator<'a> {
    module: &'a str,
    field: &'a str,
    paths: &'a AiterPaths,
    env: &'a Env<'a>,
}

impl Evaluator<'_> {
    fn fail(&self, expr: &str, why: &str) -> AiterError {
        AiterError::AiterConfig {
            module: self.module.to_string(),
            field: self.field.to_string(),
            expression: expr.to_string(),
            why: why.to_string(),
        }
    }

    fn eval(&self, expr: &str) -> Result<Eval> {
        let e = expr.trim();
        match e {
            "None" => return Ok(Eval::None),
            "True" => return Ok(Eval::Bool(true)),
            "False" => return Ok(Eval::Bool(false)),
            _ => {}
        }
        if let Some(body) = e.strip_prefix('f') {
            let inner =
                python_quoted(body).ok_or_else(|| self.fail(expr, "an f-string must be quoted"))?;
            return self.fstring(expr, inner).map(Eval::Str);
        }
        if let Some(inner) = python_quoted(e) {
            return Ok(Eval::Str(python_unescape(inner)));
        }
        self.call(expr, e)
    }

    /// `os.environ.get(...)`, `get_asm_dir()`, `get_gfx()`, or a path variable.
    fn call(&self, whole: &str, e: &str) -> Result<Eval> {
        if let Some(args) = e
            .strip_prefix("os.environ.get(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let (name, default) = match split_args(args).as_slice() {
                [name] => (name.clone(), None),
                [name, default] => (name.clone(), Some(default.clone())),
                _ => return Err(self.fail(whole, "os.environ.get takes a name and a default")),
            };
            let name = python_quoted(&name)
                .map(python_unescape)
                .ok_or_else(|| self.fail(whole, "the variable name must be a string literal"))?;
            return Ok(match self.env.var(&name)? {
                Some(value) => Eval::Str(value),
                None => match default {
                    None => Eval::None,
                    Some(d) if d.parse::<i64>().is_ok() || d.parse::<f64>().is_ok() => Eval::Str(d),
                    Some(d) => self.eval(&d)?,
                },
            });
        }
        match e {
            "get_asm_dir()" => Ok(Eval::Str(format!(
                "{}/hsa/{}/",
                self.paths.meta.display(),
                self.paths.arch
            ))),
            "get_gfx()" => Ok(Eval::Str(self.paths.arch.clone())),
            // Newer AITERs read their tuned tables through the AITER_CONFIGS object.
            name if name.starts_with("AITER_CONFIGS.") => self
                .paths
                .variable(&name["AITER_CONFIGS.".len()..], self.env)?
                .map(Eval::Str)
                .ok_or_else(|| self.fail(whole, &format!("unknown variable `{name}`"))),
            name if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => self
                .paths
                .variable(name, self.env)?
                .map(Eval::Str)
                .ok_or_else(|| self.fail(whole, &format!("unknown variable `{name}`"))),
            _ => Err(self.fail(
                whole,
                "outside the language qola evaluates (literals, f-strings over path variables, os.environ.get, get_asm_dir(), get_gfx())",
            )),
        }
    }

    fn fstring(&self, whole: &str, body: &str) -> Result<String> {
        let mut out = String::new();
        let chars: Vec<char> = body.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '{' if chars.get(i + 1) == Some(&'{') => {
                    out.push('{');
                    i += 2;
                }
                '}' if chars.get(i + 1) == Some(&'}') => {
                    out.push('}');
                    i += 2;
                }
                '{' => {
                    let end = matching_brace(&chars, i)
                        .ok_or_else(|| self.fail(whole, "unbalanced `{` in the f-string"))?;
                    let inner: String = chars[i + 1..end].iter().collect();
                    match self.eval(&inner)? {
                        // A path with a space stays one word of a generator's command.
                        Eval::Str(s)
                            if self.field == "blob_gen_cmd"
                                && s.chars().any(char::is_whitespace)
                                && !in_quotes(&out) =>
                        {
                            let q = if s.contains('"') { '\'' } else { '"' };
                            out.push_str(&format!("{q}{s}{q}"));
                        }
                        Eval::Str(s) => out.push_str(&s),
                        Eval::Bool(b) => out.push_str(if b { "True" } else { "False" }),
                        Eval::None => out.push_str("None"),
                    }
                    i = end + 1;
                }
                '\\' if i + 1 < chars.len() => {
                    out.push(chars[i + 1]);
                    i += 2;
                }
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        Ok(out)
    }
}

/// Whether `text` ends inside a quoted word (as [`shell_words`] reads it).
fn in_quotes(text: &str) -> bool {
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            _ => {}
        }
    }
    quote.is_some()
}

/// The `}` closing the `{` at `open`, skipping quoted text.
fn matching_brace(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits call arguments at top-level commas.
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, ',') => out.push(std::mem::take(&mut current).trim().to_string()),
            (None, c) => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

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
    let strings = |field: &str| -> Result<Vec<String>> {
        let ev = Evaluator {
            module,
            field,
            paths,
            env,
        };
        let items: Vec<&Value> = match entry.get(field) {
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
    };
    let flag = |field: &str| -> Result<bool> {
        let ev = Evaluator {
            module,
            field,
            paths,
            env,
        };
        match entry.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(expr)) => match ev.eval(expr)? {
                Eval::Bool(b) => Ok(b),
                Eval::None => Ok(false),
                Eval::Str(_) => Err(ev.fail(expr, "a string where True or False is expected")),
            },
            Some(other) => Err(ev.fail(&other.to_string(), "not True or False")),
        }
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
        if flag(field)? {
            return Err(AiterError::AiterConfig {
                module: module.to_string(),
                field: field.to_string(),
                expression: "True".to_string(),
                why: why.to_string(),
            });
        }
    }
    let per_source = per_source_flags(module, entry.get("flags_extra_hip_per_source"))?;
    let hip_clang_path = strings("hip_clang_path")?
        .into_iter()
        .next()
        .map(PathBuf::from);
    Ok(ModuleRecipe {
        name: module.to_string(),
        extra_ldflags: strings("extra_ldflags")?,
        verbose: flag("verbose")?,
        hip_clang_path,
        third_party: strings("third_party")?,
        flags_extra_hip_per_source: per_source,
        origins: BTreeMap::new(),
        srcs: strings("srcs")?.into_iter().map(PathBuf::from).collect(),
        flags_extra_cc: strings("flags_extra_cc")?,
        flags_extra_hip: strings("flags_extra_hip")?,
        extra_include: strings("extra_include")?
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        blob_gen_cmd: strings("blob_gen_cmd")?,
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

/// `cmd` with the value after every `option` replaced by `value`.
fn replace_option(cmd: &str, option: &str, value: &str) -> String {
    let mut words: Vec<String> = cmd.split(' ').map(String::from).collect();
    for i in 0..words.len().saturating_sub(1) {
        if words[i] == option {
            words[i + 1] = value.to_string();
        }
    }
    words.join(" ")
}

/// The recipe's generator scripts resolved: each command's script path and its arguments with
/// `{}` replaced by `out_dir`.
pub(crate) fn generator_argv(cmd: &str, out_dir: &Path) -> Vec<String> {
    // Split first: a directory with a space in its name stays one argument.
    shell_words(cmd)
        .into_iter()
        .map(|word| word.replace("{}", &out_dir.to_string_lossy()))
        .collect()
}

/// The `-d` direction of CK's fmha generator command (`None` for any other generator).
pub(crate) fn ck_direction(cmd: &str) -> Option<&str> {
    if !cmd.contains("01_fmha/generate.py") {
        return None;
    }
    option_value(cmd, "-d")
}

/// The word after the first `option` of a command (`-d fwd`: `fwd`).
pub(crate) fn option_value<'a>(cmd: &'a str, option: &str) -> Option<&'a str> {
    let mut words = cmd.split_whitespace();
    words.find(|w| *w == option)?;
    words.next()
}

/// `cmd` with CK instance filter `filter`, for narrow builds: it replaces the argument of the
/// command's own `--filter` (AITER's backward pre/post kernel generator has one), and is
/// appended to CK's fmha `generate.py` and to a generator whose script takes a `--filter`
/// (`takes_filter`: the a4w4 blockscale's `gen_instances.py` with qola's series); `None` for
/// any other generator, which takes no filter.
pub(crate) fn with_ck_filter(cmd: &str, filter: &str, takes_filter: bool) -> Option<String> {
    let mut words = shell_words(cmd);
    if let Some(i) = words.iter().position(|w| w == "--filter") {
        match words.get_mut(i + 1) {
            Some(word) => *word = filter.to_string(),
            None => words.push(filter.to_string()),
        }
    } else if cmd.contains("01_fmha/generate.py") || takes_filter {
        words.extend(["--filter".to_string(), filter.to_string()]);
    } else {
        return None;
    }
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if w.chars().any(char::is_whitespace) {
                format!("\"{w}\"")
            } else {
                w.clone()
            }
        })
        .collect();
    Some(quoted.join(" "))
}

/// Splits a command on spaces, keeping double- or single-quoted words whole (quotes removed).
fn shell_words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in cmd.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_directory_with_spaces_stays_one_argument() {
        let argv = generator_argv(
            "/a/generate.py -d fwd --output_dir {} --filter \"x y\"",
            Path::new("/build dir/gen"),
        );
        assert_eq!(
            argv,
            [
                "/a/generate.py",
                "-d",
                "fwd",
                "--output_dir",
                "/build dir/gen",
                "--filter",
                "x y"
            ]
        );
    }

    #[test]
    fn a_ck_filter_replaces_a_generators_own_and_is_appended_to_cks_generate_py() {
        assert_eq!(
            with_ck_filter(
                "/a/01_fmha/generate.py -d bwd --output_dir {}",
                "x*@y@z",
                false
            ),
            Some("/a/01_fmha/generate.py -d bwd --output_dir {} --filter x*@y@z".to_string())
        );
        assert_eq!(
            with_ck_filter(
                r#"/a/pre_post_generate.py --filter "*@*_nd@*" --output_dir {}"#,
                "x@y@z",
                false
            ),
            Some("/a/pre_post_generate.py --filter x@y@z --output_dir {}".to_string())
        );
        assert_eq!(
            with_ck_filter("/a/codegen.py --output_dir {}", "x", false),
            None
        );
        assert_eq!(
            with_ck_filter("/a/gen_instances.py --working_path {}", "a|b", true),
            Some("/a/gen_instances.py --working_path {} --filter a|b".to_string())
        );
    }
    use crate::build_script::Directives;

    fn eval(expr: &str) -> Result<Eval> {
        eval_at("/a", "f", expr)
    }

    /// `expr` of `field` for a tree at `root`.
    fn eval_at(root: &str, field: &str, expr: &str) -> Result<Eval> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let paths = AiterPaths {
            root: PathBuf::from(root),
            meta: PathBuf::from(root),
            arch: "gfx942".to_string(),
            tuned_tables: None,
        }
        .merging_tables_in(Path::new(root).join("cache").as_path());
        Evaluator {
            module: "m",
            field,
            paths: &paths,
            env: &env,
        }
        .eval(expr)
    }

    #[test]
    fn a_tuned_table_is_the_one_core_py_names_or_its_merge_with_the_models_tables() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("tree");
        let core = "AITER_CONFIG_QOLA_T = os.getenv(\n    \"AITER_CONFIG_QOLA_T\",\n    f\"{AITER_ROOT_DIR}/aiter/configs/qola_t_tuned.csv\",\n)\n";
        std::fs::create_dir_all(root.join("aiter/configs/model_configs")).unwrap();
        std::fs::create_dir_all(root.join("aiter/jit")).unwrap();
        std::fs::write(root.join("aiter/jit/core.py"), core).unwrap();
        let default = root.join("aiter/configs/qola_t_tuned.csv");
        std::fs::write(&default, "gfx,cu_num,M\ngfx950,256,1\n").unwrap();
        let table = |expr: &str| eval_at(&root.display().to_string(), "blob_gen_cmd", expr);
        assert_eq!(
            table("f'--tune_file {AITER_CONFIG_QOLA_T_FILE}'").unwrap(),
            Eval::Str(format!("--tune_file {}", default.display()))
        );
        // A model's table beside it (its untuned one aside): the two merged, in qola's cache.
        let model = root.join("aiter/configs/model_configs/m_qola_t_tuned.csv");
        std::fs::write(&model, "gfx,cu_num,M\ngfx950,256,2\n").unwrap();
        std::fs::write(model.with_file_name("m_qola_t_untuned.csv"), "M\n3\n").unwrap();
        let Eval::Str(merged) = table("AITER_CONFIGS.AITER_CONFIG_QOLA_T_FILE").unwrap() else {
            panic!("a path");
        };
        assert!(merged.starts_with(&format!("{}/cache/tuned-tables/", root.display())));
        assert_eq!(
            std::fs::read_to_string(&merged).unwrap(),
            "gfx,cu_num,M\ngfx950,256,1\ngfx950,256,2\n"
        );
        // A merge that fails names the table and what to do.
        std::fs::write(&model, "gfx,cu_num,M\ngfx950,256,\"1\"\n").unwrap();
        let e = table("f'{AITER_CONFIG_QOLA_T_FILE}'").unwrap_err();
        assert!(
            e.to_string().contains("merging qola_t_tuned:")
                && e.to_string()
                    .contains("m_qola_t_tuned.csv has a quoted field"),
            "{e}"
        );
    }

    #[test]
    fn a_tree_path_with_spaces_stays_one_word_of_a_generator_command() {
        let cmd = "f'{AITER_CSRC_DIR}/gen.py --working_path {{}} --x \"{AITER_META_DIR}/y\"'";
        let Eval::Str(cmd) = eval_at("/my tree", "blob_gen_cmd", cmd).unwrap() else {
            panic!("a string");
        };
        assert_eq!(
            generator_argv(&cmd, Path::new("/out")),
            [
                "/my tree/csrc/gen.py",
                "--working_path",
                "/out",
                "--x",
                "/my tree/y"
            ]
        );
        assert_eq!(
            eval_at("/my tree", "srcs", "f'{AITER_CSRC_DIR}/a.cu'").unwrap(),
            Eval::Str("/my tree/csrc/a.cu".into()),
            "a path elsewhere is the path"
        );
    }

    #[test]
    fn the_config_language_evaluates() {
        assert_eq!(eval("'-DX=1'").unwrap(), Eval::Str("-DX=1".into()));
        assert_eq!(
            eval("f'{CK_DIR}/example/generate.py -d fwd --output_dir {{}}'").unwrap(),
            Eval::Str(
                "/a/3rdparty/composable_kernel/example/generate.py -d fwd --output_dir {}".into()
            )
        );
        assert_eq!(
            eval(r#"f'-DY={os.environ.get("QOLA_SURELY_UNSET_VARIABLE", 2)}'"#).unwrap(),
            Eval::Str("-DY=2".into())
        );
        assert_eq!(
            eval("os.environ.get('QOLA_SURELY_UNSET_VARIABLE')").unwrap(),
            Eval::None
        );
        assert_eq!(
            eval("f'{get_asm_dir()}/fmha_v3_fwd/codegen.py'").unwrap(),
            Eval::Str("/a/hsa/gfx942//fmha_v3_fwd/codegen.py".into())
        );
        assert_eq!(eval("None").unwrap(), Eval::None);
        assert_eq!(eval("True").unwrap(), Eval::Bool(true));
    }

    #[test]
    fn anything_else_is_an_error_naming_module_and_field() {
        for bad in [
            "__import__('os').system('x')",
            "f'{open(\"x\")}'",
            "f'{NOT_A_VARIABLE}'",
            "1 + 1",
        ] {
            let e = eval(bad).unwrap_err();
            let message = e.to_string();
            assert!(
                message.contains("module m") && message.contains("field f"),
                "{bad}: {message}"
            );
        }
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
