//! The HIP compiler: where it is, what it is, and its identity for cache keys.
//!
//! Where qola looks, in this order; the first place that names a compiler decides (an empty
//! variable is unset, as ck-jit leaves `ROCM_HOME`), and a place named for ROCm that holds none
//! is an error naming it, never passed over:
//!
//! | place | what it is |
//! |---|---|
//! | `HIPCC` | the compiler itself: hipcc, or a clang (`clang++`, `amdclang++`: hipcc is being retired upstream, and every compile passes `-x hip`) |
//! | `$ROCM_HOME/bin/hipcc` | PyTorch's and AITER's name for the ROCm root (both read it before `ROCM_PATH`) |
//! | `$ROCM_PATH/bin/hipcc` | ROCm's own name, TransformerEngine's CMake's and ck-jit's |
//! | `$HIP_PATH/bin/hipcc` | HIP's |
//! | `rocm-sdk path --root` | ROCm 7's Python packages (TheRock: `pip install "rocm[devel]"`): the root of `_rocm_sdk_devel` in a venv's site-packages. The `rocm-sdk` beside qola's own executable (the venv qola's wheel went into, activated or not: CMake run from outside it), else on `PATH`. Asked before `PATH`'s hipcc, which in such a venv is a Python trampoline |
//! | `hipcc` on `PATH` | Debian's `/usr/bin/hipcc`, an activated ROCm |
//! | `/opt/rocm/core/bin/hipcc` | TheRock's system packages (ROCm 7.11 and later): `/opt/rocm/core` links `/opt/rocm/core-X.Y` |
//! | `/opt/rocm/bin/hipcc` | ROCm's packages up to 7.2 (`/opt/rocm` links `/opt/rocm-7.x.y`), and the links TheRock's leave there |
//!
//! Every ROCm layout keeps hipcc at `<root>/bin/hipcc` (clang under `<root>/lib/llvm/bin`). The
//! identity is the content of the compiler's file plus its `--version` output (HIP and clang
//! versions), never its path: a compiler upgrade changes every cache key, the same compiler
//! installed elsewhere (a moved ROCm) none.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build_script::Env;
use crate::common::precedence::Setting;
use crate::compile::{CompileError, Result};

mod archs;
pub(crate) use archs::{
    resolve as resolve_archs, sorted as sorted_archs, validate as validate_archs,
};
pub(crate) mod probe;

/// Where ROCm's system packages keep hipcc: TheRock's (ROCm 7.11 and later), then the older ones.
const SYSTEM_HIPCC: [&str; 2] = ["/opt/rocm/core/bin/hipcc", "/opt/rocm/bin/hipcc"];

/// The variables that name a ROCm root, in the order they are read.
const ROCM_ROOTS: [&str; 3] = ["ROCM_HOME", "ROCM_PATH", "HIP_PATH"];

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

    /// Finds and identifies the compiler, reading the environment through `env` (the order
    /// is the module docs').
    pub(crate) fn find(env: &Env) -> Result<HipToolchain> {
        let found = find_hipcc(&Lookup {
            var: &|name| env.var_os(name).map(PathBuf::from),
            on_path: &|program| which::which_in(program, env.path(), ".").ok(),
            beside_qola: std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf)),
            ask_rocm_sdk: &ask_rocm_sdk,
            system: &SYSTEM_HIPCC,
        })?;
        HipToolchain::identify(&found)
    }

    /// `(major, minor, patch)` of its `HIP version:` (`6.4.43484-9999` is 6.4.43484), when it
    /// says one.
    pub(crate) fn hip_release(&self) -> Option<(u32, u32, u32)> {
        let text = self.hip_version.as_deref()?;
        let mut parts = text
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse::<u32>().ok());
        Some((
            parts.next()??,
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
        ))
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

/// What the compiler's lookup reads, so the order itself is a function of it (tested without a
/// ROCm).
struct Lookup<'a> {
    /// A variable of the environment (unset and empty are both `None`).
    var: &'a dyn Fn(&str) -> Option<PathBuf>,
    /// A program on `PATH`.
    on_path: &'a dyn Fn(&str) -> Option<PathBuf>,
    /// The directory of qola's own executable.
    beside_qola: Option<PathBuf>,
    /// `rocm-sdk path --root` run with this `rocm-sdk`: the root, or what went wrong.
    ask_rocm_sdk: &'a dyn Fn(&Path) -> std::result::Result<PathBuf, String>,
    /// Where ROCm's system packages keep hipcc ([`SYSTEM_HIPCC`]).
    system: &'a [&'a str],
}

