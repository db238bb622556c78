//! `qola plan`: every command `qola build` would run for a manifest's modules (code generation,
//! each compile with its cache key and whether it is cached, the link), without compiling: the
//! same [`crate::aiter::library`] assembly as the build (wrapper, defines, embedded hsa, exports), so
//! the plan is exactly what the build runs. Code generation does run (its output decides the
//! units). See [`crate::OutputBuild::try_plan`].

use std::path::PathBuf;

use serde::Serialize;

use crate::aiter::module::Generated;
use crate::aiter::prebuilt::LibraryKey;
use crate::compile::CompilePlan;

/// One code generator of a module.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct GeneratorPlan {
    /// The command (`{}` is the output directory).
    pub command: String,
    /// Its output directory.
    pub dir: PathBuf,
    /// Whether it ran now (`false`: its output was current).
    pub ran: bool,
    /// How many files it produced.
    pub files: usize,
}

impl GeneratorPlan {
    /// The plan entry of a generator that ran (or was current).
    pub(crate) fn of(g: &Generated) -> GeneratorPlan {
        GeneratorPlan {
            command: g.command.clone(),
            dir: g.dir.clone(),
            ran: g.ran,
            files: g.files.len(),
        }
    }
}

/// What `qola build` would do: each module's plan, and the warnings the build would give.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct BuildPlan {
    /// Every module selected, in manifest order.
    pub modules: Vec<ModulePlan>,
    /// What the build would warn about (the tree, the compiler's version, manifest keys that
    /// select nothing in this tree).
    pub warnings: Vec<String>,
    /// Why the build would be refused before it compiles (the compiler too old for
    /// composable_kernel, or for the ROCm the tree's sources need), each once; empty when it
    /// would not be. The plan is made as far as it can be all the same.
    pub refused: Vec<String>,
}

/// One module of a plan: what `qola build` would run for it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ModulePlan {
    /// The library's name.
    pub md_name: String,
    /// The module's group (`--group`, `QOLA_BUILD_GROUPS`).
    pub group: Option<String>,
    /// Whether its compile commands are shown (the entry's `verbose`, or `-v`).
    pub verbose: bool,
    /// The code generators, with whether they ran now and what they produced.
    pub generators: Vec<crate::aiter::output::plan::GeneratorPlan>,
    /// Flags AITER asks for that the compiler does not know (dropped).
    pub dropped_flags: Vec<String>,
    /// The flag lists the tree's own `core.py` gives the module (`flags_cc`, `flags_hip`).
    pub core_flags: crate::aiter::CoreFlags,
    /// hsa code objects embedded.
    pub hsa_blobs: usize,
    /// composable_kernel's instances compiled together: each batch's file (a unit of
    /// `compile`) and the instances it holds (`QOLA_BATCH`).
    pub batches: Vec<crate::aiter::Batch>,
    /// The compiles and the link; `None` only in a plan of a build that would be refused, when
    /// the compiler cannot plan them either (why: in the plan's warnings).
    pub compile: Option<CompilePlan>,
    /// The library key (`--prebuilt`, `--publish`) and its inputs, or why there is none.
    pub library_key: LibraryKey,
}
