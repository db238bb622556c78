//! The CPU emulator (`tests/emulator/emulate.cpp`): compiled from the kernels' row functions,
//! fed a case's args and memory, it answers with the status and the memory afterwards.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Blob, Laid, struct_bytes};

/// The kernels' headers.
pub const INCLUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/include");

/// Compiles the emulator into `dir` (`-O2`); headers in `first` (if any) shadow the kernels'.
pub fn compile(dir: &Path, first: Option<&Path>) -> PathBuf {
    let exe = dir.join("emulate");
    let mut cmd = Command::new("c++");
    cmd.args(["-std=c++17", "-O2", "-DQOLA_CPU_EMULATION"]);
    if let Some(first) = first {
        cmd.arg("-I").arg(first);
    }
    let status = cmd
        .arg("-I")
        .arg(INCLUDE)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/emulator/emulate.cpp"
        ))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C++ compiler (c++)");
    assert!(status.success());
    exe
}

/// Runs one direction (`backward` or not) of a laid-out case.
pub fn run(exe: &Path, backward: bool, laid: &Laid) -> (i32, Blob) {
    let mut input = vec![backward as u8];
    if backward {
        input.extend(struct_bytes(&laid.bwd));
    } else {
        input.extend(struct_bytes(&laid.fwd));
    }
    input.extend_from_slice(&laid.blob.0);
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the emulator crashed: {:?}",
        out.status
    );
    let status = i32::from_le_bytes(out.stdout[..4].try_into().unwrap());
    (status, Blob(out.stdout[4..].to_vec()))
}
