//! The QoLA manifest (TOML), with the meaning QoLA gives each key, as TransformerEngine writes it:
//!
//! ```toml
//! [qola]
//! aiter_commit = "05a0d1f060af14e789696479de71a2fc2fbaada9"
//! aiter_url = "https://github.com/ROCm/aiter.git"   # new in qola; this is the default
//! namespace = "te"               # libraries <ns>_<md_name>.so, C++ API qola::<ns>::
//! patches_dir = "patches/aiter"  # relative to this file (or to the working directory where
//!                                # only that exists, with a warning); absent: qola's own series
//! rocm_versions = ["6"]          # informational: a warning when the HIP version differs
//!
//! [build]
//! architectures = ["gfx942"]     # or "gfx942;gfx950"
//! mode = "cpp_itfs"              # the only mode qola builds; `pybind` needs PyTorch
//!
//! [[modules]]
//! name = "libmha_fwd"            # an entry of AITER's aiter/jit/optCompilerConfig.json
//! group = "mha"                  # `qola build --group "a;b"` / QOLA_BUILD_GROUPS select groups
//! mode = "cpp_itfs"
//! receipt = 700                  # replaces `--receipt N` of the module's generators
//! drop_srcs = ["mha_fwd_split.cu"]          # by file name
//! drop_directions = ["fwd_splitkv"]         # generators whose `-d` is one of these
//! hsa_subdirs = ["fmha_v3_fwd"]  # absent: qola's defaults for the module
//! md_name = "'libmha_fwd'"       # the library's name: a Python string, as QoLA evaluates it
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
mod model;
mod problem;
mod read;
pub(crate) mod reader;
pub mod variants;

use std::path::Path;

pub use error::ManifestError;
pub use model::{BuildMode, BuildTable, Manifest, Module, QolaTable};
pub use problem::Problem;
pub use variants::{Variant, VariantFilters};

impl Manifest {
    /// Reads and checks a manifest file (`patches_dir` stays as written: preparation reads it
    /// relative to the file, or to the working directory where only that exists).
    pub fn from_path(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut manifest = Manifest::from_str_at(&text, &path)?;
        manifest.path = path;
        Ok(manifest)
    }

    /// Parses manifest text; `path` is used in error messages only.
    pub fn from_str_at(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let mut manifest = read::read(text).map_err(|problems| ManifestError::Invalid {
            path: path.to_path_buf(),
            problems,
        })?;
        for module in &mut manifest.modules {
            module.manifest = path.to_path_buf();
        }
        Ok(manifest)
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

pub(crate) use reader::Reader;
