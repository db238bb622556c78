//! The library key: one pure function ([`LibraryKey::of`]) over the inputs that decide a
//! module's output files, gathered without a checkout ([`KeyContext`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::aiter::Result;
use crate::build_script::Env;
use crate::compile::HipToolchain;
use crate::manifest::{BuildMode, Module, VariantFilters};
use crate::prepare::Series;

/// The layout of the key's inputs and of the archives; bumping it retires every published key.
pub const FORMAT: u32 = 1;

/// The version of what qola makes of a module (its recipe, flags, wrappers, link): bumped by
/// every change of qola that changes a module's output files for the same inputs, so a
/// library built by an older qola is never served as a newer one's.
pub const RECIPE_VERSION: u32 = 1;

/// Every input of one module's key (see the folder's docs for why each is there). Paths are
/// never inputs: a file an input names is there by its content's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KeyInputs {
    /// [`FORMAT`].
    pub format: u32,
    /// qola's version and [`RECIPE_VERSION`].
    pub recipe: String,
    /// The AITER commit (a full SHA: it fixes composable_kernel's gitlink too).
    pub aiter_commit: String,
    /// The patch series in order: each file's name and blake3 (`<name> blake3:<hex>`).
    pub series: Vec<String>,
    /// The module's `[[modules]]` entry: every key it gives with its value, but
    /// `hip_clang_path` (a place: its clang is in `compiler`).
    pub module: BTreeMap<String, serde_json::Value>,
    /// The build mode the module is built in.
    pub mode: String,
    /// The namespace (`[qola] namespace`).
    pub namespace: Option<String>,
    /// The architectures, in the build's order.
    pub archs: Vec<String>,
    /// The CK filters of `[[mha_*_variants]]`.
    pub variants: [Option<String>; 2],
    /// The CK filter of `--filter` / `QOLA_CK_FILTER[_<MODULE>]`.
    pub ck_filter: Option<String>,
    /// The environment that changes flags or generator inputs: each set variable with its
    /// value, or (for a tuned table, `AITER_CONFIG_*`) `blake3:<hash of the file>`.
    pub environment: BTreeMap<String, String>,
    /// The compiler's identity (its content and `--version`; the module's own clang when the
    /// entry names one).
    pub compiler: String,
    /// The generators' Python: its version and the versions of the packages they import.
    pub interpreter: String,
}

/// A module's key, or why it has none (a tree qola did not prepare from the manifest alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum LibraryKey {
    /// The key and what it hashes.
    Key {
        /// blake3 over the canonical JSON of `inputs`.
        key: String,
        /// The inputs.
        inputs: Box<KeyInputs>,
    },
    /// No key: a prebuilt is neither fetched nor published for this module.
    None {
        /// Why.
        why: String,
    },
}

impl LibraryKey {
    /// The key of `inputs`: blake3 over their canonical JSON.
    pub fn of(inputs: KeyInputs) -> LibraryKey {
        let json = serde_json::to_vec(&inputs).expect("key inputs always serialize");
        LibraryKey::Key {
            key: blake3::hash(&json).to_hex().to_string(),
            inputs: Box::new(inputs),
        }
    }

    /// The key, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            LibraryKey::Key { key, .. } => Some(key),
            LibraryKey::None { .. } => None,
        }
    }
}

/// Variables that put sources other than the prepared tree's into a build: a build with one
/// set has no key.
const OTHER_SOURCES: &[&str] = &["AITER_META_DIR", "CK_DIR", "HIP_KITTENS_DIR"];

/// Python packages AITER's and CK's generators import (besides the standard library).
pub(crate) const GENERATOR_PACKAGES: &[&str] = &["packaging", "pandas", "numpy", "jinja2"];

