//! The Python that runs AITER's and CK's generators (and the tree's `core.py`, which qola reads
//! a module's flags from): which one ([`generator_python`]), and what it must have, read from the
//! tree and checked before any generator runs: a Python that falls short gets one message naming each
//! module, the version it has, the version the tree needs and the command that fixes it, not a
//! generator's traceback halfway through a build (`OptionError: No such keys(s):
//! 'future.no_silent_downcasting'` from pandas 1.5 at AITER ab550455).
//!
//! "As far as the tree shows it": the scripts a module's generators run, each with the tree's own
//! modules it imports at its top level (`chip_info`, `cpp_extension`, `torch_guard`: found beside
//! the script or in `aiter/jit/utils/`), and `aiter/jit/core.py` itself (qola reads a module's
//! flags from its statements, not through its imports of the tree's modules), are read for what
//! they need:
//!
//! | in a script, at its top level (not inside a function) | needs |
//! |---|---|
//! | `import pandas` / `from pandas ...` (likewise `numpy`, `packaging`, `setuptools`) | that module, any version |
//! | `set_option("future.no_silent_downcasting", ...)` (hsa/codegen.py from AITER d32b0cb on) | pandas 2.2 or newer: the option appeared in pandas 2.2 |
//!
//! The Python is asked once for the versions it has (`importlib.metadata`, nothing imported),
//! and each answer is kept for the process: a build of several modules asks once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::aiter::{AiterError, Result};
use crate::build_script::Env;

/// The third-party modules generators import that qola checks.
const MODULES: [&str; 4] = ["pandas", "numpy", "packaging", "setuptools"];

/// What a script sets that needs pandas 2.2.
const PANDAS_2_2_OPTION: &str = "future.no_silent_downcasting";

/// One module the generators need.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Need {
    /// Its name (as imported, and as its distribution is named).
    pub module: String,
    /// The oldest version that serves (`(2, 2)`), `None` for any.
    pub at_least: Option<(u32, u32)>,
    /// The script that needs it, and why.
    pub why: String,
}

/// The Python that runs AITER's and CK's generators: `QOLA_PYTHON`; else the Python beside
/// qola's own executable (`bin/python3` of the venv qola's wheel was installed into, activated
/// or not: QoLA and AITER run the generators with the Python that runs them, and the wheel brings
/// what they need); else `python3` on `PATH`.
pub(crate) fn generator_python(env: &Env) -> Result<PathBuf> {
    if let Some(p) = env.var_os("QOLA_PYTHON") {
        return Ok(PathBuf::from(p));
    }
    let beside_qola = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("python3")))
        .filter(|python| python.is_file());
    if let Some(python) = beside_qola {
        return Ok(python);
    }
    which::which_in("python3", env.path(), ".").map_err(|_| AiterError::Codegen {
        command: "python3".to_string(),
        stderr: "python3 not found on PATH (or set QOLA_PYTHON); AITER's generators need it, with the `packaging` and `pandas` modules".to_string(),
        origin: None,
    })
}

/// What the generator scripts `scripts` (and the tree modules they import) and the scripts
/// `alone` (not their imports) need; `root` is the tree.
pub(crate) fn needs_of(root: &Path, scripts: &[PathBuf], alone: &[PathBuf]) -> Vec<Need> {
    let mut needs: BTreeMap<(String, Option<(u32, u32)>), String> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut pending: Vec<(PathBuf, PathBuf, bool)> = scripts
        .iter()
        .map(|s| (s.clone(), s.clone(), true))
        .chain(alone.iter().map(|s| (s.clone(), s.clone(), false)))
        .collect();
    while let Some((script, named_by, follow)) = pending.pop() {
        if !seen.insert(script.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&script) else {
            continue;
        };
        let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
        let by = match script == named_by {
            true => shown(&script),
            false => format!("{} (imported by {})", shown(&script), shown(&named_by)),
        };
        for imported in top_level_imports(&text) {
            if MODULES.contains(&imported.as_str()) {
                needs
                    .entry((imported.clone(), None))
                    .or_insert_with(|| format!("{by} imports it"));
            } else if follow && let Some(local) = tree_module(root, &script, &imported) {
                pending.push((local, named_by.clone(), true));
            }
        }
        if text.contains(PANDAS_2_2_OPTION) && text.contains("set_option") {
            needs
                .entry(("pandas".to_string(), Some((2, 2))))
                .or_insert_with(|| {
                    format!("{by} sets pandas' `{PANDAS_2_2_OPTION}`, which pandas has from 2.2")
                });
        }
    }
    // A versioned need says the unversioned one too.
    let versioned: BTreeSet<String> = needs
        .keys()
        .filter(|(_, v)| v.is_some())
        .map(|(m, _)| m.clone())
        .collect();
    needs
        .into_iter()
        .filter(|((m, v), _)| v.is_some() || !versioned.contains(m))
        .map(|((module, at_least), why)| Need {
            module,
            at_least,
            why,
        })
        .collect()
}

