//! `qola plan`: every command a build of the manifest's AITER modules would run (code
//! generation, each compile with its cache key and whether it is cached, the link) without
//! compiling, for CMake builds and for inspection. Code generation does run (its output decides
//! the units), into the directory given; the tree must already be prepared.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::aiter::{AiterModuleSpec, prepare_module};
use crate::build_script::Directives;
use crate::build_script::Env;
use crate::compile::CompilePlan;
use crate::error::{Error, Result};
use crate::manifest::Manifest;
use crate::prepare::report::Action;
use crate::prepare::settings::Prepare;

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

/// One module of the plan.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ModulePlan {
    /// The library name (`md_name`, else the module's name).
    pub name: String,
    /// The code generators.
    pub generators: Vec<GeneratorPlan>,
    /// Flags AITER asks for that the compiler does not know (dropped).
    pub dropped_flags: Vec<String>,
    /// The compiles and the link.
    pub compile: CompilePlan,
}

/// The whole plan.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Plan {
    /// The prepared checkout.
    pub root: PathBuf,
    /// Its commit.
    pub commit: String,
    /// Every module of the manifest.
    pub modules: Vec<ModulePlan>,
}

impl Prepare {
    /// The plan of the manifest's modules (see the module docs). `gen_dir` receives the generated
    /// code, `out_dir` is where the libraries would go; `ck_filter` narrows CK's instances.
    pub fn try_plan(
        &self,
        gen_dir: &Path,
        out_dir: &Path,
        ck_filter: Option<&str>,
    ) -> Result<Plan> {
        let status = self.try_status()?;
        if status.action != Action::UpToDate {
            return Err(Error::NotPrepared {
                root: status.root.clone(),
            });
        }
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let settings = self.settings(&env, &directives)?;
        let manifest = match &settings.manifest_path {
            Some(path) => Manifest::from_path(path)?,
            None => Manifest::default(),
        };
        let cache = settings.cache.clone().ok_or(Error::NoCacheDir)?;
        let archs = crate::compile::archs::resolve(&env, &[], &manifest.build.architectures)?;
        let mut modules = Vec::new();
        for module in &manifest.modules {
            let aiter = prepare_module(&AiterModuleSpec {
                root: &status.root,
                module,
                archs: &archs,
                gen_dir,
                cache: &cache,
                ck_filter,
                compiler: None,
                cargo_metadata: false,
            })?;
            let mut build = aiter.hip_build();
            for arch in &archs {
                build.arch(arch);
            }
            let compile = build
                .cache_dir(&cache)
                .out_dir(out_dir)
                .cargo_metadata(false)
                .try_plan(&aiter.recipe.name)?;
            modules.push(ModulePlan {
                name: aiter.recipe.name.clone(),
                generators: aiter
                    .generated
                    .iter()
                    .map(|g| GeneratorPlan {
                        command: g.command.clone(),
                        dir: g.dir.clone(),
                        ran: g.ran,
                        files: g.files.len(),
                    })
                    .collect(),
                dropped_flags: aiter.dropped_flags,
                compile,
            });
        }
        Ok(Plan {
            root: status.root,
            commit: status.commit,
            modules,
        })
    }
}
