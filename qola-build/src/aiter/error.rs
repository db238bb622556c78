//! The errors of AITER's modules: recipes, code generation, the toolchain they need, and
//! `qola build`'s options.

use std::path::PathBuf;

use crate::common::kind::ErrorKind;

/// What can stop building an AITER module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AiterError {
    /// A failure of the file system, the environment or the cache directory's discovery
    /// (see `common::failure`).
    #[error(transparent)]
    Failure(#[from] crate::common::failure::Failure),

    /// Reading the manifest.
    #[error(transparent)]
    Manifest(#[from] crate::manifest::ManifestError),

    /// Preparing the checkout.
    #[error(transparent)]
    Prepare(#[from] crate::prepare::PrepareError),

    /// Compiling and linking.
    #[error(transparent)]
    Compile(#[from] crate::compile::CompileError),

    /// An option or manifest setting that cannot be served as asked.
    #[error("{option}: {problem}")]
    InvalidOption {
        /// The option or setting.
        option: String,
        /// What is wrong, and the way out.
        problem: String,
    },

    /// The compiler's HIP version is none of the manifest's `rocm_versions`.
    #[error("manifest {} lists ROCm {} (`[qola] rocm_versions`), but the HIP compiler {} is HIP {found}: use a matching ROCm (HIPCC, ROCM_PATH) or add its version to rocm_versions", manifest.display(), wanted.join(" or "), compiler.display())]
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

    /// The tree's attention headers show no C++ API generation qola knows (see
    /// [`crate::aiter::ApiGeneration`]), or one the asked API cannot serve.
    #[error("{}: {why}; qola knows AITER's attention API with the options as parameters of aiter::mha_fwd (AITER 05a0d1f) or inside aiter::mha_fwd_args (newer AITERs)", header.display())]
    ApiGeneration {
        /// The header.
        header: PathBuf,
        /// What it shows.
        why: String,
    },

    /// A module's own source asks for something qola cannot give it (see `needs`): a feature
    /// switch whose header cannot be had, or an hsa config no generator writes.
    #[error("{}: {symbol}: {why}; this AITER needs a recipe qola does not know how to give: build it with AITER's own tools, or name the switch's header's directory in the manifest's extra_include", file.display())]
    RecipeNeeds {
        /// The source.
        file: PathBuf,
        /// The switch or the header.
        symbol: String,
        /// Why it cannot be satisfied.
        why: String,
    },

    /// A `[[modules]]` key of the manifest whose value qola cannot honour for this tree.
    #[error(transparent)]
    ModuleKey(Box<ModuleKeyError>),

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
        "code generation failed: {}`{command}`:\n{stderr}{}",
        origin.as_ref().map(|o| format!("{o}: ")).unwrap_or_default(),
        codegen_hint(stderr)
    )]
    Codegen {
        /// The command.
        command: String,
        /// What it said.
        stderr: String,
        /// Where the generator was named, when not in AITER's recipe (a registry's file, line,
        /// key and value).
        origin: Option<String>,
    },

    /// The Python that runs the generators falls short of what the tree's generators need (see
    /// `module::python_needs`).
    #[error("the Python that runs AITER's generators, {}, falls short of what this tree's generators need: {}; fix: {fix}", python.display(), problems.join("; "))]
    GeneratorPython {
        /// The Python (`QOLA_PYTHON`, else `python3` on `PATH`).
        python: PathBuf,
        /// Each module it lacks or has too old: the version needed, the one found, and why.
        problems: Vec<String>,
        /// The command that fixes it.
        fix: String,
    },

    /// A registry file cannot be read or is not valid (see `registry`): every mistake, each
    /// with its line and key.
    #[error("registry {} has {} problem{}:{}\nfix these lines; the registry's keys are QoLA's (qola/cpp_itfs/registry.toml) and qola's public_headers", file.display(), problems.len(), if problems.len() == 1 { "" } else { "s" }, registry_problems(file, problems))]
    RegistryInvalid {
        /// The registry file.
        file: PathBuf,
        /// Every problem, in line order.
        problems: Vec<crate::manifest::Problem>,
    },

    /// A registry entry's value cannot be used for this tree.
    #[error("{}:{line}: {key} = {value:?}: {why}", file.display())]
    Registry {
        /// The registry file.
        file: PathBuf,
        /// The key's line.
        line: usize,
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// Why, and what to do instead.
        why: String,
    },

    /// A module asked for an architecture its kernels do not exist for (the registry's
    /// `architectures`).
    #[error("module {module}: its kernels exist for {} only (per {}), not {arch}: build it for {} (--arch, [build] architectures), or drop the module from the manifest", supported.join(", "), registry.display(), supported.join(", "))]
    NoKernelsForArch {
        /// The module.
        module: String,
        /// The architecture asked for.
        arch: String,
        /// The architectures it supports.
        supported: Vec<String>,
        /// The registry saying so.
        registry: std::path::PathBuf,
    },

    /// A step of a build under ck-jit (see `aiter::ck_jit`) failed, or ck-jit's environment
    /// names nothing usable.
    #[error("under ck-jit: {step}: {why}")]
    CkJit {
        /// The step (an environment variable, the interceptor on a source, the link).
        step: String,
        /// What happened, and the way on.
        why: String,
    },

    /// The tree uses a HIP name the compiler's HIP does not have (see `rocm_needs`).
    #[error("{at}: this AITER uses `{name}`, which the HIP compiler {} (HIP {found}) does not have: it needs ROCm {needed} or newer; set HIPCC (and ROCM_PATH) to a ROCm {needed} hipcc (in this repository, `tools/sid-hipcc-setup --rocm7` makes one from Debian experimental's HIP 7.2), or pin an AITER that builds with this ROCm", compiler.display())]
    TreeNeedsNewerRocm {
        /// The HIP name.
        name: String,
        /// The header and line that use it (`.../aiter_hip_common.h:524`).
        at: String,
        /// The ROCm that first has it.
        needed: String,
        /// The compiler's HIP version.
        found: String,
        /// The compiler.
        compiler: PathBuf,
    },

    /// The module is built with composable_kernel and the tree has none.
    #[error("module {module} is built with composable_kernel (ENABLE_CK is not 0), and {} has no CK sources{pinned}: check out the submodule (git submodule update --init 3rdparty/composable_kernel, or let qola prepare the tree), set CK_DIR to a composable_kernel checkout, or build the module without CK (flags_extra_cc = [\"'-DENABLE_CK=0'\"] where the tree supports it)", dir.display())]
    CkMissing {
        /// The module.
        module: String,
        /// Where CK was looked for.
        dir: PathBuf,
        /// The commit the tree pins, as words (`" (the tree pins composable_kernel f33252ce...)"`).
        pinned: String,
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
            AiterError::RocmVersion { .. }
            | AiterError::ToolchainTooOld { .. }
            | AiterError::TreeNeedsNewerRocm { .. }
            | AiterError::CkMissing { .. }
            | AiterError::CkJit { .. } => ErrorKind::Toolchain,
            AiterError::NoKernelsForArch { .. }
            | AiterError::ModuleKey(_)
            | AiterError::RegistryInvalid { .. }
            | AiterError::Registry { .. } => ErrorKind::Input,
            AiterError::AiterConfig { .. }
            | AiterError::Codegen { .. }
            | AiterError::GeneratorPython { .. }
            | AiterError::ApiGeneration { .. }
            | AiterError::RecipeNeeds { .. } => ErrorKind::Aiter,
            AiterError::Failure(e) => e.kind(),
            AiterError::Manifest(e) => e.kind(),
            AiterError::Prepare(e) => e.kind(),
            AiterError::Compile(e) => e.kind(),
        }
    }
}

