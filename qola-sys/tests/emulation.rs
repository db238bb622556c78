//! The kernels' math, compiled for the CPU, against the float64 reference: every element type,
//! masked and not, two head dims, K and V in another layout than Q (strides). This runs on any
//! machine; `gpu.rs` runs the same problems on a GPU when one is present.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{Problem, Results, check};

fn emulator(dir: &std::path::Path) -> std::path::PathBuf {
    let root = env!("CARGO_MANIFEST_DIR");
    let exe = dir.join("emulate");
    let status = Command::new("c++")
        .args(["-std=c++17", "-O2", "-DQOLA_CPU_EMULATION", "-I"])
        .arg(format!("{root}/kernels/include"))
        .arg(format!("{root}/tests/emulator/emulate.cpp"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C++ compiler (c++)");
    assert!(status.success());
    exe
}

fn floats(bytes: &[u8], at: &mut usize, n: usize) -> Vec<f32> {
    let out = bytes[*at..*at + 4 * n]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    *at += 4 * n;
    out
}

fn run(exe: &std::path::Path, p: &Problem) -> Results {
    let s = &p.shape;
    let mut input = Vec::new();
    for v in [
        p.dtype,
        s.batch as i32,
        s.nhead as i32,
        s.seqlen_q as i32,
        s.seqlen_k as i32,
        s.head_dim as i32,
        s.causal as i32,
    ] {
        input.extend_from_slice(&v.to_le_bytes());
    }
    input.extend_from_slice(&(s.scale as f32).to_le_bytes());
    for data in [&p.q, &p.k, &p.v, &p.dout] {
        for v in data.iter() {
            input.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let b = out.stdout;
    let at = &mut 0;
    Results {
        q: floats(&b, at, s.q_len()),
        k: floats(&b, at, s.k_len()),
        v: floats(&b, at, s.k_len()),
        dout: floats(&b, at, s.q_len()),
        o: floats(&b, at, s.q_len()),
        lse: floats(&b, at, s.lse_len()),
        dq: floats(&b, at, s.q_len()),
        dk: floats(&b, at, s.k_len()),
        dv: floats(&b, at, s.k_len()),
    }
}

#[test]
fn kernel_math_matches_the_float64_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = emulator(tmp.path());
    for problem in Problem::all() {
        check(&problem, &run(&exe, &problem));
    }
}
