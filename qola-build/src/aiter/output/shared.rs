//! What every module of the output directory shares: the public headers, the tree's headers
//! they include and AITER's tuning tables.

use std::path::Path;

use super::inputs::Inputs;
use crate::aiter::Result;
use crate::aiter::library::CppApi;
use crate::build_script::Env;
use crate::common::io::{io_error, write_if_changed};

/// Copies AITER's tuning tables (`*.csv` and `model_configs/`) into `configs/`, each file only
/// when its content differs. Returns their paths under the output directory (`under`/...).
fn copy_configs(from: &Path, to: &Path, under: &str) -> Result<Vec<String>> {
    let mut copied = Vec::new();
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(copied);
    };
    for entry in entries {
        let entry = entry.map_err(io_error("read", from))?;
        let path = entry.path();
        let name = entry.file_name();
        let relative = format!("{under}/{}", name.to_string_lossy());
        if path.is_dir() && name == "model_configs" {
            copied.extend(copy_configs(&path, &to.join(&name), &relative)?);
        } else if path.is_file()
            && (path.extension().is_some_and(|x| x == "csv") || from.ends_with("model_configs"))
        {
            let bytes = std::fs::read(&path).map_err(io_error("read", &path))?;
            write_if_changed(&to.join(&name), &bytes)?;
            copied.push(relative);
        }
    }
    copied.sort();
    Ok(copied)
}

/// Writes what every module of the output directory `out` shares, from the prepared tree: the
/// public headers, the tree's headers they include and AITER's tuning tables. Returns their
/// paths under `out`.
pub(super) fn write_shared(env: &Env, ctx: &Inputs, out: &Path) -> Result<Vec<String>> {
    let api = CppApi::resolve_in(
        &ctx.registry,
        &ctx.root,
        &out.join("_qola").join("gen"),
        env,
    )?;
    api.write_headers(&out.join("include"), ctx.namespace.as_deref())?;
    let mut files: Vec<String> = api
        .header_names()
        .map(|name| format!("include/{name}"))
        .collect();
    files.extend(crate::aiter::module::copy_tree_headers(
        &api.headers,
        &ctx.root,
        out,
    )?);
    files.extend(copy_configs(
        &ctx.root.join("aiter/configs"),
        &out.join("configs"),
        "configs",
    )?);
    Ok(files)
}
