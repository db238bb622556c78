//! The built-in kernels' CPU-emulation cost per feature case, beside the float64 reference's
//! cost for the same case in the same run (the baseline): the kernels' row functions compiled
//! for the host (`-O2`) run forward and backward through the emulator process, the reference
//! runs in this process. Prints a Markdown table for BENCHMARKS.md.
//!
//! `cargo run --release -p qola-sys --example emulation_cost`

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{Blob, Case, Laid, struct_bytes};

fn run(exe: &Path, backward: bool, laid: &Laid) -> (i32, Blob) {
    let mut input = vec![backward as u8];
    input.extend(if backward {
        struct_bytes(&laid.bwd)
    } else {
        struct_bytes(&laid.fwd)
    });
    input.extend_from_slice(&laid.blob.0);
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let status = i32::from_le_bytes(out.stdout[..4].try_into().unwrap());
    (status, Blob(out.stdout[4..].to_vec()))
}

fn main() {
    let root = env!("CARGO_MANIFEST_DIR");
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("emulate");
    let built = Command::new("c++")
        .args(["-std=c++17", "-O2", "-DQOLA_CPU_EMULATION", "-I"])
        .arg(format!("{root}/kernels/include"))
        .arg(format!("{root}/tests/emulator/emulate.cpp"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C++ compiler (c++)");
    assert!(built.success());
    println!("| case | emulated kernels fwd+bwd (ms) | float64 reference fwd+bwd (ms) | ratio |");
    println!("|---|---|---|---|");
    let repeats = 5;
    for case in Case::features() {
        let laid = case.lay_out();
        let start = Instant::now();
        for _ in 0..repeats {
            // The backward's cost does not depend on the values it reads.
            assert_eq!(run(&exe, false, &laid).0, 0, "{}", case.name);
            assert_eq!(run(&exe, true, &laid).0, 0, "{}", case.name);
        }
        let kernels = start.elapsed().as_secs_f64() * 1e3 / repeats as f64;
        let p = case.reference();
        let start = Instant::now();
        for _ in 0..repeats {
            for b in 0..case.seqs.len() {
                let x = laid.sequence(&case, b);
                let f = p.forward(&x);
                let dout = vec![0.5; f.o.len()];
                std::hint::black_box(p.backward(&x, &f.o, &f.lse, &dout));
            }
        }
        let reference = start.elapsed().as_secs_f64() * 1e3 / repeats as f64;
        println!(
            "| {} | {kernels:.2} | {reference:.2} | {:.2} |",
            case.name,
            kernels / reference
        );
    }
}
