//! Benchmark: AITER's `libmha_fwd` and `libmha_bwd` from the real tree (the amd-aiter wheel as
//! git repositories, prepared with `patches/aiter`), with the composable_kernel toolchain of
//! `tools/sid-hipcc-setup`, in one run:
//!
//! 1. the units code generation produces, per module, recipe (AITER's own, CK receipt 600, against
//!    qola.toml's, receipt 700) and architecture;
//! 2. a narrow forward and backward (the filters of the downstream test), every unit timed and its
//!    peak memory taken (`/usr/bin/time` as the compiler launcher), on an empty object cache;
//! 3. the CPU hours a full receipt-700 build for gfx942 projects to, from those means;
//! 4. a one-line change in a composable_kernel header that only the forward includes: units
//!    recompiled (predicted from the depfiles, then measured) against the full rebuild a tool
//!    without header tracking does, and the revert, which compiles nothing.
//!
//! ```text
//! tools/sid-hipcc-setup
//! cargo run --release -p qola-examples --example bench_aiter
//! ```
//!
//! Works in `target/qola-fixtures/bench-aiter` (its own checkout, which step 4 edits and restores).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use qola_build::CompileReport;
use qola_build::aiter::AiterModule;
use qola_build::manifest::Module;
use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER};

const JOBS: usize = 2;
const ARCHS: [&str; 2] = ["gfx942", "gfx950"];
/// The header step 4 edits: CK's fmha forward example header (the backward has its own).
const EDITED_HEADER: &str = "3rdparty/composable_kernel/example/ck_tile/01_fmha/fmha_fwd.hpp";
const EDIT: &str = "// qola bench_aiter: a one-line change\n";

struct Bench {
    root: PathBuf,
    work: PathBuf,
    hipcc: PathBuf,
}

impl Bench {
    fn module(&self, m: &Module, arch: &str, filter: Option<&str>, gen_dir: &str) -> AiterModule {
        common::aiter_module(
            &self.root,
            m,
            arch,
            filter,
            &self.work.join(gen_dir),
            &self.work.join("cache"),
            &self.hipcc,
        )
    }

    /// Compiles `m` (every unit timed into `times`), on the object cache `cache`.
    fn compile(&self, m: &AiterModule, cache: &Path, times: &Path) -> CompileReport {
        let name = m.recipe.name.clone();
        m.hip_build()
            .arch("gfx942")
            .jobs(JOBS)
            .launcher(&format!(
                "/usr/bin/time -a -o {} -f %e,%M,%C",
                times.display()
            ))
            .cache_dir(cache)
            .out_dir(self.work.join("out").join(&name))
            .cargo_metadata(false)
            .try_compile(name.strip_prefix("lib").unwrap_or(&name))
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// What kind of unit a generated source is, by its name.
fn kind(source: &Path) -> &'static str {
    let name = source.file_name().unwrap().to_string_lossy();
    if name.contains("_api") || !name.starts_with("fmha_") {
        "API (dispatch) file"
    } else if name.starts_with("fmha_bwd_dot_do_o") || name.starts_with("fmha_bwd_convert_dq") {
        "backward pre/post kernel"
    } else if name.starts_with("fmha_bwd_") {
        "CK backward instance"
    } else {
        // fmha_fwd_, fmha_fwd_splitkv(_combine)_, fmha_batch_prefill_, ...
        "CK forward instance"
    }
}

/// Counts of a module's units by kind.
fn census(m: &AiterModule) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for source in &m.sources {
        *out.entry(kind(source)).or_default() += 1;
    }
    out
}

/// `(seconds, peak MB)` per source, from `/usr/bin/time` lines `e,M,command`.
fn unit_times(path: &Path) -> BTreeMap<PathBuf, (f64, f64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.splitn(3, ',');
        let (Some(e), Some(m), Some(cmd)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let (Ok(seconds), Ok(kb)) = (e.parse::<f64>(), m.parse::<f64>()) else {
            continue;
        };
        if let Some(source) = cmd.split_whitespace().last() {
            out.insert(PathBuf::from(source), (seconds, kb / 1024.0));
        }
    }
    out
}

