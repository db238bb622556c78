//! The QoLA manifest (TOML), read as TransformerEngine writes it:
//!
//! ```toml
//! [qola]
//! aiter_commit = "05a0d1f060af14e789696479de71a2fc2fbaada9"
//! aiter_url = "https://github.com/ROCm/aiter.git"   # new in qola; this is the default
//! namespace = "te_aiter"
//! patches_dir = "patches/aiter"                     # relative to this file
//!
//! [build]
//! architectures = ["gfx942"]                        # or "gfx942;gfx950"
//! mode = "release"
//!
//! [[modules]]
//! name = "libmha_fwd"
//! group = "mha"
//! receipt = 600
//! drop_srcs = []
//! drop_directions = []
//! hsa_subdirs = ["fmha_v3_fwd"]
//! md_name = "libmha_fwd"
//! ```
//!
//! Unknown keys and values of the wrong type are errors naming the file, the line and the key.
//! Only `[qola]` affects preparation; `[build]` and `[[modules]]` are read for the compile steps.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// A parsed manifest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Manifest {
    /// The `[qola]` table: what to prepare.
    #[serde(default)]
    pub qola: QolaTable,
    /// The `[build]` table: how to compile.
    #[serde(default)]
    pub build: BuildTable,
    /// The `[[modules]]` entries: which AITER modules to compile.
    #[serde(default)]
    pub modules: Vec<Module>,
    /// The manifest file (absolute), set when read from a file.
    #[serde(skip)]
    pub path: PathBuf,
}

/// `[qola]`: the source to prepare.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QolaTable {
    /// AITER commit: a full or short SHA, a tag or a branch.
    pub aiter_commit: Option<String>,
    /// AITER repository URL (default `https://github.com/ROCm/aiter.git`).
    pub aiter_url: Option<String>,
    /// C++ namespace the compile steps give qola's API.
    pub namespace: Option<String>,
    /// The patch series directory, relative to the manifest file (made absolute on reading).
    pub patches_dir: Option<PathBuf>,
}

/// `[build]`: compile settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BuildTable {
    /// GPU architectures (`["gfx942"]` or `"gfx942;gfx950"`).
    #[serde(default, deserialize_with = "string_or_list")]
    pub architectures: Vec<String>,
    /// Build mode (for example `release`).
    pub mode: Option<String>,
}

/// One `[[modules]]` entry: an AITER module and QoLA's overrides of its build recipe.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Module {
    /// The module's name in AITER's `optCompilerConfig.json` (for example `libmha_fwd`).
    pub name: String,
    /// A group name the compile steps use to bundle modules.
    pub group: Option<String>,
    /// Per-module build mode.
    pub mode: Option<String>,
    /// Replaces every `--receipt N` of the module's code generators.
    pub receipt: Option<i64>,
    /// Sources to drop from the module.
    #[serde(default)]
    pub drop_srcs: Vec<String>,
    /// Directions (`fwd`, `bwd`) whose generators to drop.
    #[serde(default)]
    pub drop_directions: Vec<String>,
    /// hsa subdirectories whose code objects to embed.
    #[serde(default)]
    pub hsa_subdirs: Vec<String>,
    /// Name of the module's metadata.
    pub md_name: Option<String>,
}

fn string_or_list<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged, expecting = "a list of strings or a `;`-separated string")]
    enum StringOrList {
        One(String),
        Many(Vec<String>),
    }
    Ok(match StringOrList::deserialize(deserializer)? {
        StringOrList::One(s) => s
            .split([';', ','])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        StringOrList::Many(v) => v,
    })
}

impl Manifest {
    /// Reads and checks a manifest file; `patches_dir` becomes absolute (relative to the file).
    pub fn from_path(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ManifestRead {
            path: path.to_path_buf(),
            source,
        })?;
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut manifest = Manifest::from_str_at(&text, &path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        manifest.qola.patches_dir = manifest.qola.patches_dir.map(|p| dir.join(p));
        manifest.path = path;
        Ok(manifest)
    }

    /// Parses manifest text; `path` is used in error messages only.
    pub fn from_str_at(text: &str, path: &Path) -> Result<Manifest> {
        toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
            let line = text[..at].matches('\n').count() + 1;
            Error::Manifest {
                path: path.to_path_buf(),
                line,
                key: key_at(text, at),
                message: e.message().trim().to_string(),
            }
        })
    }
}

/// Names the key at byte `at` as `[table] key`, from the text of its line and the table header
/// above it.
fn key_at(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = &text[line_start..line_end];
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.split('#').next().unwrap_or(l).trim().to_string());
    let key = match line.split_once('=') {
        Some((k, _)) => k.trim().to_string(),
        None if line.trim_start().starts_with('[') => return line.trim().to_string(),
        None => line.trim().to_string(),
    };
    match table {
        Some(t) => format!("{t} {key}"),
        None => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest> {
        Manifest::from_str_at(text, Path::new("qola.toml"))
    }

    #[test]
    fn full_manifest_reads_every_table() {
        let m = parse(
            "[qola]\naiter_commit = \"abc\"\nnamespace = \"te\"\npatches_dir = \"p\"\n[build]\narchitectures = \"gfx942;gfx950\"\nmode = \"release\"\n[[modules]]\nname = \"libmha_fwd\"\nreceipt = 600\nhsa_subdirs = [\"fmha_v3_fwd\"]\n",
        )
        .unwrap();
        assert_eq!(m.qola.aiter_commit.as_deref(), Some("abc"));
        assert_eq!(m.build.architectures, vec!["gfx942", "gfx950"]);
        assert_eq!(m.modules[0].receipt, Some(600));
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let e = parse("[qola]\naiter_commit = \"abc\"\n\n[build]\narchs = []\n").unwrap_err();
        let Error::Manifest { line, key, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(*line, 5);
        assert_eq!(key, "[build] archs");
        assert!(e.to_string().contains("qola.toml:5"), "{e}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let e = parse("[[modules]]\nname = \"m\"\nreceipt = \"600\"\n").unwrap_err();
        let Error::Manifest { line, key, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!((*line, key.as_str()), (3, "[[modules]] receipt"));
    }
}
