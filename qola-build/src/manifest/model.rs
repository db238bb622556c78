//! What a manifest says, as data (see the module docs for each key).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::manifest::variants::Variant;

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
    /// The patch series directory as written: relative to the manifest file, or to the working
    /// directory where only that reading exists (QoLA's; a warning names both).
    pub patches_dir: Option<PathBuf>,
    /// A registry in QoLA's format (qola's key; relative to the manifest file) adding modules to
    /// qola's and replacing its entries (see [`crate::aiter::registry`]).
    pub registry: Option<PathBuf>,
    /// Where prebuilt libraries are fetched from by their key (qola's key; `file://` or
    /// `http(s)://`; see `qola build --prebuilt`).
    pub prebuilt: Option<String>,
    /// ROCm versions the manifest was written for (`"6"`, `"6.4"`). Informational, as in QoLA:
    /// `qola build` warns when the compiler's HIP version starts with none of them, and fails
    /// only with `--require-rocm` ([`crate::OutputBuild::require_rocm`]). Empty: any.
    pub rocm_versions: Vec<String>,
    /// The publishers whose prebuilt archives are taken (qola's key): minisign public keys
    /// (`RW...`) or `.pub` files relative to the manifest; under `--trust` and
    /// `QOLA_TRUSTED_KEYS` (see `qola build --trust`). Empty: archives are not checked for a
    /// publisher.
    pub trusted_keys: Vec<String>,
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
    /// The manifest line of each key the entry gives (for messages).
    pub lines: BTreeMap<String, usize>,
    /// The manifest file (for messages; empty for a manifest read from text alone).
    pub manifest: PathBuf,
}

impl Module {
    /// Whether the manifest's entry gives `key` (as opposed to AITER's entry or a default).
    pub fn gives(&self, key: &str) -> bool {
        self.lines.contains_key(key)
    }

    /// The library's name: `md_name`, else the module's name.
    pub fn md_name(&self) -> &str {
        self.md_name.as_deref().unwrap_or(&self.name)
    }
}
