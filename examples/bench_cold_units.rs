//! Benchmark: what a cold unit costs, this qola against another `qola` binary (the commit
//! before a change), in one run, on AITER's narrow forward + backward (`NARROW_FWD_FILTER`,
//! `NARROW_BWD_FILTER`) for `gfx942;gfx950` with the sid toolchain, each from an empty cache:
//!
//! * the whole build: CPU seconds of qola and every compiler it ran (the children's rusage),
//!   wall seconds;
//! * each unit's wall and CPU seconds (this qola's log has them; the other's CPU comes from
//!   `/usr/bin/time` as its compiler launcher, which changes nothing there: it never splits a
//!   unit), by kind (CK forward / backward instance, pre/post kernel, API file);
//! * the longest unit alone, two free cores (`jobs(2)`): split into its passes, and in one call
//!   (the same qola with a launcher, which keeps a unit whole);
//! * a projection for receipt 700 (`gfx942;gfx950`): the unit counts of `BENCHMARKS.md` times
//!   each kind's mean CPU seconds.
//!
//! ```text
//! tools/sid-hipcc-setup
//! git worktree add /tmp/qola-base <commit> && (cd /tmp/qola-base && CARGO_TARGET_DIR=/tmp/base-target cargo build --release -p qola-build --features cli)
//! cargo build --release -p qola-build --features cli
//! cargo run --release -p qola-examples --example bench_cold_units -- target/release/qola /tmp/base-target/release/qola
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use qola_build::aiter::{AiterModuleSpec, prepare_module};
use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER};

const ARCHS: &str = "gfx942;gfx950";

/// One unit of a build's log: its source's file name, wall and CPU seconds.
struct UnitTime {
    name: String,
    wall: f64,
    cpu: f64,
}

/// The children's CPU time so far (user + system).
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn kind(name: &str) -> &'static str {
    if name.starts_with("fmha_fwd_d") {
        "CK forward instance"
    } else if name.starts_with("fmha_bwd_d") && !name.contains("dot_do_o") {
        "CK backward instance"
    } else if name.contains("dot_do_o") || name.contains("convert_dq") {
        "backward pre/post kernel"
    } else {
        "API (dispatch) file"
    }
}

struct Run {
    cpu: Duration,
    wall: Duration,
    units: Vec<UnitTime>,
}