/// The compiler, by the order of the module docs.
fn find_hipcc(lookup: &Lookup) -> Result<PathBuf> {
    let mut looked = Vec::new();
    if let Some(given) = (lookup.var)("HIPCC") {
        // A relative path is the caller's (commands run elsewhere, in the links' directory).
        let path = if given.components().count() > 1 {
            std::path::absolute(&given).unwrap_or(given.clone())
        } else {
            (lookup.on_path)(&given.to_string_lossy()).unwrap_or(given.clone())
        };
        if path.is_file() {
            return Ok(path);
        }
        return Err(CompileError::RocmNotThere {
            place: format!("HIPCC={}", given.display()),
            why: "no such file".to_string(),
            fix: "name the compiler's path (or unset HIPCC: ROCM_HOME, ROCM_PATH and the places in the docs are looked at then)".to_string(),
        });
    }
    for var in ROCM_ROOTS {
        if let Some(root) = (lookup.var)(var) {
            let hipcc = root.join("bin/hipcc");
            if hipcc.is_file() {
                return Ok(hipcc);
            }
            return Err(CompileError::RocmNotThere {
                place: format!("{var}={}", root.display()),
                why: format!("there is no {}", hipcc.display()),
                fix: format!(
                    "set {var} to a ROCm root (the directory holding bin/hipcc), or unset it"
                ),
            });
        }
        looked.push(format!("${var}/bin/hipcc"));
    }
    let rocm_sdk = lookup
        .beside_qola
        .as_ref()
        .map(|dir| dir.join("rocm-sdk"))
        .filter(|p| p.is_file())
        .or_else(|| (lookup.on_path)("rocm-sdk"));
    match rocm_sdk {
        Some(rocm_sdk) => {
            let place = format!("`{} path --root`", rocm_sdk.display());
            let root = (lookup.ask_rocm_sdk)(&rocm_sdk).map_err(|why| CompileError::RocmNotThere {
                place: place.clone(),
                why,
                fix: "install ROCm 7's development package there (`pip install \"rocm[devel]\"`), or set ROCM_HOME to a ROCm root".to_string(),
            })?;
            let hipcc = root.join("bin/hipcc");
            if hipcc.is_file() {
                return Ok(hipcc);
            }
            return Err(CompileError::RocmNotThere {
                place,
                why: format!("it answered {}, which has no bin/hipcc", root.display()),
                fix: "reinstall `rocm[devel]`, or set ROCM_HOME to a ROCm root".to_string(),
            });
        }
        None => {
            looked.push("`rocm-sdk path --root` (no rocm-sdk beside qola or on PATH)".to_string())
        }
    }
    match (lookup.on_path)("hipcc") {
        Some(path) => return Ok(path),
        None => looked.push("hipcc on PATH".to_string()),
    }
    for fixed in lookup.system {
        if Path::new(fixed).is_file() {
            return Ok(PathBuf::from(fixed));
        }
        looked.push(fixed.to_string());
    }
    Err(CompileError::NoHipCompiler { looked })
}

