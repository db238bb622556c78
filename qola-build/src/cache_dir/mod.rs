//! qola's cache directory: where it is and what lives in it. Preparation, compiling and AITER's
//! modules all find it here, and each keeps its part under its own subdirectory:
//!
//! | under the cache | what | owner |
//! |---|---|---|
//! | `checkouts/` | the managed AITER checkouts (unless `QOLA_AITER_ROOT` names one) | preparation |
//! | `snapshots/` | stat snapshots that make a no-op check fast | preparation |
//! | `hip/` | the content-addressed object cache | compiling |
//! | `probes/` | answers of compiler probes (an architecture, a flag) | compiling |
//! | `farm/` | sccache configs and toolchain archives for compile farms | compiling |
//! | `core-flags/` | the flags the tree's `core.py` gives a module, with the environment read | AITER's modules |
//! | `tuned-tables/` | tuned tables merged as AITER merges them, by content | AITER's modules |
//! | `outputs/` | what each `qola build` output directory holds, by content, with the mtimes a consumer saw | AITER's modules |
//!
//! It is found as `QOLA_CACHE_DIR`, else `$XDG_CACHE_HOME/qola`, else `$HOME/.cache/qola`.

use std::path::PathBuf;

use crate::build_script::Env;
pub use crate::common::failure::NoCacheDir;
use crate::common::precedence::Setting;

/// The managed AITER checkouts.
pub(crate) const CHECKOUTS: &str = "checkouts";
/// Stat snapshots of prepared checkouts.
pub(crate) const SNAPSHOTS: &str = "snapshots";
/// The object cache.
pub(crate) const OBJECTS: &str = "hip";
/// Compiler probe answers.
pub(crate) const PROBES: &str = "probes";
/// The launchers' own files (the compile farm's sccache configs and toolchain archives).
pub(crate) const LAUNCHER: &str = "farm";
/// The flags of the tree's `core.py`, per module and environment.
pub(crate) const CORE_FLAGS: &str = "core-flags";
/// Merged tuned tables.
pub(crate) const TUNED_TABLES: &str = "tuned-tables";
/// The records of `qola build`'s output directories (their files by content, with mtimes).
pub(crate) const OUTPUTS: &str = "outputs";

/// qola's cache by the one precedence (`common::precedence`): `argument` (a builder's
/// `cache_dir`, `--cache-dir`), else `QOLA_CACHE_DIR`, else `$XDG_CACHE_HOME/qola`, else
/// `$HOME/.cache/qola`; each variable read only when the layers above gave nothing.
pub(crate) fn find(env: &Env, argument: Option<PathBuf>) -> Option<PathBuf> {
    let read = |name: &str, under: &[&str]| {
        env.var_os(name)
            .map(|dir| under.iter().fold(PathBuf::from(dir), |p, s| p.join(s)))
    };
    Setting::argument(argument)
        .environment_path(|| read("QOLA_CACHE_DIR", &[]))
        .environment_path(|| read("XDG_CACHE_HOME", &["qola"]))
        .environment_path(|| read("HOME", &[".cache", "qola"]))
        .value()
}

/// [`find`], or the error saying how to set it.
pub(crate) fn dir(env: &Env, argument: Option<PathBuf>) -> Result<PathBuf, NoCacheDir> {
    find(env, argument).ok_or(NoCacheDir)
}
