//! sccache's config for qola's farm builds: the user's own (`SCCACHE_CONF`, else
//! `$HOME/.config/sccache/config`, as sccache reads it), with a `path_override` toolchain for
//! the clang driver qola launches added to `[dist] toolchains`, written to qola's cache when it
//! changes.

use std::path::{Path, PathBuf};

use crate::build_script::Env;
use crate::common::io::io_error;
use crate::common::io::write_if_changed;
use crate::compile::Result;
use crate::compile::launcher::farm::problem;

/// The user's sccache config, when it has a `[dist]` section.
#[derive(Debug, Clone)]
pub(crate) struct UserConfig {
    pub path: PathBuf,
    pub table: toml::Table,
}

impl UserConfig {
    /// Reads it (`None`: no config, or one without `[dist]`: no farm).
    pub(crate) fn read(env: &Env) -> Result<Option<UserConfig>> {
        let path = match env.var_os("SCCACHE_CONF") {
            Some(path) => PathBuf::from(path),
            None => match env.var_os("HOME") {
                Some(home) => PathBuf::from(home).join(".config/sccache/config"),
                None => return Ok(None),
            },
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(None);
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e| problem(format!("{}: not valid TOML: {e}", path.display())))?;
        Ok(table
            .contains_key("dist")
            .then_some(UserConfig { path, table }))
    }
}

/// Writes qola's config: `compiler` (the path sccache is started with here) runs remotely as
/// `in_archive` from `archive`. Returns the config's path.
pub(crate) fn write(
    user: &UserConfig,
    compiler: &Path,
    in_archive: &Path,
    archive: &Path,
    cache: &Path,
) -> Result<PathBuf> {
    let mut table = user.table.clone();
    let dist = table
        .get_mut("dist")
        .and_then(|d| d.as_table_mut())
        .ok_or_else(|| problem(format!("{}: [dist] is not a table", user.path.display())))?;
    let compiler = compiler.to_string_lossy().into_owned();
    let mut toolchains: Vec<toml::Value> = dist
        .get("toolchains")
        .and_then(|t| t.as_array())
        .cloned()
        .unwrap_or_default();
    toolchains.retain(|t| t.get("compiler_executable").and_then(|c| c.as_str()) != Some(&compiler));
    let mut ours = toml::Table::new();
    ours.insert("type".into(), "path_override".into());
    ours.insert("compiler_executable".into(), compiler.clone().into());
    ours.insert(
        "archive".into(),
        archive.to_string_lossy().into_owned().into(),
    );
    ours.insert(
        "archive_compiler_executable".into(),
        in_archive.to_string_lossy().into_owned().into(),
    );
    toolchains.push(toml::Value::Table(ours));
    dist.insert("toolchains".into(), toml::Value::Array(toolchains));
    let text = table.to_string();
    let path = cache.join(crate::cache_dir::LAUNCHER).join(format!(
        "sccache-{}.toml",
        &blake3::hash(text.as_bytes()).to_hex()[..16]
    ));
    std::fs::create_dir_all(cache.join(crate::cache_dir::LAUNCHER))
        .map_err(io_error("create", cache.join(crate::cache_dir::LAUNCHER)))?;
    write_if_changed(&path, text.as_bytes())?;
    Ok(path)
}
