//! The compile flags AITER's own `aiter/jit/core.py` gives a module, read from the prepared
//! tree rather than frozen in qola: whatever that `core.py` computes (its base lists, the
//! `ENABLE_CK`, rope and kernarg-preload switches and their environment variables, the HIP
//! version's and the architecture's flags) is what qola compiles with, at every AITER commit
//! whose `build_module` keeps its shape.
//!
//! # How
//!
//! `core_flags.py` (compiled into qola, run with `PYTHONDONTWRITEBYTECODE=1`) parses the tree's
//! `core.py` and runs the statements of `build_module`'s `MainFunc` from `flags_cc = ...` up to
//! the `_jit_compile(...)` call, as AITER runs them, with these names given by qola:
//!
//! | Name | What qola gives | Why |
//! |---|---|---|
//! | `get_gfx()`, `validate_and_update_archs()` | the build's architectures | qola's `--arch`, not a probe of the machine's GPU |
//! | `get_hip_version()` | the compiler's `HIP version:` | the compiler qola compiles with |
//! | `executable_path("hipcc")` | that compiler | probes in `core.py` (`check_LLVM_MAIN_REVISION`) run it |
//! | `hip_flag_checker(flag)` | always true | qola probes each `-mllvm` flag itself, answers cached |
//! | `check_and_set_ninja_worker()` | nothing | the job count is qola's |
//! | `torch_exclude`, `hipify`, `is_standalone` | true, false, true | qola builds torch-free libraries |
//! | `blob_gen_cmd`, `sources` | empty | qola runs the generators itself |
//! | `op_dir` | a fixed placeholder | it names include directories only, which qola chooses |
//! | `flags_extra_cc`, `flags_extra_hip`, `extra_include` | the module's recipe | after the manifest's and the registry's changes |
//! | `AITER_ROOT_DIR`, `AITER_META_DIR`, `AITER_CSRC_DIR`, `CK_HELPER_DIR`, `CK_3RDPARTY_DIR` | [`AiterPaths`] | as the recipe's expressions see them |
//!
//! Any other name those statements use is taken from `core.py`'s own top level (an import of
//! the standard library or `packaging`, a `def`, an assignment) when first needed. `os.environ`
//! is the process's, each name read is tracked (`cargo:rerun-if-env-changed`); writes to it stay
//! in the helper, and anything that would write a file is refused. A `core.py` this cannot run
//! is an error naming it, before anything is compiled.
//!
//! # Cached
//!
//! The answer is kept in qola's cache under a key of the helper, the `core.py`'s bytes and the
//! request (compiler identity, architectures, the recipe's flags, the paths), with the value of
//! every environment variable `core.py` read: a no-op build does not start Python.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::aiter::recipe::{AiterPaths, ModuleRecipe};
use crate::aiter::{AiterError, Result};
use crate::build_script::Env;
use crate::common::io::write_atomic;
use crate::compile::HipToolchain;

/// The helper run with Python.
const HELPER: &str = include_str!("core_flags.py");

/// The format of a cached answer; a change makes every entry a miss.
const CACHE_FORMAT: u32 = 1;

/// `core.py`'s two lists for a module, as its `_jit_compile` call would get them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CoreFlags {
    /// `extra_cflags`: `flags_cc` (the module's `flags_extra_cc` included).
    pub flags_cc: Vec<String>,
    /// `extra_cuda_cflags`: `flags_hip` (sorted, the module's `flags_extra_hip` included), each
    /// `--offload-arch=` removed (qola adds its architectures itself).
    pub flags_hip: Vec<String>,
}

/// What the helper is asked.
#[derive(Serialize)]
struct Request<'a> {
    core_py: &'a Path,
    hipcc: &'a Path,
    arch: &'a str,
    archs: &'a [String],
    hip_version: &'a str,
    extra_include: &'a [std::path::PathBuf],
    flags_extra_cc: &'a [String],
    flags_extra_hip: &'a [String],
    paths: std::collections::BTreeMap<&'static str, String>,
}

/// What the helper answers.
#[derive(Deserialize)]
struct Answer {
    flags_cc: Vec<String>,
    flags_hip: Vec<String>,
    environment: Vec<String>,
}

/// A cached answer: the flags, and the environment they were computed under.
#[derive(Serialize, Deserialize)]
struct Cached {
    environment: Vec<(String, Option<String>)>,
    flags: CoreFlags,
}

