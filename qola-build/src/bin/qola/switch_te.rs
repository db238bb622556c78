//! `qola switch-te`: a TransformerEngine checkout made to build with the installed qola, whichever
//! shape its CMake has. TE reaches QoLA through its submodule `3rdparty/QoLA`: its CMake includes
//! `3rdparty/QoLA/cmake/QoLA.cmake` (by a fixed path at TE e94d7e58, as the default of
//! `NVTE_QOLA_DIR` at 34fb4d82), puts `3rdparty/QoLA` first on `PYTHONPATH` around `python -m
//! qola.cli`, and ck-jit runs `python -m qola.cli` there. So the switch leaves a `3rdparty/QoLA`
//! that forwards:
//!
//! | in `3rdparty/QoLA` | why |
//! |---|---|
//! | `cmake/QoLA.cmake`, including the installed qola's (found through TE's Python at configure time) | both shapes include it by that path |
//! | no `qola` Python package | QoLA's would be imported instead of the installed qola |
//! | `patches/aiter/`, QoLA's series as its checkout had it | TE's manifests name no `patches_dir`: QoLA applied this one; qola applies it when `QOLA_PATCHES_DIR` names it |
//!
//! QoLA's checkout there is dropped with `git submodule deinit` (its history stays in
//! `.git/modules`), which git refuses when the checkout holds local edits or untracked files: then
//! nothing is changed and the switch is refused. Running it again writes nothing.

use std::path::Path;
use std::process::{Command, ExitCode};

use crate::exit;

/// The forwarding module.
const FORWARD: &str = include_str!("te-qola-forward.cmake");

/// The submodule, in a TransformerEngine checkout.
const SUBMODULE: &str = "3rdparty/QoLA";

/// Where QoLA keeps its series for AITER, in its checkout.
const SERIES: &str = "patches/aiter";

/// What went wrong, and the exit status that says it.
struct Stop {
    status: u8,
    message: String,
}

fn stop(status: u8, message: String) -> Stop {
    Stop { status, message }
}

/// `qola switch-te [DIR]`.
pub(crate) fn switch_te(dir: &Path) -> ExitCode {
    match switch(dir) {
        Ok(lines) => {
            for line in lines {
                println!("qola switch-te: {line}");
            }
            ExitCode::SUCCESS
        }
        Err(Stop { status, message }) => {
            eprintln!("qola switch-te: {message}");
            exit::status(status)
        }
    }
}

/// Switches the checkout at `dir`; returns what it did, a line each.
fn switch(dir: &Path) -> Result<Vec<String>, Stop> {
    if !dir
        .join("transformer_engine/common/CMakeLists.txt")
        .is_file()
    {
        return Err(stop(
            exit::ERROR,
            format!(
                "error: {} is not a TransformerEngine checkout (no transformer_engine/common/CMakeLists.txt): name TE's top directory",
                dir.display()
            ),
        ));
    }
    let qola_dir = dir.join(SUBMODULE);
    let mut done = Vec::new();
    if holds_qola_package(&qola_dir) {
        let series = read_series(&qola_dir.join(SERIES))?;
        drop_submodule(dir)?;
        if holds_qola_package(&qola_dir) {
            return Err(stop(
                exit::REFUSED,
                format!(
                    "refused: {} still holds a `qola` Python package after `git submodule deinit`, which would be imported instead of the installed qola: move it away",
                    qola_dir.display()
                ),
            ));
        }
        done.push(format!(
            "dropped QoLA's checkout at {} (git submodule deinit; its history stays in the checkout's .git/modules)",
            qola_dir.display()
        ));
        if !series.is_empty() {
            for (name, bytes) in &series {
                write(&qola_dir.join(SERIES).join(name), bytes)?;
            }
            done.push(format!(
                "kept QoLA's patch series ({} files) in {}: TE's manifests name no patches_dir, so set QOLA_PATCHES_DIR to it for a pin that needs it",
                series.len(),
                qola_dir.join(SERIES).display()
            ));
        }
    }
    let module = qola_dir.join("cmake/QoLA.cmake");
    let wrote = match std::fs::read(&module) {
        Ok(bytes) if bytes == FORWARD.as_bytes() => false,
        _ => {
            write(&module, FORWARD.as_bytes())?;
            true
        }
    };
    done.push(format!(
        "{} {}: it includes the QoLA.cmake of the qola installed in TE's Python, for TE's CMake whether it includes it by that path or through NVTE_QOLA_DIR (leave NVTE_QOLA_DIR unset)",
        if wrote { "wrote" } else { "already there:" },
        module.display()
    ));
    Ok(done)
}

/// Whether `dir` holds a Python package or module named `qola` (QoLA's).
fn holds_qola_package(dir: &Path) -> bool {
    dir.join("qola/__init__.py").is_file()
        || dir.join("qola.py").is_file()
        || std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("qola.") && name.ends_with(".so")
            })
        })
}

/// QoLA's series in `dir`: each file's name and bytes (none when there is no such directory).
fn read_series(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, Stop> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_file() {
            let bytes = std::fs::read(&path).map_err(|e| {
                stop(
                    exit::ERROR,
                    format!("error: cannot read {}: {e}", path.display()),
                )
            })?;
            files.push((entry.file_name().to_string_lossy().into_owned(), bytes));
        }
    }
    files.sort();
    Ok(files)
}

/// `git submodule deinit 3rdparty/QoLA` in the checkout at `dir` (never forced: git refuses a
/// checkout with local edits or untracked files, and then nothing changed).
fn drop_submodule(dir: &Path) -> Result<(), Stop> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["submodule", "deinit", "--", SUBMODULE])
        .output()
        .map_err(|e| stop(exit::ERROR, format!("error: cannot run git: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(stop(
        exit::REFUSED,
        format!(
            "refused: {} is QoLA's checkout, whose `qola` package would be imported instead of the installed qola, and git would not drop it (`git submodule deinit {SUBMODULE}`): {}\nnothing was changed: commit or move away what you changed there, then run this again",
            dir.join(SUBMODULE).display(),
            said.trim()
        ),
    ))
}

/// Writes `bytes` to `path`, making its directories.
fn write(path: &Path, bytes: &[u8]) -> Result<(), Stop> {
    let fail = |e: std::io::Error| {
        stop(
            exit::ERROR,
            format!("error: cannot write {}: {e}", path.display()),
        )
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    std::fs::write(path, bytes).map_err(fail)
}
