//! Benchmark: composable_kernel's instances in batches of N = 1, 2, 4, 8 (`QOLA_BATCH`), on
//! AITER's forward and backward (8 CK instances each, gfx942, the sid toolchain), each from an
//! empty object cache, in rounds that interleave the sizes (the order turns each round):
//!
//! * the instances' CPU seconds (every pass of every unit that holds an instance: qola's unit
//!   report) and the wall seconds of compiling them (2 jobs);
//! * the peak memory of one job (the largest unit's);
//! * one edited instance (a comment appended to the module's first instance): what the rebuild
//!   compiles, in CPU seconds, against the same edit at N = 1 (that instance compiled alone) and
//!   against the mean CPU seconds of one instance.
//!
//! `--wide` measures a wider receipt-700 slice instead (d64 and d256, fp16, group mode: 18
//! forward and 22 backward instances) at N = 1 and N = 4. `MODULE=SIZES` (`libmha_fwd=1,3,4`)
//! gives a module's sizes, in that order, instead; `MODULE=` leaves it out.
//!
//! Ratios are against a module's first size (N = 1, one unit per instance, unless
//! `MODULE=SIZES` puts another first) in the same round. The instances' sources
//! are generated once (the fixtures' prepared tree, `aiter-narrow`), the compiles each run in a
//! process of their own.
//!
//! ```text
//! tools/sid-hipcc-setup
//! cargo test -p qola-build --test real_aiter   # prepares target/qola-fixtures/aiter-narrow
//! cargo run --release -p qola-examples --example bench_batches -- [rounds] [--wide] [MODULE=1,3,4 ...]
//! ```

#[allow(dead_code)] // this benchmark uses one part of it
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use qola_tests::fixtures_dir;

/// The forward: bf16, head dim 128, batch mode, LSE, with and without the mask and dropout, both
/// padding variants: 8 instances of one family.
const FWD_FILTER: &str =
    "fmha_fwd_d128_bf16_batch_*_qr_async_vr_ps*_nlogits_nbias_*mask_lse_*dropout_*";

/// The backward: 6 dQ/dK/dV instances (mask, dropout variants), dot(dO, O) and convert dQ.
const BWD_FILTER: &str = "*d128_bf16_*batch_o2_npad*@*d128_bf16_b64x0_batch_o2_npad_*deterministic*@*d128_bf16_batch_*_maxq0_npad_nbias_ndbias_*";

const SIZES: [usize; 4] = [1, 2, 4, 8];

/// A wider receipt-700 slice (`--wide`), other head dims, fp16 and group mode: the forward's 18
/// d64 and d256 instances without a mask.
const WIDE_FWD_FILTER: &str = "fmha_fwd_d[26]*_fp16_group_*_nmask_*";

/// The wide backward: 22 instances, d64 and d256 fp16 group mode: dot(dO, O), convert dQ and 14
/// dQ/dK/dV with ALiBi, mask and dropout.
const WIDE_BWD_FILTER: &str = "*d[26]*_fp16_*group_o2_*@*d[26]*_fp16_*group_o2_*@*d[26]*_fp16_group_*_alibi_ndbias_mask_dropout_wg16_deterministic_*";

/// The sizes of the wide slice: one unit per instance and the default.
const WIDE_SIZES: [usize; 2] = [1, 4];

/// A module's instance units built at one size.
#[derive(Clone, Debug, Default)]
struct Measured {
    cpu: f64,
    wall: f64,
    peak_mb: f64,
    units: usize,
    edited_cpu: f64,
}

/// Whether `source` holds CK instances (an instance file or a batch of them).
fn is_instance(source: &Path) -> bool {
    let name = source.file_name().unwrap().to_string_lossy();
    source.parent().is_some_and(|d| d.ends_with("qola-batches"))
        || (name.starts_with("fmha_") && name.ends_with("_gfx9.cpp"))
}

/// In a child: builds the module `name` (filter `filter`) under `place` with `QOLA_BATCH` of
/// the environment, then again after editing its first instance; prints one line of numbers.
fn child(name: &str, filter: &str, place: &Path) {
    let root = fixtures_dir().join("aiter-narrow");
    let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain: run tools/sid-hipcc-setup");
    let text = format!(
        "[[modules]]\nname = \"{name}\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n"
    );
    let manifest = qola_build::Manifest::from_str_at(&text, Path::new("bench.toml")).unwrap();
    let build = |edit: bool| {
        let mut module = common::aiter_module(
            &root,
            &manifest.modules[0],
            "gfx942",
            Some(filter),
            &place.join("gen"),
            &fixtures_dir().join("cache"),
            &hipcc,
        );
        module.sources.retain(|s| is_instance(s));
        if edit {
            // The first instance (in a batch or alone), a comment appended: a new content.
            let first = module
                .batches
                .first()
                .map(|b| b.members[0].clone())
                .unwrap_or_else(|| module.sources[0].clone());
            let mut text = std::fs::read_to_string(&first).unwrap();
            text.push_str("\n// edited\n");
            std::fs::write(&first, text).unwrap();
        }
        let start = Instant::now();
        let report = module
            .hip_build()
            .arch("gfx942")
            .jobs(2)
            .cache_dir(place.join("cache"))
            .out_dir(place.join("out"))
            .cargo_metadata(false)
            .try_compile("bench")
            .unwrap_or_else(|e| panic!("{e}"));
        (start.elapsed().as_secs_f64(), report)
    };
    let (wall, report) = build(false);
    let cpu: f64 = report.units.iter().map(|u| u.cpu.as_secs_f64()).sum();
    let peak = report
        .units
        .iter()
        .filter_map(|u| u.peak_memory)
        .max()
        .unwrap_or(0) as f64
        / (1 << 20) as f64;
    let (_, edited) = build(true);
    let edited_cpu: f64 = edited
        .units
        .iter()
        .filter(|u| u.compiled)
        .map(|u| u.cpu.as_secs_f64())
        .sum();
    println!(
        "\nqola-bench {cpu:.2} {wall:.2} {peak:.0} {} {edited_cpu:.2}",
        report.units.len()
    );
}