/// The flags the tree's `core.py` gives `recipe` for `archs` with `toolchain` (see the module
/// docs); `cache` is qola's cache directory.
pub(crate) fn core_flags(
    paths: &AiterPaths,
    recipe: &ModuleRecipe,
    archs: &[String],
    toolchain: &HipToolchain,
    cache: &Path,
    env: &Env,
) -> Result<CoreFlags> {
    let core_py = paths.root.join("aiter/jit/core.py");
    env.directives().rerun_if_changed(&core_py);
    let fail = |why: String| AiterError::AiterConfig {
        module: recipe.name.clone(),
        field: "core.py".to_string(),
        expression: core_py.display().to_string(),
        why,
    };
    let source = std::fs::read(&core_py)
        .map_err(|e| fail(format!("cannot read AITER's build recipe: {e}")))?;
    let mut variables = std::collections::BTreeMap::new();
    for name in [
        "AITER_ROOT_DIR",
        "AITER_META_DIR",
        "AITER_CSRC_DIR",
        "CK_HELPER_DIR",
        "CK_3RDPARTY_DIR",
    ] {
        if let Some(value) = paths.variable(name, env)? {
            variables.insert(name, value);
        }
    }
    let request = Request {
        core_py: &core_py,
        hipcc: &toolchain.path,
        arch: super::aiter_gfx(archs),
        archs,
        hip_version: toolchain.hip_version.as_deref().unwrap_or("0.0.0"),
        extra_include: &recipe.extra_include,
        flags_extra_cc: &recipe.flags_extra_cc,
        flags_extra_hip: &recipe.flags_extra_hip,
        paths: variables,
    };
    let request = serde_json::to_vec(&request).expect("a request serializes");
    let key = {
        let mut h = blake3::Hasher::new();
        h.update(&CACHE_FORMAT.to_le_bytes());
        h.update(HELPER.as_bytes());
        h.update(&(source.len() as u64).to_le_bytes());
        h.update(&source);
        h.update(toolchain.identity.as_bytes());
        h.update(&request);
        h.finalize().to_hex().to_string()
    };
    let record = cache
        .join(crate::cache_dir::CORE_FLAGS)
        .join(format!("{key}.json"));
    let now = |name: &str| env.var_os(name).map(|v| v.to_string_lossy().into_owned());
    if let Some(cached) = std::fs::read(&record)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Cached>(&bytes).ok())
        && cached
            .environment
            .iter()
            .all(|(name, value)| now(name) == *value)
    {
        return Ok(cached.flags);
    }
    let answer = run_helper(&request, env).map_err(fail)?;
    let flags = CoreFlags {
        flags_cc: answer.flags_cc,
        flags_hip: answer
            .flags_hip
            .into_iter()
            .filter(|f| !f.starts_with("--offload-arch="))
            .collect(),
    };
    let cached = Cached {
        environment: answer
            .environment
            .iter()
            .map(|name| (name.clone(), now(name)))
            .collect(),
        flags: flags.clone(),
    };
    // A cache that cannot be written keeps no answer: this build still has it.
    if let Some(dir) = record.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = write_atomic(&record, &serde_json::to_vec(&cached).expect("serializes"));
    }
    Ok(flags)
}

