//! A module's build recipe from AITER's `aiter/jit/optCompilerConfig.json`, evaluated without
//! Python.
//!
//! Every field of an entry is a Python expression in a string. The small language those entries
//! use is evaluated by `evaluate`: string literals (`'-DFOO=1'`), f-strings over the known path variables
//! (`f'{CK_DIR}/example/...'`, `{{}}` for the output-directory placeholder), `get_asm_dir()`,
//! `get_gfx()`, `os.environ.get(NAME[, default])` (read through qola's environment helper), and
//! `None`, `True`, `False`. Anything else is an error naming the module and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod command;
mod core_flags;
mod evaluate;
mod rocm_needs;
mod tuned_tables;

use command::replace_option;
pub(crate) use command::{ck_direction, generator_argv, option_value, with_ck_filter};
pub use core_flags::CoreFlags;
pub(crate) use core_flags::core_flags;
use evaluate::{Eval, Evaluator};
pub(crate) use rocm_needs::{check as check_rocm_needs, rocm_versions_mismatch};

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

/// The architecture AITER's `get_gfx()` picks among several: the last entry of `GPU_ARCHS`, in
/// the order given (`gfx942;gfx950` picks gfx950). Its gfx-conditional flags (`core.py`'s
/// `-D__Float4_e2m1fn_x2`, `-DAITER_ENABLE_CLUSTER_LAUNCH`) and `hsa/<arch>` follow it, at every
/// pin qola reads (05a0d1f to a50a62a).
pub(crate) fn aiter_gfx(archs: &[String]) -> &str {
    archs.last().map_or("", String::as_str)
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
        // An empty command runs no generator, as in AITER (`if blob_gen_cmd:`).
        blob_gen_cmd: strings("blob_gen_cmd")?
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

#[cfg(test)]
mod tests {
    use super::*;

    use super::evaluate::tests::eval_at;

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