/// The modules `text` imports at its top level (a line that starts with `import` or `from`).
fn top_level_imports(text: &str) -> Vec<String> {
    let mut modules = Vec::new();
    for line in text.lines() {
        let first = |rest: &str| {
            rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .next()
                .and_then(|m| m.split('.').next())
                .filter(|m| !m.is_empty())
                .map(String::from)
        };
        if let Some(rest) = line.strip_prefix("import ") {
            modules.extend(rest.split(',').filter_map(|m| first(m.trim())));
        } else if let Some(rest) = line.strip_prefix("from ") {
            modules.extend(first(rest.trim()));
        }
    }
    modules
}

/// The tree's own module `name`, as the script at `script` would import it: beside it, or in
/// AITER's `aiter/jit/utils/` or `aiter/jit/` (where the generators put `sys.path`).
fn tree_module(root: &Path, script: &Path, name: &str) -> Option<PathBuf> {
    let file = format!("{name}.py");
    [
        script.parent().map(|d| d.join(&file)),
        Some(root.join("aiter/jit/utils").join(&file)),
        Some(root.join("aiter/jit").join(&file)),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

/// Module name to the version a Python has (`None`: not installed).
type Versions = BTreeMap<String, Option<String>>;

/// The versions `python` has of `modules`, asked once per process.
fn versions(python: &Path, modules: &[String]) -> Result<Versions> {
    static ANSWERS: Mutex<BTreeMap<(PathBuf, Vec<String>), Versions>> = Mutex::new(BTreeMap::new());
    let key = (python.to_path_buf(), modules.to_vec());
    if let Some(answer) = ANSWERS.lock().ok().and_then(|a| a.get(&key).cloned()) {
        return Ok(answer);
    }
    const ASK: &str = "import importlib.metadata as m, json, sys\nout = {}\nfor n in sys.argv[1:]:\n    try:\n        out[n] = m.version(n)\n    except m.PackageNotFoundError:\n        out[n] = None\nprint(json.dumps(out))\n";
    let fail = |why: String| AiterError::GeneratorPython {
        python: python.to_path_buf(),
        problems: vec![why],
        fix: "QOLA_PYTHON naming a Python 3.8 or newer".to_string(),
    };
    let out = Command::new(python)
        .args(["-c", ASK])
        .args(modules)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .map_err(|e| fail(format!("it could not start: {e}")))?;
    let answer: BTreeMap<String, Option<String>> =
        serde_json::from_slice(&out.stdout).map_err(|_| {
            fail(format!(
                "it could not say which modules it has: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        })?;
    if let Ok(mut answers) = ANSWERS.lock() {
        answers.insert(key, answer.clone());
    }
    Ok(answer)
}

/// `(major, minor)` of a version such as `2.2.3` or `1.5.3+dfsg`.
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty());
    Some((
        parts.next()?.parse().ok()?,
        parts.next().unwrap_or("0").parse().ok()?,
    ))
}

/// The generators' Python with what they need of it, checked when a generator is about to run
/// ([`CheckedPython::path`]): a build whose generators' outputs are all current (a no-op)
/// starts no Python.
#[derive(Debug)]
pub(crate) struct CheckedPython {
    python: PathBuf,
    needs: Vec<Need>,
}

impl CheckedPython {
    pub(crate) fn new(python: PathBuf, needs: Vec<Need>) -> CheckedPython {
        CheckedPython { python, needs }
    }

    /// The Python, once it has what the generators need (asked once per process).
    pub(crate) fn path(&self) -> Result<&Path> {
        check(&self.python, &self.needs)?;
        Ok(&self.python)
    }
}

/// Fails with one message when `python` falls short of `needs` (see the module docs).
fn check(python: &Path, needs: &[Need]) -> Result<()> {
    if needs.is_empty() {
        return Ok(());
    }
    let modules: Vec<String> = needs
        .iter()
        .map(|n| n.module.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let have = versions(python, &modules)?;
    let mut problems = Vec::new();
    let mut install = Vec::new();
    for need in needs {
        let found = have.get(&need.module).cloned().flatten();
        let wanted = need
            .at_least
            .map_or(String::new(), |(a, b)| format!(">={a}.{b}"));
        let short = match (&found, need.at_least) {
            (None, _) => true,
            (Some(v), Some(least)) => major_minor(v).is_none_or(|v| v < least),
            (Some(_), None) => false,
        };
        if short {
            problems.push(format!(
                "{} {} (found: {}): {}",
                need.module,
                match need.at_least {
                    Some((a, b)) => format!("{a}.{b} or newer"),
                    None => "(any version)".to_string(),
                },
                found.as_deref().unwrap_or("not installed"),
                need.why
            ));
            install.push(format!("'{}{wanted}'", need.module));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(AiterError::GeneratorPython {
        python: python.to_path_buf(),
        problems,
        fix: format!(
            "`{} -m pip install {}` (a system Python may refuse: make a venv, `python3 -m venv ~/aiter-python && ~/aiter-python/bin/pip install {}`, and name it with QOLA_PYTHON=~/aiter-python/bin/python)",
            python.display(),
            install.join(" "),
            install.join(" ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = tmp.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        tmp
    }

    #[test]
    fn a_tree_s_generators_need_what_they_import_at_their_top_level_and_through_the_tree_s_modules()
    {
        let t = tree(&[
            (
                "hsa/codegen.py",
                "import os\nimport numpy as np\nimport pandas as pd\npd.set_option(\"future.no_silent_downcasting\", True)\n",
            ),
            (
                "csrc/cpp_itfs/mha_fwd_generate.py",
                "import sys\nsys.path.insert(0, 'x')\nfrom chip_info import get_gfx_list  # noqa\n",
            ),
            (
                "aiter/jit/utils/chip_info.py",
                "from cpp_extension import executable_path\n",
            ),
            (
                "aiter/jit/utils/cpp_extension.py",
                "import setuptools\nfrom packaging.version import parse\n",
            ),
            (
                "aiter/jit/core.py",
                "import os\nfrom cpp_extension import x\ndef f():\n    import pandas as pd\n",
            ),
        ]);
        let root = t.path();
        let needs = needs_of(
            root,
            &[
                root.join("hsa/codegen.py"),
                root.join("csrc/cpp_itfs/mha_fwd_generate.py"),
            ],
            &[root.join("aiter/jit/core.py")],
        );
        let named: Vec<(String, Option<(u32, u32)>)> = needs
            .iter()
            .map(|n| (n.module.clone(), n.at_least))
            .collect();
        assert_eq!(
            named,
            [
                ("numpy".to_string(), None),
                ("packaging".to_string(), None),
                ("pandas".to_string(), Some((2, 2))),
                ("setuptools".to_string(), None),
            ],
            "{needs:?}"
        );
        let setuptools = needs.iter().find(|n| n.module == "setuptools").unwrap();
        assert_eq!(
            setuptools.why,
            "aiter/jit/utils/cpp_extension.py (imported by csrc/cpp_itfs/mha_fwd_generate.py) imports it"
        );
        // core.py's import inside a function is not a need, nor what its tree modules import.
        assert!(needs_of(root, &[], &[root.join("aiter/jit/core.py")]).is_empty());
    }

    #[test]
    fn a_python_that_falls_short_gets_one_message_naming_each_module_its_version_and_the_fix() {
        let t = tree(&[(
            "python",
            "#!/bin/sh\necho '{\"pandas\": \"1.5.3\", \"numpy\": \"1.24.2\", \"packaging\": null}'\n",
        )]);
        let python = t.path().join("python");
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&python)
            .status()
            .unwrap();
        let needs = vec![
            Need {
                module: "pandas".into(),
                at_least: Some((2, 2)),
                why: "hsa/codegen.py sets pandas' `future.no_silent_downcasting`".into(),
            },
            Need {
                module: "numpy".into(),
                at_least: None,
                why: "hsa/codegen.py imports it".into(),
            },
            Need {
                module: "packaging".into(),
                at_least: None,
                why: "core.py imports it".into(),
            },
        ];
        let e = check(&python, &needs).unwrap_err().to_string();
        assert!(e.contains("pandas 2.2 or newer (found: 1.5.3)"), "{e}");
        assert!(
            e.contains("packaging (any version) (found: not installed)"),
            "{e}"
        );
        assert!(!e.contains("numpy"), "numpy 1.24.2 serves: {e}");
        assert!(
            e.contains(&format!(
                "`{} -m pip install 'pandas>=2.2' 'packaging'`",
                python.display()
            )),
            "{e}"
        );
        assert!(check(&python, &needs[1..2]).is_ok());
        assert_eq!(major_minor("2.2.3"), Some((2, 2)));
        assert_eq!(major_minor("1.5.3+dfsg"), Some((1, 5)));
    }
}
