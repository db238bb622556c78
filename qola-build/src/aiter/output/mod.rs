//! `qola build` and `qola plan` ([`OutputBuild`]): a QoLA manifest's modules built into QoLA's
//! output directory. The build's steps are in `build.rs`; what it resolves first in `inputs.rs`;
//! which modules in `select.rs`; what every module shares in `shared.rs`; `manifest.json` in
//! `record.rs`; the mtimes of files written again with the content they had in `ledger.rs`; a
//! build under ck-jit in `ck_jit/`; the plan's data in `plan.rs`.

mod build;
mod ck_jit;
mod inputs;
mod ledger;
mod plan;
mod record;
mod select;
mod shared;

pub use build::{BuildOutcome, OutputBuild};
pub use plan::{BuildPlan, GeneratorPlan, ModulePlan};
pub use record::{BuildRecord, ModuleRecord, Summary};
pub use select::check_groups;