fn registry_problems(file: &std::path::Path, problems: &[crate::manifest::Problem]) -> String {
    problems
        .iter()
        .map(|p| {
            format!(
                "\n  {}:{}: {}: {}",
                file.display(),
                p.line,
                p.key,
                p.message
            )
        })
        .collect()
}

/// A `[[modules]]` key of the manifest whose value qola cannot honour for this tree.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: [[modules]] {key} = {value} (module {module}): {why}", manifest.display())]
#[non_exhaustive]
pub struct ModuleKeyError {
    /// The manifest.
    pub manifest: PathBuf,
    /// The key's line.
    pub line: usize,
    /// The module (`libmha_fwd`).
    pub module: String,
    /// The key.
    pub key: String,
    /// Its value, as evaluated.
    pub value: String,
    /// Why, and what to do instead.
    pub why: String,
}

/// The way on for what a generator's error output shows.
fn codegen_hint(stderr: &str) -> String {
    // Python's own words: `No module named 'pandas'` (a dotted name: its package).
    let missing = stderr
        .split("No module named ")
        .nth(1)
        .and_then(|rest| {
            rest.trim_start_matches(['\'', '"'])
                .split(['\'', '"', '.', '\n'])
                .next()
        })
        .filter(|name| !name.is_empty());
    match missing {
        Some(module) => format!(
            "\n(AITER's generators need python3 with the `{module}` module: `pip install {module}`, or QOLA_PYTHON naming a Python that has it)"
        ),
        None if stderr.contains("python3 not found") => "\n(AITER's generators need python3 with the `packaging` and `pandas` modules: `pip install packaging pandas`, or QOLA_PYTHON naming such a Python)".to_string(),
        None => String::new(),
    }
}

/// `Result` with [`AiterError`], which carries the other subsystems' errors as they are.
pub(crate) type Result<T, E = AiterError> = std::result::Result<T, E>;

crate::common::failure::failure_from!(AiterError);

#[cfg(test)]
mod tests {
    use super::codegen_hint;

    #[test]
    fn the_hint_names_the_module_python_misses() {
        let pandas = codegen_hint("Traceback ...\nModuleNotFoundError: No module named 'pandas'\n");
        assert!(
            pandas.contains("`pandas` module: `pip install pandas`"),
            "{pandas}"
        );
        let dotted = codegen_hint("ModuleNotFoundError: No module named 'packaging.version'");
        assert!(dotted.contains("`pip install packaging`"), "{dotted}");
        assert_eq!(codegen_hint("SyntaxError: invalid syntax"), "");
    }
}