/// Runs `rocm-sdk path --root` (which unpacks `rocm[devel]` the first time, as every use of it
/// does): the root it prints, or what went wrong in its words.
fn ask_rocm_sdk(rocm_sdk: &Path) -> std::result::Result<PathBuf, String> {
    let out = Command::new(rocm_sdk)
        .args(["path", "--root"])
        .output()
        .map_err(|e| format!("it could not start: {e}"))?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || said.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(format!(
            "it failed ({}): {}",
            out.status,
            if err.is_empty() {
                "it said nothing"
            } else {
                &err
            }
        ));
    }
    Ok(PathBuf::from(said))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root in `dir` with a `bin/hipcc` file.
    fn rocm_root(dir: &Path, name: &str) -> PathBuf {
        let root = dir.join(name);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/hipcc"), "").unwrap();
        root
    }

    /// The lookup with these variables, programs on `PATH`, qola's directory, `rocm-sdk`'s
    /// answer and system places.
    fn find_with(
        vars: &[(&str, &Path)],
        on_path: &[(&str, &Path)],
        beside_qola: Option<&Path>,
        rocm_sdk: std::result::Result<PathBuf, String>,
        system: &[&str],
    ) -> Result<PathBuf> {
        let var = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_path_buf())
        };
        let program = |name: &str| {
            on_path
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_path_buf())
        };
        let ask = |_: &Path| rocm_sdk.clone();
        find_hipcc(&Lookup {
            var: &var,
            on_path: &program,
            beside_qola: beside_qola.map(Path::to_path_buf),
            ask_rocm_sdk: &ask,
            system,
        })
    }

    #[test]
    fn the_compiler_is_looked_for_in_the_documented_order() {
        let tmp = tempfile::tempdir().unwrap();
        let [home, path, hip, sdk, system] =
            ["home", "path", "hip", "sdk", "system"].map(|n| rocm_root(tmp.path(), n));
        let rocm_sdk = tmp.path().join("venv-bin/rocm-sdk");
        std::fs::create_dir_all(rocm_sdk.parent().unwrap()).unwrap();
        std::fs::write(&rocm_sdk, "").unwrap();
        let on_path_hipcc = tmp.path().join("usr-bin-hipcc");
        std::fs::write(&on_path_hipcc, "").unwrap();
        let system_hipcc = system.join("bin/hipcc");
        let system_places = [system_hipcc.to_str().unwrap()];
        let hipcc_of = |root: &Path| root.join("bin/hipcc");
        let mut vars = vec![
            ("HIPCC", on_path_hipcc.as_path()),
            ("ROCM_HOME", home.as_path()),
            ("ROCM_PATH", path.as_path()),
            ("HIP_PATH", hip.as_path()),
        ];
        let beside = rocm_sdk.parent();
        let expected = [
            on_path_hipcc.clone(),
            hipcc_of(&home),
            hipcc_of(&path),
            hipcc_of(&hip),
        ];
        for want in expected {
            let found = find_with(
                &vars,
                &[("hipcc", &on_path_hipcc)],
                beside,
                Ok(sdk.clone()),
                &system_places,
            );
            assert_eq!(found.unwrap(), want);
            vars.remove(0);
        }
        // TheRock's rocm-sdk beside qola, then on PATH, before PATH's hipcc.
        let found = find_with(
            &[],
            &[("hipcc", &on_path_hipcc)],
            beside,
            Ok(sdk.clone()),
            &system_places,
        );
        assert_eq!(found.unwrap(), hipcc_of(&sdk));
        let found = find_with(
            &[],
            &[("rocm-sdk", &rocm_sdk), ("hipcc", &on_path_hipcc)],
            None,
            Ok(sdk.clone()),
            &system_places,
        );
        assert_eq!(found.unwrap(), hipcc_of(&sdk));
        let found = find_with(
            &[],
            &[("hipcc", &on_path_hipcc)],
            None,
            Ok(sdk.clone()),
            &system_places,
        );
        assert_eq!(found.unwrap(), on_path_hipcc);
        let found = find_with(&[], &[], None, Ok(sdk), &system_places);
        assert_eq!(found.unwrap(), system_hipcc);
    }

    #[test]
    fn a_place_named_for_rocm_without_a_compiler_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let empty = tmp.path().join("empty-rocm");
        std::fs::create_dir_all(&empty).unwrap();
        let hipcc = rocm_root(tmp.path(), "other").join("bin/hipcc");
        for var in ["ROCM_HOME", "ROCM_PATH", "HIP_PATH"] {
            let e = find_with(
                &[(var, &empty)],
                &[("hipcc", &hipcc)],
                None,
                Err(String::new()),
                &[],
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.starts_with(&format!(
                    "{var}={}: there is no {}/bin/hipcc",
                    empty.display(),
                    empty.display()
                )),
                "{e}"
            );
        }
        let rocm_sdk = tmp.path().join("rocm-sdk");
        let failing = Err(
            "it failed (exit status: 1): ERROR: Could not load the `rocm[devel]` package"
                .to_string(),
        );
        let e = find_with(
            &[],
            &[("rocm-sdk", &rocm_sdk), ("hipcc", &hipcc)],
            None,
            failing,
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("`{} path --root`: it failed", rocm_sdk.display()))
                && e.contains("rocm[devel]")
                && e.contains("ROCM_HOME"),
            "{e}"
        );
        let e = find_with(
            &[],
            &[("rocm-sdk", &rocm_sdk)],
            None,
            Ok(empty.clone()),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("which has no bin/hipcc"), "{e}");
    }

    #[test]
    fn nothing_found_lists_every_place_looked_at_and_the_variable_that_would_fix_it() {
        let e = find_with(&[], &[], None, Err(String::new()), &["/nowhere/bin/hipcc"])
            .unwrap_err()
            .to_string();
        for place in [
            "$ROCM_HOME/bin/hipcc",
            "$ROCM_PATH/bin/hipcc",
            "$HIP_PATH/bin/hipcc",
            "rocm-sdk path --root",
            "hipcc on PATH",
            "/nowhere/bin/hipcc",
            "set ROCM_HOME",
        ] {
            assert!(e.contains(place), "{place}: {e}");
        }
    }
}
