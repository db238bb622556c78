//! The built-in kernels' CPU-emulation cost per feature case, beside the float64 reference's
//! cost for the same case in the same run (the baseline): the kernels' row functions compiled
//! for the host (`-O2`) run forward and backward through the emulator process, the reference
//! runs in this process. Prints a Markdown table for BENCHMARKS.md.
//!
//! `cargo run --release -p qola-sys --example emulation_cost`

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::Case;
use common::emulator::{compile, run};

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(tmp.path(), None);
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