fn restore_header(root: &Path) {
    let path = root.join(EDITED_HEADER);
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Some(original) = text.strip_suffix(EDIT)
    {
        std::fs::write(&path, original).unwrap();
    }
}

fn main() {
    let hipcc = qola_tests::sid_hipcc().expect("the sid toolchain: run tools/sid-hipcc-setup");
    let work = qola_tests::fixtures_dir().join("bench-aiter");
    let bench = Bench {
        root: work.join("aiter"),
        work: work.clone(),
        hipcc,
    };
    // A run stopped in step 4 leaves the edit: undo it so preparation finds no local edit.
    restore_header(&bench.root);
    common::prepare_real(&bench.root, &work.join("cache"));
    let manifest = common::manifest();

    // 1. Units per module, recipe and architecture.
    println!("## Units per module, recipe and architecture\n");
    println!(
        "| module | recipe | arch | CK instances | pre/post kernels | API files | total units |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut receipt_700_gfx942 = BTreeMap::new();
    let mut receipt_600_gfx942 = BTreeMap::new();
    for ours in &manifest.modules {
        // AITER's own recipe: the same module without qola.toml's overrides.
        let mut aiter_own = ours.clone();
        aiter_own.receipt = None;
        aiter_own.drop_directions.clear();
        for (recipe, m) in [
            ("AITER's (CK receipt 600)", &aiter_own),
            ("qola.toml (receipt 700)", ours),
        ] {
            for arch in ARCHS {
                let gen_dir = format!("gen-census/{arch}/{}", m.receipt.unwrap_or(600));
                let counts = census(&bench.module(m, arch, None, &gen_dir));
                let get = |k: &str| counts.get(k).copied().unwrap_or(0);
                let instances = get("CK forward instance") + get("CK backward instance");
                println!(
                    "| {} | {recipe} | {arch} | {instances} | {} | {} | {} |",
                    ours.name,
                    get("backward pre/post kernel"),
                    get("API (dispatch) file"),
                    counts.values().sum::<usize>()
                );
                if arch == "gfx942" {
                    let target = if m.receipt.is_some() {
                        &mut receipt_700_gfx942
                    } else {
                        &mut receipt_600_gfx942
                    };
                    for (k, n) in counts {
                        *target.entry(k).or_insert(0) += n;
                    }
                }
            }
        }
    }

    // 2. The narrow forward and backward on an empty object cache, every unit timed.
    let cache = work.join("objects");
    let _ = std::fs::remove_dir_all(&cache);
    let times = work.join("unit-times.csv");
    let _ = std::fs::remove_file(&times);
    let narrow = [
        ("libmha_fwd", NARROW_FWD_FILTER),
        ("libmha_bwd", NARROW_BWD_FILTER),
    ]
    .map(|(name, filter)| {
        bench.module(
            &common::module(&manifest, name),
            "gfx942",
            Some(filter),
            "gen-narrow",
        )
    });
    let start = Instant::now();
    let first: Vec<CompileReport> = narrow
        .iter()
        .map(|m| bench.compile(m, &cache, &times))
        .collect();
    let full = start.elapsed();
    let measured = unit_times(&times);
    println!(
        "\n## Narrow gfx942 build, empty cache, {JOBS} jobs: {:.1} s\n",
        full.as_secs_f64()
    );
    println!("| unit | kind | compile time | peak memory |");
    println!("|---|---|---|---|");
    let mut per_kind: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for (source, (seconds, mb)) in &measured {
        let name = source.file_name().unwrap().to_string_lossy();
        let short: String = name.chars().take(72).collect();
        println!(
            "| `{short}{}` | {} | {seconds:.1} s | {mb:.0} MB |",
            if name.len() > 72 { "…" } else { "" },
            kind(source)
        );
        per_kind
            .entry(kind(source))
            .or_default()
            .push((*seconds, *mb));
    }
    println!("\n| kind | units | mean time | max time | mean peak | max peak |");
    println!("|---|---|---|---|---|---|");
    let mut mean_time = BTreeMap::new();
    for (k, v) in &per_kind {
        let n = v.len() as f64;
        let mean_s = v.iter().map(|x| x.0).sum::<f64>() / n;
        let max_s = v.iter().map(|x| x.0).fold(0.0, f64::max);
        let mean_mb = v.iter().map(|x| x.1).sum::<f64>() / n;
        let max_mb = v.iter().map(|x| x.1).fold(0.0, f64::max);
        println!(
            "| {k} | {} | {mean_s:.1} s | {max_s:.1} s | {mean_mb:.0} MB | {max_mb:.0} MB |",
            v.len()
        );
        mean_time.insert(*k, mean_s);
    }

    // 3. Projection: instance counts times the measured means (API files not included: their
    // size grows with the instance count, so the narrow ones say little about the full ones).
    let project = |counts: &BTreeMap<&str, usize>| -> f64 {
        counts
            .iter()
            .filter(|(k, _)| **k != "API (dispatch) file")
            .map(|(k, n)| *n as f64 * mean_time.get(k).copied().unwrap_or(0.0))
            .sum::<f64>()
            / 3600.0
    };
    let (ours, theirs) = (project(&receipt_700_gfx942), project(&receipt_600_gfx942));
    println!("\n## Projected CPU time of a full gfx942 build (libmha_fwd + libmha_bwd)\n");
    println!("| recipe | instances + pre/post kernels | CPU hours | ratio to AITER's |");
    println!("|---|---|---|---|");
    for (recipe, counts, hours) in [
        ("AITER's (CK receipt 600)", &receipt_600_gfx942, theirs),
        ("qola.toml (receipt 700)", &receipt_700_gfx942, ours),
    ] {
        let units: usize = counts
            .iter()
            .filter(|(k, _)| **k != "API (dispatch) file")
            .map(|(_, n)| n)
            .sum();
        println!(
            "| {recipe} | {units} | {hours:.1} | {:.3} |",
            hours / theirs
        );
    }

    // 4. A one-line change in a header only the forward includes.
    let header = bench.root.join(EDITED_HEADER);
    let predicted: Vec<usize> = first
        .iter()
        .map(|r| {
            r.units
                .iter()
                .filter(|u| u.headers.iter().any(|h| h.ends_with(EDITED_HEADER)))
                .count()
        })
        .collect();
    let mut text = std::fs::read_to_string(&header).unwrap();
    text.push_str(EDIT);
    std::fs::write(&header, &text).unwrap();
    let rebuild = || -> (Vec<String>, Duration) {
        let start = Instant::now();
        let counts = narrow
            .iter()
            .map(|m| {
                let r = bench.compile(m, &cache, &times);
                format!("{}/{}", r.compiled(), r.units.len())
            })
            .collect();
        (counts, start.elapsed())
    };
    let (edited, edited_time) = rebuild();
    restore_header(&bench.root);
    let (reverted, reverted_time) = rebuild();
    println!("\n## One line added to `{EDITED_HEADER}`\n");
    println!(
        "Units including it (from the first build's depfiles): libmha_fwd {}, libmha_bwd {}.\n",
        predicted[0], predicted[1]
    );
    println!(
        "| build | libmha_fwd compiled/total | libmha_bwd compiled/total | time | ratio to the full rebuild |"
    );
    println!("|---|---|---|---|---|");
    let total = |r: &CompileReport| r.units.len();
    println!(
        "| full rebuild (no header tracking), measured in step 2 | {}/{} | {}/{} | {:.1} s | 1.000 |",
        total(&first[0]),
        total(&first[0]),
        total(&first[1]),
        total(&first[1]),
        full.as_secs_f64()
    );
    for (label, counts, time) in [
        ("after the edit", edited, edited_time),
        ("after reverting it", reverted, reverted_time),
    ] {
        println!(
            "| {label} | {} | {} | {:.1} s | {:.3} |",
            counts[0],
            counts[1],
            time.as_secs_f64(),
            time.as_secs_f64() / full.as_secs_f64()
        );
    }
}