/// What every module of one build shares, resolved once and before any checkout.
pub(crate) struct KeyContext<'a> {
    /// The commit spec the build prepares.
    pub commit: Option<&'a str>,
    /// The series it applies.
    pub series: &'a Series,
    /// Why the tree is not qola's to prepare (`--skip-checkout`, `QOLA_SKIP_PREPARE`, ...).
    pub not_prepared: Option<&'a str>,
    /// A user's registry, when one is given.
    pub user_registry: Option<&'a Path>,
    /// The namespace.
    pub namespace: Option<&'a str>,
    /// The architectures.
    pub archs: &'a [String],
    /// The variants' filters.
    pub variants: &'a VariantFilters,
    /// The build's compiler.
    pub toolchain: &'a HipToolchain,
    /// The generators' Python, identified ([`interpreter_identity`]).
    pub interpreter: &'a str,
}

impl KeyContext<'_> {
    /// The key of `module`, built in `mode` with `ck_filter`.
    pub(crate) fn key(
        &self,
        env: &Env,
        module: &Module,
        mode: Option<BuildMode>,
        ck_filter: Option<&str>,
    ) -> Result<LibraryKey> {
        let none = |why: String| Ok(LibraryKey::None { why });
        if let Some(why) = self.not_prepared {
            return none(why.to_string());
        }
        let commit = self.commit.unwrap_or("");
        if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return none(format!(
                "aiter_commit {commit:?} is not a full commit SHA: a library is keyed by the 40 hex digits (a short SHA, tag or branch can come to mean another tree)"
            ));
        }
        for name in OTHER_SOURCES {
            if env.var_os(name).is_some() {
                return none(format!(
                    "{name} is set: the build takes sources from outside the prepared tree"
                ));
            }
        }
        if let Some(path) = self.user_registry {
            return none(format!(
                "a user's registry ({}) adds files qola does not key",
                path.display()
            ));
        }
        let compiler = match module.recipe.get("hip_clang_path").and_then(|v| v.as_str()) {
            // A Python string literal, as the recipe evaluates it; an expression over the
            // tree's paths cannot be evaluated without the tree.
            Some(expr) => match python_literal(expr) {
                Some(dir) => self.toolchain.with_clang_dir(Path::new(dir))?.identity,
                None => {
                    return none(format!(
                        "hip_clang_path {expr} is an expression over the tree's paths: its clang is known only after a checkout"
                    ));
                }
            },
            None => self.toolchain.identity.clone(),
        };
        let mut entry: BTreeMap<String, serde_json::Value> = module
            .recipe
            .iter()
            .filter(|(k, _)| k.as_str() != "hip_clang_path")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        entry.insert("name".into(), module.name.clone().into());
        for (key, value) in [
            ("group", serde_json::to_value(&module.group)),
            ("receipt", serde_json::to_value(module.receipt)),
            ("drop_srcs", serde_json::to_value(&module.drop_srcs)),
            (
                "drop_directions",
                serde_json::to_value(&module.drop_directions),
            ),
            ("hsa_subdirs", serde_json::to_value(&module.hsa_subdirs)),
            ("md_name", serde_json::to_value(&module.md_name)),
        ] {
            entry.insert(key.into(), value.expect("plain values serialize"));
        }
        Ok(LibraryKey::of(KeyInputs {
            format: FORMAT,
            recipe: format!("qola {} recipe {RECIPE_VERSION}", env!("CARGO_PKG_VERSION")),
            aiter_commit: commit.to_ascii_lowercase(),
            series: self
                .series
                .patches
                .iter()
                .map(|p| format!("{} blake3:{}", p.name, blake3::hash(&p.bytes).to_hex()))
                .collect(),
            module: entry,
            mode: match mode.unwrap_or(BuildMode::CppItfs) {
                BuildMode::CppItfs => "cpp_itfs",
                BuildMode::Pybind => "pybind",
            }
            .to_string(),
            namespace: self.namespace.map(String::from),
            archs: self.archs.to_vec(),
            variants: [self.variants.fwd.clone(), self.variants.bwd.clone()],
            ck_filter: ck_filter.map(String::from),
            environment: flag_environment(env)?,
            compiler,
            interpreter: self.interpreter.to_string(),
        }))
    }
}

/// The text of a quoted Python string literal with no substitution (`'/opt/clang/bin'`).
fn python_literal(expr: &str) -> Option<&str> {
    let expr = expr.trim();
    let quote = expr.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = expr.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(['\'', '"', '{', '\\'])).then_some(inner)
}

