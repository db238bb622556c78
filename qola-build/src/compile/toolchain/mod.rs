//! The HIP compiler: where it is, what it is, and its identity for cache keys.
//!
//! Looked up in this order: `HIPCC`, `$ROCM_PATH/bin/hipcc`, `$HIP_PATH/bin/hipcc`, `hipcc` on
//! `PATH`, `/opt/rocm/bin/hipcc`. `HIPCC` may name a clang (`clang++`, `amdclang++`): hipcc is
//! being retired upstream, and every compile passes `-x hip` anyway. The identity is the content
//! of the compiler's file plus its `--version` output (HIP and clang versions), never its path:
//! a compiler upgrade changes every cache key, the same compiler installed elsewhere none.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build_script::Env;
use crate::common::precedence::Setting;
use crate::compile::{CompileError, Result};

mod archs;
pub(crate) use archs::{resolve as resolve_archs, validate as validate_archs};
pub(crate) mod probe;

/// Where a ROCm install keeps hipcc by default.
const OPT_ROCM_HIPCC: &str = "/opt/rocm/bin/hipcc";

/// A HIP compiler, found and identified.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HipToolchain {
    /// The compiler as found (what commands run).
    pub path: PathBuf,
    /// `hipcc`, or a clang driver given in `HIPCC`.
    pub is_clang: bool,
    /// `HIP version: ...` from `--version`, when it says.
    pub hip_version: Option<String>,
    /// The clang version line from `--version`.
    pub clang_version: Option<String>,
    /// The library directory holding `libamdhip64`, when known.
    pub lib_dir: Option<PathBuf>,
    /// blake3 over the compiler file's content and the full `--version` output (and, with a
    /// clang directory, that clang's content).
    pub identity: String,
    /// The environment every command of this compiler runs with: `HIP_CLANG_PATH` when a
    /// module names its own clang (see [`HipToolchain::with_clang_dir`]).
    pub env: Vec<(String, String)>,
}

impl HipToolchain {
    /// The compiler by the one precedence (`common::precedence`): the argument (a compiler
    /// already `identified`, else one at `path`), then the environment (`HIPCC`, then
    /// `ROCM_PATH` and `HIP_PATH`), then the default (`hipcc` on `PATH`, `/opt/rocm`'s).
    pub(crate) fn resolve(
        env: &Env,
        identified: Option<&HipToolchain>,
        path: Option<&Path>,
    ) -> Result<HipToolchain> {
        let argument = match (identified, path) {
            (Some(identified), _) => Some(Ok(identified.clone())),
            (None, Some(path)) => Some(HipToolchain::identify(path)),
            (None, None) => None,
        };
        Setting::argument(argument).or(|| HipToolchain::find(env))
    }

    /// Finds and identifies the compiler, reading the environment through `env`.
    pub(crate) fn find(env: &Env) -> Result<HipToolchain> {
        let mut looked = Vec::new();
        if let Some(hipcc) = env.var_os("HIPCC") {
            let given = PathBuf::from(&hipcc);
            // A relative path is the caller's (commands run elsewhere, in the links' directory).
            let path = if given.components().count() > 1 {
                std::path::absolute(&given).unwrap_or(given.clone())
            } else {
                which::which_in(&given, env.path(), ".").unwrap_or(given.clone())
            };
            if path.is_file() {
                return HipToolchain::identify(&path);
            }
            looked.push(format!("HIPCC={}", given.display()));
            return Err(CompileError::NoHipCompiler { looked });
        }
        for var in ["ROCM_PATH", "HIP_PATH"] {
            if let Some(dir) = env.var_os(var) {
                let path = PathBuf::from(dir).join("bin").join("hipcc");
                if path.is_file() {
                    return HipToolchain::identify(&path);
                }
                looked.push(format!("${var}/bin/hipcc = {}", path.display()));
            }
        }
        match which::which_in("hipcc", env.path(), ".") {
            Ok(path) => return HipToolchain::identify(&path),
            Err(_) => looked.push("hipcc on PATH".to_string()),
        }
        if Path::new(OPT_ROCM_HIPCC).is_file() {
            return HipToolchain::identify(Path::new(OPT_ROCM_HIPCC));
        }
        looked.push(OPT_ROCM_HIPCC.to_string());
        Err(CompileError::NoHipCompiler { looked })
    }

    /// The compiler at `path`, identified by running `--version`.
    pub fn identify(path: &Path) -> Result<HipToolchain> {
        HipToolchain::identify_with(path, Vec::new(), &[])
    }

