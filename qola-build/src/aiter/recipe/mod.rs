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

mod api_generation;
mod command;
mod core_flags;
mod entry;
mod evaluate;
mod python;
mod rocm_needs;
mod tuned_tables;

pub use api_generation::{
    ApiGeneration, ForwardExtra, TreeApi, detect as detect_api_generation, read_api,
};
pub(crate) use command::{ck_direction, generator_argv, with_ck_filter};
pub use core_flags::CoreFlags;
pub(crate) use core_flags::core_flags;
pub(crate) use entry::{apply_overrides, load};
pub(crate) use python::{CheckedPython, generator_python, needs_of as python_needs};
pub(crate) use rocm_needs::{check as check_rocm_needs, rocm_versions_mismatch};

use crate::aiter::AiterError;
use crate::build_script::Env;

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

#[cfg(test)]
mod tests {
    use super::*;

    use super::evaluate::Eval;
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
}
