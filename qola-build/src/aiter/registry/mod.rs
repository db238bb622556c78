//! The registry: what qola knows about an AITER module beyond AITER's own recipe, as data, in
//! the format of QoLA's `qola/cpp_itfs/registry.toml`: the sources to drop and the C++ API
//! wrapper to add, include directories, flags and generators to add, the hsa code objects to
//! embed, the linker version script, and (qola's own key) the public headers to install.
//!
//! qola ships one (`qola-build/cpp_api/registry.toml`, compiled in, see `shipped`); a registry
//! the user gives (`--registry`, `QOLA_REGISTRY`, `[qola] registry`) adds modules and replaces
//! whole entries of it. A module in neither is built from AITER's recipe alone (exporting
//! AITER's own default-visibility API).
//!
//! | key | read as | applied |
//! |---|---|---|
//! | `drop_srcs` | basenames | removed from the recipe's `srcs` |
//! | `add_srcs` | paths | compiled into the library with QoLA's C++ API (not qola-sys's C API) |
//! | `add_includes` | paths | include directories before the recipe's `extra_include` |
//! | `add_flags_extra_hip`, `add_flags_extra_cc` | flags | appended to the recipe's |
//! | `add_blob_gen_cmd` | generator commands | appended to the recipe's generators |
//! | `hsa_subdirs` | names | the code objects embedded, unless the manifest names them or the sources include their configs |
//! | `public_headers` (qola's) | paths | installed into `<output-dir>/include` |
//! | `architectures` (qola's) | names | the GPU architectures the module's kernels exist for; a build for another is refused, naming the module and the architecture |
//! | `[defaults] version_script` | path | the shared library's linker version script |
//! | `[defaults] public_headers` (qola's) | paths | installed for every module |
//!
//! Paths are relative to the registry's directory; for a registry at
//! `<root>/qola/cpp_itfs/registry.toml` (a QoLA checkout's), relative to `<root>`, as QoLA reads
//! them. Strings are formatted as QoLA formats `add_blob_gen_cmd` (Python's `str.format`):
//! `{AITER_META_DIR}` and AITER's other path variables, `{api_generation}` (qola's: the tree's
//! attention API generation, `parameters` or `struct`), `{{` and `}}` for braces. Every mistake
//! is reported with the file, the line, the key and the value.

mod read;
mod shipped;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::aiter::AiterError;
use crate::build_script::Env;

pub use shipped::{config_header, materialize};

/// A registry: one entry per module.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    modules: BTreeMap<String, Entry>,
    /// `[defaults] public_headers` of each registry merged, with where they are.
    common_headers: Vec<(String, Base)>,
}

/// Where an entry's relative paths are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Base {
    /// qola's own registry: the files `shipped::materialize` writes.
    #[default]
    Shipped,
    /// A registry file's directory (or a QoLA checkout's root).
    Dir(PathBuf),
}

/// One module's entry.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Entry {
    /// Basenames removed from the recipe's sources.
    pub drop_srcs: Vec<String>,
    /// The API wrapper's sources.
    pub add_srcs: Vec<String>,
    /// Include directories added before the recipe's.
    pub add_includes: Vec<String>,
    /// HIP flags added.
    pub add_flags_extra_hip: Vec<String>,
    /// C++ flags added.
    pub add_flags_extra_cc: Vec<String>,
    /// Generators added.
    pub add_blob_gen_cmd: Vec<String>,
    /// The hsa subdirectories embedded by default.
    pub hsa_subdirs: Option<Vec<String>>,
    /// Headers installed into `<output-dir>/include`.
    pub public_headers: Vec<String>,
    /// The GPU architectures the module's kernels exist for (qola's key; `None`: any).
    pub architectures: Option<Vec<String>>,
    /// The linker version script (`[defaults] version_script` of its registry).
    pub version_script: Option<String>,
    /// Where its paths are.
    pub base: Base,
    /// The registry file (`qola's registry` for the shipped one).
    pub file: PathBuf,
    /// The line of each key of the entry.
    pub lines: BTreeMap<String, usize>,
}

/// What the registry's strings are formatted with (see the module docs).
pub(crate) struct Context<'a> {
    /// The tree's paths (`{AITER_META_DIR}`, ...).
    pub(crate) paths: &'a crate::aiter::AiterPaths,
    /// The tree's attention API generation (`{api_generation}`), when read.
    pub(crate) api_generation: Option<&'a str>,
    /// Where qola's own registry files are written (see [`materialize`]).
    pub(crate) shipped_dir: &'a Path,
    /// The environment (`CK_DIR`).
    pub(crate) env: &'a Env<'a>,
}