    /// This compiler running the clang in `dir` (AITER's `hip_clang_path`: hipcc's
    /// `HIP_CLANG_PATH`), identified again: its `--version` with that clang, and that clang's
    /// content, so objects compiled by another clang never share a key. `dir` must hold
    /// `clang++` (or `clang`).
    pub fn with_clang_dir(&self, dir: &Path) -> Result<HipToolchain> {
        // Every clang driver there (hipcc runs `clang++`, Debian's `clang++-<major>`): their
        // contents, by name.
        let mut clangs: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("clang"))
            })
            .collect();
        clangs.sort();
        if !clangs
            .iter()
            .any(|p| p.ends_with("clang++") || p.ends_with("clang"))
        {
            return Err(CompileError::HipCompilerUnusable {
                path: dir.to_path_buf(),
                why: format!(
                    "hip_clang_path {} holds no clang++ (or clang): name the `bin` directory of the clang this module compiles with",
                    dir.display()
                ),
            });
        }
        HipToolchain::identify_with(
            &self.path,
            vec![(
                "HIP_CLANG_PATH".to_string(),
                dir.to_string_lossy().into_owned(),
            )],
            &clangs,
        )
    }

    fn identify_with(
        path: &Path,
        env: Vec<(String, String)>,
        clangs: &[PathBuf],
    ) -> Result<HipToolchain> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let is_clang = name.contains("clang");
        let mut command = Command::new(path);
        command
            .arg("--version")
            .envs(env.iter().map(|(k, v)| (k, v)));
        if !is_clang {
            // Without an architecture hipcc asks rocm_agent_enumerator for the GPU: slow, and
            // noisy on machines without one.
            command.arg("--offload-arch=gfx90a");
        }
        let output = command
            .output()
            .map_err(|e| CompileError::HipCompilerUnusable {
                path: path.to_path_buf(),
                why: format!("cannot run `{} --version`: {e}", path.display()),
            })?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() || text.trim().is_empty() {
            return Err(CompileError::HipCompilerUnusable {
                path: path.to_path_buf(),
                why: format!(
                    "`{} --version` failed: {}",
                    path.display(),
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            });
        }
        let line_with = |needle: &str| {
            text.lines()
                .find(|l| l.contains(needle))
                .map(|l| l.trim().to_string())
        };
        let hip_version = line_with("HIP version:")
            .map(|l| l.trim_start_matches("HIP version:").trim().to_string());
        let clang_version = line_with("clang version");
        let resolved = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        // What the compiler is, not where: its file's content and what it says of itself.
        let content_hash = |file: &Path| -> Result<blake3::Hash> {
            let resolved = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
            let content =
                std::fs::read(&resolved).map_err(|e| CompileError::HipCompilerUnusable {
                    path: path.to_path_buf(),
                    why: format!("cannot read {}: {e}", resolved.display()),
                })?;
            Ok(blake3::hash(&content))
        };
        let mut hasher = blake3::Hasher::new();
        hasher.update(content_hash(path)?.as_bytes());
        hasher.update(b"\0");
        hasher.update(text.as_bytes());
        for clang in clangs {
            hasher.update(b"\0");
            hasher.update(clang.file_name().unwrap_or_default().as_encoded_bytes());
            hasher.update(b"\0");
            hasher.update(content_hash(clang)?.as_bytes());
        }
        Ok(HipToolchain {
            lib_dir: lib_dir(&resolved),
            path: path.to_path_buf(),
            is_clang,
            hip_version,
            clang_version,
            identity: hasher.finalize().to_hex().to_string(),
            env,
        })
    }

    /// `HIP 5.2.21153-0, Debian clang version 15.0.6`, for messages.
    pub fn version(&self) -> String {
        match (&self.hip_version, &self.clang_version) {
            (Some(h), Some(c)) => format!("HIP {h}, {c}"),
            (Some(h), None) => format!("HIP {h}"),
            (None, Some(c)) => c.clone(),
            (None, None) => "unknown version".to_string(),
        }
    }
}

/// Where `libamdhip64` lives for a compiler at `resolved`: `<prefix>/lib` of a ROCm install when
/// it holds the library; `None` for a system install (the linker's default paths find it).
fn lib_dir(resolved: &Path) -> Option<PathBuf> {
    let prefix = resolved.parent()?.parent()?;
    let lib = prefix.join("lib");
    let has_hip = std::fs::read_dir(&lib)
        .map(|mut entries| {
            entries.any(|e| {
                e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libamdhip64"))
            })
        })
        .unwrap_or(false);
    has_hip.then_some(lib)
}
