//! `qola plan`: every command `qola build` would run for a manifest's modules (code generation,
//! each compile with its cache key and whether it is cached, the link), without compiling: the
//! same [`crate::aiter::library`] assembly as the build (wrapper, defines, embedded hsa, exports), so
//! the plan is exactly what the build runs. Code generation does run (its output decides the
//! units). See [`super::OutputBuild::try_plan`].

use std::path::PathBuf;

use serde::Serialize;

use crate::aiter::module::Generated;

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
