//! The QoLA manifest (TOML), with the meaning QoLA gives each key, as TransformerEngine writes it:
//!
//! ```toml
//! [qola]
//! aiter_commit = "05a0d1f060af14e789696479de71a2fc2fbaada9"
//! aiter_url = "https://github.com/ROCm/aiter.git"   # new in qola; this is the default
//! namespace = "te"               # libraries <ns>_<md_name>.so, C++ API qola::<ns>::
//! patches_dir = "patches/aiter"  # relative to this file; absent: qola's own series
//! rocm_versions = ["6"]          # informational: a warning when the HIP version differs
//!
//! [build]
//! architectures = ["gfx942"]     # or "gfx942;gfx950"
//! mode = "cpp_itfs"              # the only mode qola builds; `pybind` needs PyTorch
//!
//! [[modules]]
//! name = "libmha_fwd"            # an entry of AITER's aiter/jit/optCompilerConfig.json
//! group = "mha"                  # `qola build --group` / QOLA_BUILD_GROUPS select groups
//! mode = "cpp_itfs"
//! receipt = 700                  # replaces `--receipt N` of the module's generators
//! drop_srcs = ["mha_fwd_split.cu"]          # by file name
//! drop_directions = ["fwd_splitkv"]         # generators whose `-d` is one of these
//! hsa_subdirs = ["fmha_v3_fwd"]  # absent: qola's defaults for the module
//! md_name = "libmha_fwd"
//! flags_extra_hip = ["'-DFOO=1'"]  # any optCompilerConfig field, an expression as there
//!
//! [[mha_fwd_variants]]           # narrows CK's forward instances ([[mha_variants]]: QoLA's older
//!                                # name); an absent option: every value, a list: those values
//! dtype = ["bf16", "fp16"]
//! has_lse = true
//!
//! [[mha_bwd_variants]]
//! dtype = ["bf16", "fp16"]
//! ```
//!
//! Reading never stops at the first mistake: every unknown key, wrong type and bad value of the
//! file is reported in one error, each as `file:line: key: what`. Only `[qola]` affects
//! preparation; the rest is read by the compile steps.

mod error;
mod read;
pub mod variants;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use error::ManifestError;
pub use variants::{Variant, VariantFilters};

/// A parsed manifest.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Manifest {
    /// The `[qola]` table: what to prepare.
    pub qola: QolaTable,
    /// The `[build]` table: how to compile.
    pub build: BuildTable,
    /// The `[[modules]]` entries: which AITER modules to compile.
    pub modules: Vec<Module>,
    /// `[[mha_fwd_variants]]`: the forward attention variants to generate.
    pub mha_fwd_variants: Vec<Variant>,
    /// `[[mha_bwd_variants]]`: the backward attention variants to generate.
    pub mha_bwd_variants: Vec<Variant>,
    /// The manifest file (absolute), set when read from a file.
    pub path: PathBuf,
}

/// `[qola]`: the source to prepare.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct QolaTable {
    /// AITER commit: a full or short SHA, a tag or a branch.
    pub aiter_commit: Option<String>,
    /// AITER repository URL (default `https://github.com/ROCm/aiter.git`).
    pub aiter_url: Option<String>,
    /// The namespace of the built libraries: file prefix `<ns>_`, C++ namespace `qola::<ns>::`.
    pub namespace: Option<String>,
    /// The patch series directory, relative to the manifest file (made absolute on reading).
    pub patches_dir: Option<PathBuf>,
    /// ROCm versions the manifest was written for (`"6"`, `"6.4"`). Informational, as in QoLA:
    /// `qola build` warns when the compiler's HIP version starts with none of them, and fails
    /// only with `--require-rocm` ([`crate::OutputBuild::require_rocm`]). Empty: any.
    pub rocm_versions: Vec<String>,
}

/// `[build]`: compile settings.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BuildTable {
    /// GPU architectures (`["gfx942"]` or `"gfx942;gfx950"`).
    pub architectures: Vec<String>,
    /// The default build mode of the modules.
    pub mode: Option<BuildMode>,
}

/// How QoLA builds a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildMode {
    /// A shared library with a C++ API and no PyTorch (`cpp_itfs`): what qola builds.
    CppItfs,
    /// A Python extension module linked against PyTorch (`pybind`): qola refuses it.
    Pybind,
}

/// One `[[modules]]` entry: an AITER module and QoLA's overrides of its build recipe.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Module {
    /// The module's name in AITER's `optCompilerConfig.json` (for example `libmha_fwd`).
    pub name: String,
    /// The group the module belongs to (`--group`, `QOLA_BUILD_GROUPS`).
    pub group: Option<String>,
    /// The module's build mode (default: `[build] mode`, else `cpp_itfs`).
    pub mode: Option<BuildMode>,
    /// Replaces every `--receipt N` of the module's code generators.
    pub receipt: Option<i64>,
    /// Sources to drop from the module, by file name.
    pub drop_srcs: Vec<String>,
    /// Directions (`-d` of a generator: `fwd_splitkv`, `batch_prefill`, ...) to drop.
    pub drop_directions: Vec<String>,
    /// hsa subdirectories whose code objects to embed (`None`: qola's defaults for the module).
    pub hsa_subdirs: Option<Vec<String>>,
    /// The library's name (default: the module's name).
    pub md_name: Option<String>,
    /// optCompilerConfig fields given in the manifest (`srcs`, `flags_extra_hip`, ...), merged
    /// into the module's entry before it is evaluated, as JSON values.
    pub recipe: BTreeMap<String, serde_json::Value>,
    /// The manifest line of the entry (for messages).
    pub line: usize,
}

impl Module {
    /// The library's name: `md_name`, else the module's name.
    pub fn md_name(&self) -> &str {
        self.md_name.as_deref().unwrap_or(&self.name)
    }
}

/// One mistake in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// 1-based line.
    pub line: usize,
    /// The key concerned, as `[table] key`, or `syntax`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.key, self.message)
    }
}

impl Manifest {
    /// Reads and checks a manifest file; `patches_dir` becomes absolute (relative to the file).
    pub fn from_path(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut manifest = Manifest::from_str_at(&text, &path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        manifest.qola.patches_dir = manifest.qola.patches_dir.map(|p| dir.join(p));
        manifest.path = path;
        Ok(manifest)
    }

    /// Parses manifest text; `path` is used in error messages only.
    pub fn from_str_at(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        read::read(text).map_err(|problems| ManifestError::Invalid {
            path: path.to_path_buf(),
            problems,
        })
    }

    /// The CK filters of `[[mha_fwd_variants]]` and `[[mha_bwd_variants]]`.
    pub fn variant_filters(&self) -> Result<VariantFilters, ManifestError> {
        variants::filters(&self.mha_fwd_variants, &self.mha_bwd_variants).map_err(|problem| {
            ManifestError::Variants {
                path: self.path.clone(),
                problem,
            }
        })
    }

    /// The namespace, when one is set and not empty.
    pub fn namespace(&self) -> Option<&str> {
        self.qola.namespace.as_deref().filter(|n| !n.is_empty())
    }
}

#[cfg(test)]
mod tests;