/// The environment that changes a module's flags or its generators' inputs (see
/// [`KeyInputs::environment`]).
fn flag_environment(env: &Env) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut names = crate::compile::flag_variables(env)?;
    names.push("QOLA_AITER_KEEP_INLINE_ALL".to_string());
    for name in names {
        if let Some(value) = env.var(&name)? {
            out.insert(name, value);
        }
    }
    for name in env.names_starting_with("AITER_CONFIG_") {
        if let Some(value) = env.var_os(&name) {
            let digest = match std::fs::read(&value) {
                Ok(bytes) => format!("blake3:{}", blake3::hash(&bytes).to_hex()),
                // Not a file (a list AITER merges, refused later, or a missing one): as given.
                Err(_) => value.to_string_lossy().into_owned(),
            };
            out.insert(name, digest);
        }
    }
    Ok(out)
}

/// The generators' Python as the key sees it: `sys.version` and each of
/// [`GENERATOR_PACKAGES`]' version (or `absent`), one per line. Run with
/// `PYTHONDONTWRITEBYTECODE=1`.
pub(crate) fn interpreter_identity(python: &Path) -> Result<String> {
    let script = format!(
        "import sys, importlib.metadata as m\nprint(sys.version.replace(chr(10), ' '))\nfor p in {GENERATOR_PACKAGES:?}:\n    try: print(p, m.version(p))\n    except m.PackageNotFoundError: print(p, 'absent')\n"
    );
    let fail = |stderr: String| crate::aiter::AiterError::Codegen {
        command: format!("{} -c <the interpreter's identity>", python.display()),
        stderr,
        origin: None,
    };
    let output = std::process::Command::new(python)
        .args(["-c", &script])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .map_err(|e| fail(e.to_string()))?;
    if !output.status.success() {
        return Err(fail(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_script::Directives;
    use crate::prepare::PatchFile;

    /// One build's inputs, each a value a test can change.
    #[derive(Clone)]
    struct Build {
        commit: String,
        patches: Vec<(&'static str, &'static [u8])>,
        module: Module,
        mode: Option<BuildMode>,
        namespace: Option<String>,
        archs: Vec<String>,
        variants: VariantFilters,
        ck_filter: Option<String>,
        compiler: String,
        interpreter: String,
        not_prepared: bool,
        /// Paths: none of them is an input.
        series_dir: &'static str,
        manifest_path: &'static str,
        compiler_path: &'static str,
    }

    fn build() -> Build {
        let mut module = Module {
            name: "libmha_fwd".into(),
            ..Module::default()
        };
        module
            .recipe
            .insert("flags_extra_cc".into(), serde_json::json!(["-DX"]));
        Build {
            commit: "05a0d1f0d1b2c3d4e5f60718293a4b5c6d7e8f90".into(),
            patches: vec![("0001-a.patch", b"a"), ("0002-b.patch", b"b")],
            module,
            mode: None,
            namespace: Some("te".into()),
            archs: vec!["gfx942".into()],
            variants: VariantFilters::default(),
            ck_filter: None,
            compiler: "identity-1".into(),
            interpreter: "3.11.7\npandas 2.2.0".into(),
            not_prepared: false,
            series_dir: "/a/patches",
            manifest_path: "/a/qola.toml",
            compiler_path: "/opt/rocm/bin/hipcc",
        }
    }

    fn key_of(b: &Build) -> Option<String> {
        library_key_of(b).key().map(String::from)
    }

    fn library_key_of(b: &Build) -> LibraryKey {
        let series = Series {
            dir: Some(b.series_dir.into()),
            bundled: false,
            written_for: Vec::new(),
            patches: b
                .patches
                .iter()
                .map(|(name, bytes)| PatchFile {
                    name: name.to_string(),
                    path: Path::new(b.series_dir).join(name),
                    bytes: bytes.to_vec(),
                })
                .collect(),
            warnings: Vec::new(),
        };
        let toolchain = HipToolchain {
            path: b.compiler_path.into(),
            is_clang: false,
            hip_version: None,
            clang_version: None,
            lib_dir: None,
            identity: b.compiler.clone(),
            env: Vec::new(),
        };
        let mut module = b.module.clone();
        module.manifest = b.manifest_path.into();
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let cx = KeyContext {
            commit: Some(&b.commit),
            series: &series,
            not_prepared: b.not_prepared.then_some("skipped"),
            user_registry: None,
            namespace: b.namespace.as_deref(),
            archs: &b.archs,
            variants: &b.variants,
            toolchain: &toolchain,
            interpreter: &b.interpreter,
        };
        cx.key(&env, &module, b.mode, b.ck_filter.as_deref())
            .unwrap()
    }

    #[test]
    fn the_key_changes_with_every_input_and_with_nothing_else() {
        let base = key_of(&build()).expect("a full SHA, a prepared tree: a key");
        type Change = fn(&mut Build);
        let inputs: &[(&str, Change)] = &[
            ("the commit", |b| b.commit = "1".repeat(40)),
            ("a patch's bytes", |b| b.patches[1].1 = b"b2"),
            ("a patch's name", |b| b.patches[1].0 = "0002-c.patch"),
            ("the series' order", |b| b.patches.reverse()),
            ("a patch more", |b| b.patches.push(("0003-c.patch", b"c"))),
            ("the module", |b| b.module.name = "libmha_bwd".into()),
            ("the group", |b| b.module.group = Some("mha".into())),
            ("the receipt", |b| b.module.receipt = Some(700)),
            ("drop_srcs", |b| b.module.drop_srcs = vec!["x.cu".into()]),
            ("drop_directions", |b| {
                b.module.drop_directions = vec!["fwd".into()]
            }),
            ("hsa_subdirs", |b| {
                b.module.hsa_subdirs = Some(vec!["fmha_v3_fwd".into()])
            }),
            ("md_name", |b| b.module.md_name = Some("libmha".into())),
            ("a recipe key", |b| {
                b.module
                    .recipe
                    .insert("flags_extra_cc".into(), serde_json::json!(["-DY"]));
            }),
            ("the mode", |b| b.mode = Some(BuildMode::Pybind)),
            ("the namespace", |b| b.namespace = Some("te2".into())),
            ("the architectures", |b| b.archs.push("gfx950".into())),
            ("the variants", |b| b.variants.fwd = Some("*bf16*".into())),
            ("the CK filter", |b| b.ck_filter = Some("*_nlogits*".into())),
            ("the compiler", |b| b.compiler = "identity-2".into()),
            ("the interpreter", |b| {
                b.interpreter = "3.11.7\npandas 2.3.0".into()
            }),
        ];
        for (what, change) in inputs {
            let mut b = build();
            change(&mut b);
            assert_ne!(key_of(&b).as_ref(), Some(&base), "{what} is an input");
        }
        // qola's recipe version: the same inputs from another qola are another key.
        let LibraryKey::Key { mut inputs, .. } = library_key_of(&build()) else {
            unreachable!("a key above");
        };
        inputs.recipe = format!("qola 0.1.0 recipe {}", RECIPE_VERSION + 1);
        assert_ne!(LibraryKey::of(*inputs).key(), Some(base.as_str()));
        let places: &[(&str, Change)] = &[
            ("the series' directory", |b| b.series_dir = "/elsewhere/p"),
            ("the manifest's path", |b| b.manifest_path = "/b/te.toml"),
            ("the compiler's path", |b| {
                b.compiler_path = "/usr/bin/hipcc"
            }),
        ];
        for (what, change) in places {
            let mut b = build();
            change(&mut b);
            assert_eq!(key_of(&b).as_ref(), Some(&base), "{what} is not an input");
        }
    }

    #[test]
    fn a_tree_qola_does_not_prepare_or_a_moving_commit_has_no_key() {
        let mut b = build();
        b.not_prepared = true;
        assert_eq!(key_of(&b), None);
        let mut b = build();
        b.commit = "05a0d1f".into();
        assert_eq!(key_of(&b), None, "a short SHA");
        b.commit = "main".into();
        assert_eq!(key_of(&b), None, "a branch");
    }
}