impl Registry {
    /// qola's own registry.
    pub fn shipped() -> &'static Registry {
        shipped::registry()
    }

    /// qola's registry with the user's at `path` over it (`None`: qola's alone).
    pub fn with_user(path: Option<&Path>) -> Result<Registry, AiterError> {
        let mut registry = Registry::shipped().clone();
        if let Some(path) = path {
            let user = read::read_file(path)?;
            registry.modules.extend(user.modules);
            registry.common_headers.extend(user.common_headers);
        }
        Ok(registry)
    }

    /// The entry of `module`, when the registry has one.
    pub fn entry(&self, module: &str) -> Option<&Entry> {
        self.modules.get(module)
    }

    /// The modules the registry knows.
    pub fn modules(&self) -> impl Iterator<Item = &str> {
        self.modules.keys().map(String::as_str)
    }

    /// Every public header of the registry (`[defaults]` and every entry's), resolved: what
    /// `qola build` installs, as QoLA installs its fixed list whichever modules are built.
    pub(crate) fn public_headers(&self, cx: &Context) -> Result<Vec<PathBuf>, AiterError> {
        let mut out: Vec<PathBuf> = Vec::new();
        for (header, base) in &self.common_headers {
            let entry = Entry {
                base: base.clone(),
                ..Entry::default()
            };
            out.push(entry.path(cx, "public_headers", header)?);
        }
        for entry in self.modules.values() {
            for header in &entry.public_headers {
                let path = entry.path(cx, "public_headers", header)?;
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
        Ok(out)
    }
}

impl Entry {
    /// The error for this entry's `key` whose `value` cannot be used.
    pub fn error(&self, key: &str, value: &str, why: impl Into<String>) -> AiterError {
        AiterError::Registry {
            file: self.file.clone(),
            line: self.lines.get(key).copied().unwrap_or(0),
            key: key.to_string(),
            value: value.to_string(),
            why: why.into(),
        }
    }

    /// `text` formatted (see the module docs), for `key`'s messages.
    pub(crate) fn format(&self, cx: &Context, key: &str, text: &str) -> Result<String, AiterError> {
        format_fields(text, |name| match name {
            "api_generation" => Ok(cx.api_generation.map(String::from)),
            // Newer AITERs' AITER_CONFIGS.<name>: the same variables.
            other => cx
                .paths
                .variable(
                    other.strip_prefix("AITER_CONFIGS.").unwrap_or(other),
                    cx.env,
                )
                .map_err(|e| e.to_string()),
        })
        .map_err(|why| self.error(key, text, why))
    }

    /// The file `text` of `key` names, formatted and resolved; it must exist.
    pub(crate) fn path(&self, cx: &Context, key: &str, text: &str) -> Result<PathBuf, AiterError> {
        let formatted = self.format(cx, key, text)?;
        let base = match &self.base {
            Base::Shipped => cx.shipped_dir.to_path_buf(),
            Base::Dir(dir) => dir.clone(),
        };
        let path = base.join(&formatted);
        if !path.exists() {
            return Err(self.error(
                key,
                text,
                format!(
                    "{} does not exist: name a file relative to the registry's directory ({})",
                    path.display(),
                    base.display()
                ),
            ));
        }
        Ok(path)
    }

    /// Each of `key`'s paths (`add_srcs`, `add_includes`), resolved.
    pub(crate) fn paths(&self, cx: &Context, key: &str) -> Result<Vec<PathBuf>, AiterError> {
        let items = match key {
            "add_srcs" => &self.add_srcs,
            "add_includes" => &self.add_includes,
            "public_headers" => &self.public_headers,
            _ => return Ok(Vec::new()),
        };
        items.iter().map(|text| self.path(cx, key, text)).collect()
    }

    /// Where this entry's registry keeps the files its version script names.
    pub(crate) fn version_script_path(&self, cx: &Context) -> Result<Option<PathBuf>, AiterError> {
        match &self.version_script {
            Some(script) => Ok(Some(self.path(cx, "version_script", script)?)),
            None => Ok(None),
        }
    }

    /// Applies the entry to a module's recipe (QoLA's `_apply_cpp_itfs`, the recipe's part):
    /// sources dropped, include directories, flags and generators added. Each added generator
    /// is recorded with where it comes from, for the error of one that fails.
    pub(crate) fn apply(
        &self,
        cx: &Context,
        recipe: &mut crate::aiter::ModuleRecipe,
    ) -> Result<(), AiterError> {
        recipe.srcs.retain(|src| {
            !self
                .drop_srcs
                .iter()
                .any(|drop| src.file_name().is_some_and(|n| n == drop.as_str()))
        });
        let mut includes = self.paths(cx, "add_includes")?;
        includes.append(&mut recipe.extra_include);
        recipe.extra_include = includes;
        recipe
            .flags_extra_hip
            .extend(self.add_flags_extra_hip.iter().cloned());
        recipe
            .flags_extra_cc
            .extend(self.add_flags_extra_cc.iter().cloned());
        for cmd in &self.add_blob_gen_cmd {
            let formatted = self.format(cx, "add_blob_gen_cmd", cmd)?;
            recipe.origins.insert(
                formatted.clone(),
                format!(
                    "{}:{}: add_blob_gen_cmd = {cmd:?}",
                    self.file.display(),
                    self.lines.get("add_blob_gen_cmd").copied().unwrap_or(0)
                ),
            );
            recipe.blob_gen_cmd.push(formatted);
        }
        Ok(())
    }
}

/// `text` with Python `str.format` fields replaced by `lookup`'s values (`Ok(None)`: unknown).
fn format_fields(
    text: &str,
    lookup: impl Fn(&str) -> Result<Option<String>, String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => return Err(format!("`{{{name}` is not closed")),
                    }
                }
                match lookup(&name)? {
                    Some(value) => out.push_str(&value),
                    None => {
                        return Err(format!(
                            "unknown field {{{name}}} (known: AITER's path variables such as {{AITER_META_DIR}}, {{AITER_CSRC_DIR}}, {{CK_DIR}}, and {{api_generation}}; write {{{{ and }}}} for braces)"
                        ));
                    }
                }
            }
            '}' => return Err("a single `}` (write `}}` for a brace)".to_string()),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_formatted_as_python_formats_them() {
        let lookup = |name: &str| {
            Ok(match name {
                "AITER_META_DIR" => Some("/a".to_string()),
                _ => None,
            })
        };
        assert_eq!(
            format_fields("{AITER_META_DIR}/hsa/codegen.py --output_dir {{}}", lookup).unwrap(),
            "/a/hsa/codegen.py --output_dir {}"
        );
        assert!(
            format_fields("{NOPE}", lookup)
                .unwrap_err()
                .contains("{NOPE}")
        );
        assert!(format_fields("{AITER_META_DIR", lookup).is_err());
        assert!(format_fields("a } b", lookup).is_err());
    }
}