/// `qola build` of the narrow modules with `qola` into `work/<name>` on an empty cache.
fn build(qola: &Path, name: &str, work: &Path, sid: &Path, root: &Path, timed: bool) -> Run {
    let out = work.join(name);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let times = out.join("times.txt");
    let mut command = Command::new(qola);
    command
        .args(["build", "--skip", "-m"])
        .arg(work.join("narrow.toml"))
        .arg("--aiter-root")
        .arg(root)
        .arg("-o")
        .arg(out.join("out"))
        .args(["--arch", ARCHS])
        .env("HIPCC", sid)
        .env("QOLA_CACHE_DIR", out.join("cache"))
        .env("QOLA_CK_FILTER_LIBMHA_FWD", NARROW_FWD_FILTER)
        .env("QOLA_CK_FILTER_LIBMHA_BWD", NARROW_BWD_FILTER)
        .env("NUM_JOBS", "2")
        .env_remove("QOLA_COMPILER_LAUNCHER");
    if timed {
        command.env(
            "QOLA_COMPILER_LAUNCHER",
            format!("/usr/bin/time -a -o {} -f %U,%S,%e,%C", times.display()),
        );
    }
    let (cpu, start) = (children_cpu(), Instant::now());
    let output = command.output().unwrap();
    let (cpu, wall) = (children_cpu() - cpu, start.elapsed());
    assert!(
        output.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut units = log_units(&out.join("out"));
    if timed {
        // The launcher's lines: user, system, wall, then the command (ending in the source).
        let text = std::fs::read_to_string(&times).unwrap();
        for line in text.lines() {
            let fields: Vec<&str> = line.splitn(4, ',').collect();
            let [user, system, _, command] = fields[..] else {
                continue;
            };
            let source = command.split_whitespace().last().unwrap_or_default();
            let source = Path::new(source)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            if let Some(unit) = units.iter_mut().find(|u| u.name == source) {
                unit.cpu =
                    user.parse::<f64>().unwrap_or(0.0) + system.parse::<f64>().unwrap_or(0.0);
            }
        }
    }
    Run { cpu, wall, units }
}

/// Every compiled unit of the logs under `out`: wall seconds, CPU seconds when the log says.
fn log_units(out: &Path) -> Vec<UnitTime> {
    let mut units = Vec::new();
    for entry in std::fs::read_dir(out.join("_qola/build"))
        .unwrap()
        .flatten()
    {
        for file in std::fs::read_dir(entry.path()).unwrap().flatten() {
            let path = file.path();
            if !path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("qola-compile-")
            {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                if words.first() != Some(&"compiled") {
                    continue;
                }
                let seconds = |w: &str| w.trim_end_matches('s').parse::<f64>().unwrap_or(0.0);
                let (cpu, source) = match words.get(3) {
                    Some(&"cpu") => (seconds(words[4]), words[5]),
                    _ => (0.0, words[3]),
                };
                let name = Path::new(source)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                units.push(UnitTime {
                    name,
                    wall: seconds(words[1]),
                    cpu,
                });
            }
        }
    }
    units
}

/// Mean CPU and wall seconds per kind, and the longest unit.
fn by_kind(units: &[UnitTime]) -> BTreeMap<&'static str, (usize, f64, f64)> {
    let mut kinds: BTreeMap<&'static str, (usize, f64, f64)> = BTreeMap::new();
    for unit in units {
        let entry = kinds.entry(kind(&unit.name)).or_default();
        entry.0 += 1;
        entry.1 += unit.cpu;
        entry.2 += unit.wall;
    }
    for (n, cpu, wall) in kinds.values_mut() {
        *cpu /= *n as f64;
        *wall /= *n as f64;
    }
    kinds
}

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [qola, baseline] = &args[..] else {
        panic!("usage: bench_cold_units <this qola> <the other qola>");
    };
    let sid = qola_tests::sid_hipcc().expect("tools/sid-hipcc-setup");
    let real = qola_tests::real_aiter().expect("the AITER wheel");
    let work = qola_tests::fixtures_dir().join("bench-cold-units");
    std::fs::create_dir_all(&work).unwrap();
    let root = work.join("aiter");
    std::fs::write(
        work.join("narrow.toml"),
        format!(
            "[qola]\naiter_commit = \"{}\"\naiter_url = \"{}\"\nnamespace = \"bench\"\n\n[[modules]]\nname = \"libmha_fwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n\n[[modules]]\nname = \"libmha_bwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\n",
            real.commit,
            real.upstream.display()
        ),
    )
    .unwrap();
    // The checkout, prepared once (both binaries then build it as it is).
    let prepared = Command::new(qola)
        .args(["prepare", "-m"])
        .arg(work.join("narrow.toml"))
        .arg("--root")
        .arg(&root)
        .env("QOLA_CACHE_DIR", work.join("prepare-cache"))
        .output()
        .unwrap();
    assert!(
        prepared.status.success(),
        "{}",
        String::from_utf8_lossy(&prepared.stderr)
    );

    let other = build(baseline, "other", &work, &sid, &root, true);
    let this = build(qola, "this", &work, &sid, &root, false);
    println!("narrow forward + backward, {ARCHS}, sid toolchain, 2 jobs, each on an empty cache\n");
    println!("| build | units | CPU s (children) | wall s |");
    println!("|---|---|---|---|");
    for (name, run) in [("the other qola", &other), ("this qola", &this)] {
        println!(
            "| {name} | {} | {:.1} | {:.1} |",
            run.units.len(),
            run.cpu.as_secs_f64(),
            run.wall.as_secs_f64()
        );
    }
    println!(
        "\nCPU ratio this/other: {:.3}; wall ratio: {:.3}\n",
        this.cpu.as_secs_f64() / other.cpu.as_secs_f64(),
        this.wall.as_secs_f64() / other.wall.as_secs_f64()
    );
    let (other_kinds, this_kinds) = (by_kind(&other.units), by_kind(&this.units));
    println!("| kind | units | mean CPU s, other | mean CPU s, this | ratio |");
    println!("|---|---|---|---|---|");
    for (kind, (n, cpu, _)) in &other_kinds {
        let this_cpu = this_kinds.get(kind).map_or(0.0, |k| k.1);
        println!(
            "| {kind} | {n} | {cpu:.1} | {this_cpu:.1} | {:.3} |",
            this_cpu / cpu
        );
    }
    // Receipt 700 for gfx942;gfx950: the counts of BENCHMARKS.md's unit table (each CK
    // instance is generated once per architecture family).
    let counts = [
        ("CK forward instance", 492 + 540),
        ("CK backward instance", 3360 + 4032),
        ("backward pre/post kernel", 276 + 288),
    ];
    println!("\n| receipt 700, {ARCHS} | units | CPU hours, other | CPU hours, this |");
    println!("|---|---|---|---|");
    let (mut total_other, mut total_this) = (0.0, 0.0);
    for (kind, count) in counts {
        let cpu = |kinds: &BTreeMap<&str, (usize, f64, f64)>| kinds.get(kind).map_or(0.0, |k| k.1);
        let (o, t) = (
            count as f64 * cpu(&other_kinds) / 3600.0,
            count as f64 * cpu(&this_kinds) / 3600.0,
        );
        total_other += o;
        total_this += t;
        println!("| {kind} | {count} | {o:.1} | {t:.1} |");
    }
    println!(
        "| all | | {total_other:.1} | {total_this:.1} (ratio {:.3}) |",
        total_this / total_other
    );

    // The longest unit alone, two free cores: split, and in one call.
    let longest = other
        .units
        .iter()
        .chain(&this.units)
        .max_by(|a, b| a.wall.total_cmp(&b.wall))
        .unwrap()
        .name
        .clone();
    let alone = |one_call: bool| -> f64 {
        let dir = work.join(if one_call {
            "alone-one-call"
        } else {
            "alone-split"
        });
        let _ = std::fs::remove_dir_all(&dir);
        // The compiler's answers this qola's build already has (architectures, flags, the
        // proofs for dead passes): the unit's own passes are what is measured.
        let probes = work.join("this/cache/probes");
        std::fs::create_dir_all(dir.join("cache/probes")).unwrap();
        for entry in std::fs::read_dir(&probes).unwrap().flatten() {
            std::fs::copy(
                entry.path(),
                dir.join("cache/probes").join(entry.file_name()),
            )
            .unwrap();
        }
        let text = format!(
            "[[modules]]\nname = \"{}\"\nreceipt = 700\n",
            if longest.starts_with("fmha_fwd") {
                "libmha_fwd"
            } else {
                "libmha_bwd"
            }
        );
        let manifest = qola_build::Manifest::from_str_at(&text, Path::new("bench.toml")).unwrap();
        let archs: Vec<String> = ARCHS.split(';').map(String::from).collect();
        let filter = if longest.starts_with("fmha_fwd") {
            NARROW_FWD_FILTER
        } else {
            NARROW_BWD_FILTER
        };
        let mut module = prepare_module(&AiterModuleSpec {
            root: &root,
            module: &manifest.modules[0],
            archs: &archs,
            gen_dir: &dir.join("gen"),
            cache: &dir.join("cache"),
            ck_filter: Some(filter),
            variants: &Default::default(),
            compiler: Some(&sid),
            cargo_metadata: false,
        })
        .unwrap_or_else(|e| panic!("{e}"));
        module
            .sources
            .retain(|s| s.file_name().unwrap().to_string_lossy() == longest);
        let mut build = module.hip_build();
        build
            .arch("gfx942")
            .arch("gfx950")
            .jobs(2)
            .cache_dir(dir.join("cache"))
            .out_dir(dir.join("out"))
            .cargo_metadata(false);
        if one_call {
            build.launcher("env");
        }
        let start = Instant::now();
        let report = build.try_compile("alone").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.compiled(), 1);
        println!(
            "  {}: {}",
            if one_call { "one call" } else { "split" },
            report.units[0].passes
        );
        start.elapsed().as_secs_f64()
    };
    println!("\nthe longest unit, {longest}, alone with two free cores:");
    let (split, one) = (alone(false), alone(true));
    println!(
        "| how | wall s |\n|---|---|\n| one call | {one:.1} |\n| split | {split:.1} (ratio {:.3}) |",
        split / one
    );
}