/// Runs the helper on `request`; the error says why, in the helper's words.
fn run_helper(request: &[u8], env: &Env) -> std::result::Result<Answer, String> {
    use std::io::Write;
    let python = super::generator_python(env).map_err(|e| e.to_string())?;
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(HELPER)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(request)
            .map_err(|e| format!("cannot write to {}: {e}", python.display()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("{} did not finish: {e}", python.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let why = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message")
            .trim()
            .trim_start_matches("qola: ")
            .to_string();
        return Err(format!(
            "qola runs build_module's flag code of this core.py and it failed: {why}; this AITER's build_module has a shape qola does not know (pin an AITER qola supports, or report it)"
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("the flag helper answered no flags ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_script::Directives;

    /// A tree whose `core.py` has `build_module` with the body `main`.
    fn tree(main: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("aiter/jit")).unwrap();
        let text = format!(
            "import os\nfrom packaging.version import Version, parse\nBASE = ['-O3']\n\ndef helper():\n    return '-DH=' + os.environ.get('QOLA_TEST_CORE_UNSET', '7')\n\ndef build_module(md_name, flags_extra_cc, flags_extra_hip):\n    def MainFunc():\n{main}\n        _jit_compile(md_name, extra_cflags=flags_cc, extra_cuda_cflags=flags_hip)\n    MainFunc()\n"
        );
        std::fs::write(dir.path().join("aiter/jit/core.py"), text).unwrap();
        dir
    }

    fn run(dir: &Path, cache: &Path) -> Result<CoreFlags> {
        let directives = Directives::new(false);
        let env = Env::new(&directives);
        let paths = AiterPaths::new(dir, "gfx942", &env)?;
        let recipe = ModuleRecipe {
            flags_extra_cc: vec!["-DCC=1".into()],
            flags_extra_hip: vec!["-DHIP=1".into()],
            ..ModuleRecipe::named("libx")
        };
        let toolchain = HipToolchain {
            path: "/nonexistent/hipcc".into(),
            is_clang: false,
            hip_version: Some("6.4.43484-9999".into()),
            clang_version: None,
            lib_dir: None,
            identity: "test".into(),
            env: vec![],
        };
        core_flags(&paths, &recipe, &["gfx942".into()], &toolchain, cache, &env)
    }

    #[test]
    fn the_trees_own_flag_code_gives_the_flags_with_its_top_level_names() {
        let dir = tree(concat!(
            "        flags_cc = BASE + ['-std=c++20']\n",
            "        flags_hip = ['-DZ', helper()]\n",
            "        if parse(get_hip_version().split()[-1].replace('-', '+')) > Version('6.2'):\n",
            "            flags_hip += ['-DNEW_HIP']\n",
            "        if get_gfx() != 'gfx942':\n",
            "            flags_hip += ['-DNOT_942']\n",
            "        flags_cc += flags_extra_cc\n",
            "        flags_hip += flags_extra_hip\n",
            "        flags_hip += [f'--offload-arch={a}' for a in validate_and_update_archs()]\n",
            "        flags_hip = sorted(set(flags_hip))",
        ));
        let cache = tempfile::tempdir().unwrap();
        let flags = run(dir.path(), cache.path()).unwrap();
        assert_eq!(flags.flags_cc, ["-O3", "-std=c++20", "-DCC=1"]);
        assert_eq!(flags.flags_hip, ["-DH=7", "-DHIP=1", "-DNEW_HIP", "-DZ"]);
        // Kept: the next build takes the answer from the cache, without running core.py.
        let records: Vec<_> = std::fs::read_dir(cache.path().join("core-flags"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(records.len(), 1);
        let text = std::fs::read_to_string(&records[0]).unwrap();
        std::fs::write(&records[0], text.replace("-DNEW_HIP", "-DFROM_CACHE")).unwrap();
        let again = run(dir.path(), cache.path()).unwrap();
        assert!(
            again.flags_hip.contains(&"-DFROM_CACHE".to_string()),
            "{again:?}"
        );
    }

    #[test]
    fn a_core_py_without_build_modules_shape_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("aiter/jit")).unwrap();
        std::fs::write(
            dir.path().join("aiter/jit/core.py"),
            "def other():\n    pass\n",
        )
        .unwrap();
        let cache = tempfile::tempdir().unwrap();
        let e = run(dir.path(), cache.path()).unwrap_err().to_string();
        assert!(e.contains("aiter/jit/core.py"), "{e}");
        assert!(e.contains("defines no build_module"), "{e}");
        assert!(!cache.path().join("core-flags").exists());
    }

    #[test]
    fn flag_code_that_would_write_a_file_is_refused() {
        let dir = tree(concat!(
            "        os.makedirs('/tmp/qola-should-not-exist', exist_ok=True)\n",
            "        flags_cc = []\n",
            "        flags_hip = []",
        ));
        // The slice starts at `flags_cc = ...`: a write before it is not run.
        let cache = tempfile::tempdir().unwrap();
        run(dir.path(), cache.path()).unwrap();
        let dir = tree(concat!(
            "        flags_cc = []\n",
            "        os.makedirs(f'{AITER_ROOT_DIR}/made', exist_ok=True)\n",
            "        flags_hip = []",
        ));
        let e = run(dir.path(), cache.path()).unwrap_err().to_string();
        assert!(e.contains("os.makedirs, which writes"), "{e}");
        assert!(!dir.path().join("made").exists());
    }

    #[test]
    fn a_name_core_py_does_not_define_is_an_error_naming_it() {
        let dir = tree("        flags_cc = [mystery()]\n        flags_hip = []");
        let cache = tempfile::tempdir().unwrap();
        let e = run(dir.path(), cache.path()).unwrap_err().to_string();
        assert!(e.contains("uses `mystery`"), "{e}");
    }
}
