//! Running a module's code generators into `OUT_DIR`, never into the tree.
//!
//! Each generator command gets its own output directory. It runs only when its inputs changed:
//! its arguments, the content of each file an argument names (a tuned table) and of every file
//! under its script's directory (the generator's source tree, CK's `codegen/` package or the hsa
//! code objects included). It runs into a fresh
//! temporary directory; the results are then copied into the stable directory file by file,
//! writing only files whose content changed, so the object cache keeps every unit whose source
//! did not change. Python runs with `PYTHONDONTWRITEBYTECODE=1` (no `__pycache__` in the tree).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::aiter::{AiterError, Result};
use crate::common::io::io_error;
use crate::common::io::write_atomic;
use crate::common::text::shell_quote;

use crate::aiter::recipe::{CheckedPython, generator_argv};

/// One generator's run (or reuse).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Generated {
    /// The command, with `{}` standing for the output directory.
    pub command: String,
    /// Its stable output directory.
    pub dir: PathBuf,
    /// The files it produced, sorted.
    pub files: Vec<PathBuf>,
    /// Whether it ran (`false`: its inputs were unchanged).
    pub ran: bool,
    /// How long it ran.
    pub elapsed: Duration,
    /// Files rewritten because their content changed.
    pub rewritten: usize,
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if entry.file_name() != "__pycache__" {
                    stack.push(path);
                }
            } else if let Ok(rel) = path.strip_prefix(dir) {
                out.push(rel.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// blake3 over the command, the content of each file an argument names (a tuned table) and
/// every file of the generator's directory.
fn inputs_hash(argv: &[String], script_dir: &Path) -> Result<String> {
    let mut hasher = blake3::Hasher::new();
    for arg in argv {
        hasher.update(arg.as_bytes());
        hasher.update(b"\0");
        let named = Path::new(arg);
        if named.is_absolute() && named.is_file() {
            let bytes = std::fs::read(named).map_err(io_error("read", named))?;
            hasher.update(blake3::hash(&bytes).as_bytes());
        }
    }
    for rel in files_under(script_dir) {
        let path = script_dir.join(&rel);
        let bytes = std::fs::read(&path).map_err(io_error("read", &path))?;
        hasher.update(rel.as_os_str().as_encoded_bytes());
        hasher.update(b"\0");
        hasher.update(blake3::hash(&bytes).as_bytes());
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Where CK's fmha instances (and its API dispatchers) are generated: in the generator's own
/// directory (every build of qola's own), or in a `blob/` directory below it, as AITER's own
/// build places them, for ck-jit's interceptor, which knows a CK instance by that directory
/// (see `aiter::ck_jit`). Every other generator writes into its own directory either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CkInstances {
    /// `<gen>/<module>/<index>/`.
    InGeneratorDir,
    /// `<gen>/<module>/<index>/blob/`.
    InBlobDir,
}

/// Runs (or reuses) the generator `command` into `<gen_root>/<dir_name>` (its stamp and
/// scratch beside it), with `GPU_ARCHS` set to `gpu_archs` (AITER's generators read it); the
/// Python is checked only when the generator runs.
pub(crate) fn run_generator(
    python: &CheckedPython,
    command: &str,
    dir_name: &str,
    gen_root: &Path,
    gpu_archs: &str,
) -> Result<Generated> {
    let dir = gen_root.join(dir_name);
    let mut argv_stable = generator_argv(command, &dir);
    let script = PathBuf::from(argv_stable.first().cloned().unwrap_or_default());
    let script_dir = script
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    argv_stable.push(format!("GPU_ARCHS={gpu_archs}"));
    let hash = inputs_hash(&argv_stable, &script_dir)?;
    let stamp = gen_root.join(format!("{dir_name}.inputs"));
    if dir.is_dir() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == hash) {
        return Ok(Generated {
            command: command.to_string(),
            files: files_under(&dir).into_iter().map(|f| dir.join(f)).collect(),
            dir,
            ran: false,
            elapsed: Duration::ZERO,
            rewritten: 0,
        });
    }
    // Only now that it runs: the Python checked, before anything is written.
    let python = python.path()?;
    let tmp = gen_root.join(format!("{dir_name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(io_error("create", &tmp))?;
    let argv = generator_argv(command, &tmp);
    let start = Instant::now();
    let output = Command::new(python)
        .args(&argv)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("GPU_ARCHS", gpu_archs)
        // hsa/codegen.py reads its own name for the same list.
        .env("AITER_GPU_ARCHS", gpu_archs)
        .output()
        .map_err(|e| AiterError::Codegen {
            command: format!("{} {}", python.display(), argv.join(" ")),
            stderr: e.to_string(),
            origin: None,
        })?;
    let elapsed = start.elapsed();
    if !output.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(AiterError::Codegen {
            command: std::iter::once(python.to_string_lossy().into_owned())
                .chain(argv)
                .map(|a| shell_quote(&a))
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            origin: None,
        });
    }
    // Copy what changed into the stable directory; remove what is no longer produced.
    let produced = files_under(&tmp);
    let mut rewritten = 0;
    for rel in &produced {
        let new = std::fs::read(tmp.join(rel)).map_err(io_error("read", tmp.join(rel)))?;
        let target = dir.join(rel);
        if std::fs::read(&target).ok().as_deref() != Some(&new[..]) {
            write_atomic(&target, &new)?;
            rewritten += 1;
        }
    }
    let keep: BTreeSet<&PathBuf> = produced.iter().collect();
    for old in files_under(&dir) {
        if !keep.contains(&old) {
            let _ = std::fs::remove_file(dir.join(&old));
        }
    }
    std::fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
    let _ = std::fs::remove_dir_all(&tmp);
    write_atomic(&stamp, hash.as_bytes())?;
    Ok(Generated {
        command: command.to_string(),
        files: produced.into_iter().map(|f| dir.join(f)).collect(),
        dir,
        ran: true,
        elapsed,
        rewritten,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_an_argument_names_is_an_input_by_its_content() {
        let tmp = tempfile::tempdir().unwrap();
        let (script_dir, table) = (tmp.path().join("gen"), tmp.path().join("tuned.csv"));
        std::fs::create_dir_all(&script_dir).unwrap();
        std::fs::write(script_dir.join("gen.py"), "print()\n").unwrap();
        std::fs::write(&table, "M,N,K\n1,2,3\n").unwrap();
        let argv = [
            script_dir.join("gen.py").display().to_string(),
            "--tune_file".to_string(),
            table.display().to_string(),
        ];
        let before = inputs_hash(&argv, &script_dir).unwrap();
        assert_eq!(inputs_hash(&argv, &script_dir).unwrap(), before);
        std::fs::write(&table, "M,N,K\n1,2,4\n").unwrap();
        assert_ne!(inputs_hash(&argv, &script_dir).unwrap(), before);
    }
}
