//! The errors of AITER's modules: recipes, code generation, the toolchain they need, and
//! `qola build`'s options.

use std::path::PathBuf;

use crate::error::ErrorKind;

/// What can stop building an AITER module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AiterError {
    /// An option or manifest setting that cannot be served as asked.
    #[error("{option}: {problem}")]
    InvalidOption {
        /// The option or setting.
        option: String,
        /// What is wrong, and the way out.
        problem: String,
    },

    /// The compiler's HIP version is none of the manifest's `rocm_versions`.
    #[error("manifest {} asks for ROCm {} (`[qola] rocm_versions`), but the HIP compiler {} is HIP {found}: use a matching ROCm (HIPCC, ROCM_PATH) or add its version to rocm_versions", manifest.display(), wanted.join(" or "), compiler.display())]
    RocmVersion {
        /// The manifest.
        manifest: PathBuf,
        /// The versions it names.
        wanted: Vec<String>,
        /// The compiler's HIP version.
        found: String,
        /// The compiler.
        compiler: PathBuf,
    },

    /// An entry of AITER's `optCompilerConfig.json` cannot be evaluated.
    #[error("AITER module {module}, field {field}: `{expression}`: {why}")]
    AiterConfig {
        /// The module (`libmha_fwd`).
        module: String,
        /// The field (`blob_gen_cmd`).
        field: String,
        /// The expression.
        expression: String,
        /// Why it cannot be evaluated.
        why: String,
    },

    /// A code generator failed.
    #[error(
        "code generation failed: `{command}`:\n{stderr}{}",
        codegen_hint(stderr)
    )]
    Codegen {
        /// The command.
        command: String,
        /// What it said.
        stderr: String,
    },

    /// The compiler is too old for composable_kernel.
    #[error("composable_kernel needs HIP >= {needed}; found {found} at {}: set HIPCC to a newer ROCm's hipcc (in this repository, `tools/sid-hipcc-setup` makes one from Debian sid's ROCm 6.4)", compiler.display())]
    ToolchainTooOld {
        /// The oldest HIP that works.
        needed: String,
        /// The HIP found.
        found: String,
        /// The compiler.
        compiler: PathBuf,
    },
}

impl AiterError {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AiterError::InvalidOption { .. } => ErrorKind::Input,
            AiterError::RocmVersion { .. } | AiterError::ToolchainTooOld { .. } => {
                ErrorKind::Toolchain
            }
            AiterError::AiterConfig { .. } | AiterError::Codegen { .. } => ErrorKind::Aiter,
        }
    }
}

/// The way on for what a generator's error output shows.
fn codegen_hint(stderr: &str) -> &'static str {
    if stderr.contains("No module named") || stderr.contains("python3 not found") {
        "\n(AITER's generators need python3 with the `packaging` module: `pip install packaging`, or QOLA_PYTHON naming such a Python)"
    } else {
        ""
    }
}