/// Runs the child for `module` at `size` in a fresh place.
fn measure(module: &str, filter: &str, size: usize, work: &Path) -> Measured {
    let place = work.join(format!("{module}-{size}"));
    let _ = std::fs::remove_dir_all(&place);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--child", module, filter])
        .arg(&place)
        .env("QOLA_BATCH", size.to_string())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = said
        .lines()
        .find_map(|l| l.strip_prefix("qola-bench "))
        .unwrap_or_else(|| panic!("{said}"));
    let v: Vec<f64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    let _ = std::fs::remove_dir_all(&place);
    Measured {
        cpu: v[0],
        wall: v[1],
        peak_mb: v[2],
        units: v[3] as usize,
        edited_cpu: v[4],
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(&args[2], &args[3], Path::new(&args[4]));
        return;
    }
    let rounds: usize = args.get(1).map_or(1, |r| r.parse().unwrap());
    let wide = args.iter().any(|a| a == "--wide");
    let work: PathBuf = fixtures_dir().join("bench-batches");
    std::fs::create_dir_all(&work).unwrap();
    let (modules, default_sizes): ([(&str, &str); 2], &[usize]) = if wide {
        (
            [
                ("libmha_fwd", WIDE_FWD_FILTER),
                ("libmha_bwd", WIDE_BWD_FILTER),
            ],
            &WIDE_SIZES,
        )
    } else {
        (
            [("libmha_fwd", FWD_FILTER), ("libmha_bwd", BWD_FILTER)],
            &SIZES,
        )
    };
    // `MODULE=1,3,4` replaces a module's sizes (`MODULE=`: the module is not built).
    let sizes: Vec<Vec<usize>> = modules
        .iter()
        .map(|(module, _)| {
            let given = args
                .iter()
                .find_map(|a| a.strip_prefix(&format!("{module}=")));
            match given {
                Some(list) => list
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(|n| n.parse().unwrap())
                    .collect(),
                None => default_sizes.to_vec(),
            }
        })
        .collect();
    let turns = sizes.iter().map(Vec::len).max().unwrap_or(0);
    let mut results: Vec<Vec<Vec<Measured>>> =
        sizes.iter().map(|s| vec![Vec::new(); s.len()]).collect();
    for round in 0..rounds {
        for turn in 0..turns {
            for (m, (module, filter)) in modules.iter().enumerate() {
                if turn >= sizes[m].len() {
                    continue;
                }
                let at = (turn + round) % sizes[m].len();
                let measured = measure(module, filter, sizes[m][at], &work);
                eprintln!(
                    "round {} {module} N={}: {measured:?}",
                    round + 1,
                    sizes[m][at]
                );
                results[m][at].push(measured);
            }
        }
    }
    println!(
        "| module | N | units | CPU s | × first N | wall s | × first N | peak MiB/job | × first N | one edited instance, CPU s | × it alone (first N) | × an instance's mean (first N) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (m, (module, _)) in modules.iter().enumerate() {
        if sizes[m].is_empty() {
            continue;
        }
        let mean = |at: usize, f: fn(&Measured) -> f64| {
            results[m][at].iter().map(f).sum::<f64>() / results[m][at].len() as f64
        };
        for (at, size) in sizes[m].iter().enumerate() {
            println!(
                "| {module} | {size} | {} | {:.1} | {:.2} | {:.1} | {:.2} | {:.0} | {:.2} | {:.1} | {:.2} | {:.2} |",
                results[m][at][0].units,
                mean(at, |r| r.cpu),
                mean(at, |r| r.cpu) / mean(0, |r| r.cpu),
                mean(at, |r| r.wall),
                mean(at, |r| r.wall) / mean(0, |r| r.wall),
                mean(at, |r| r.peak_mb),
                mean(at, |r| r.peak_mb) / mean(0, |r| r.peak_mb),
                mean(at, |r| r.edited_cpu),
                mean(at, |r| r.edited_cpu) / mean(0, |r| r.edited_cpu),
                mean(at, |r| r.edited_cpu) / (mean(0, |r| r.cpu) / results[m][0][0].units as f64),
            );
        }
    }
}
