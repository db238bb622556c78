//! Benchmark: what a cold unit costs, this qola against another `qola` binary (the commit
//! before a change), in one run, on AITER's narrow forward + backward (`NARROW_FWD_FILTER`,
//! `NARROW_BWD_FILTER`) for `gfx942;gfx950` with the sid toolchain, each from an empty cache:
//!
//! * the whole build: CPU seconds of qola and every compiler it ran (the children's rusage),
//!   wall seconds;
//! * each unit's wall and CPU seconds (this qola's log has them; the other's CPU comes from
//!   `/usr/bin/time` as its compiler launcher, which changes nothing there: it never splits a
//!   unit), by kind (CK forward / backward instance, pre/post kernel, API file);
//! * two units alone, two free cores (this qola's build again on a copy of its cache without
//!   the unit's record): the longest unit, and the longest unit with no architecture in its
//!   name (both device passes live), as this qola compiles them and in one call (the same qola
//!   with a launcher, which keeps a unit whole);
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

use qola_tests::{NARROW_BWD_FILTER, NARROW_FWD_FILTER};

const ARCHS: &str = "gfx942;gfx950";

/// One unit of a build's log: its source's file name, wall and CPU seconds.
struct UnitTime {
    name: String,
    wall: f64,
    cpu: f64,
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

/// How a build is run.
#[derive(Clone, Copy)]
enum How<'a> {
    /// On an empty cache; `timed`: each compile under `/usr/bin/time` (the other qola's CPU
    /// seconds per unit).
    Cold { timed: bool },
    /// On a copy of the cache `seed` without the record of the unit `unit` (so only it
    /// compiles, with both cores free), in one call (`one_call`: a launcher keeps a unit
    /// whole) or as this qola compiles it.
    Alone {
        seed: &'a Path,
        unit: &'a str,
        one_call: bool,
    },
}

/// `qola build` of the narrow modules with `qola` into `work/<name>`.
fn build(qola: &Path, name: &str, work: &Path, sid: &Path, root: &Path, how: How) -> Run {
    let out = work.join(name);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    if let How::Alone { seed, unit, .. } = how {
        let copied = Command::new("cp")
            .arg("-a")
            .arg(seed)
            .arg(out.join("cache"))
            .status()
            .unwrap();
        assert!(copied.success());
        let records = out.join("cache/hip/units");
        let mut removed = 0;
        for entry in std::fs::read_dir(&records).unwrap().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            if text.contains(&format!("/{unit}\",")) {
                std::fs::remove_file(entry.path()).unwrap();
                removed += 1;
            }
        }
        assert_eq!(removed, 1, "one record of {unit} in {}", records.display());
    }
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
    let timed = matches!(how, How::Cold { timed: true });
    if timed {
        command.env(
            "QOLA_COMPILER_LAUNCHER",
            format!("/usr/bin/time -a -o {} -f %U,%S,%e,%C", times.display()),
        );
    }
    if let How::Alone { one_call: true, .. } = how {
        command.env("QOLA_COMPILER_LAUNCHER", "env");
    }
    let (cpu, start) = (qola_tests::children_cpu(), Instant::now());
    let output = command.output().unwrap();
    let (cpu, wall) = (qola_tests::children_cpu() - cpu, start.elapsed());
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

    let other = build(
        baseline,
        "other",
        &work,
        &sid,
        &root,
        How::Cold { timed: true },
    );
    let this = build(qola, "this", &work, &sid, &root, How::Cold { timed: false });
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

    // Units alone, two free cores: as this qola compiles them, and in one call. The longest
    // unit, and the longest unit compiled for both architectures (a source without an
    // architecture suffix: no dead pass, two live device passes).
    let longest = |units: &[UnitTime], two_live: bool| -> String {
        units
            .iter()
            .filter(|u| {
                !two_live || !(u.name.ends_with("_gfx9.cpp") || u.name.ends_with("_gfx950.cpp"))
            })
            .max_by(|a, b| a.wall.total_cmp(&b.wall))
            .unwrap()
            .name
            .clone()
    };
    let seed = work.join("this/cache");
    println!("\n| unit alone, two free cores | one call, s | this qola, s | ratio |");
    println!("|---|---|---|---|");
    for unit in [longest(&this.units, false), longest(&this.units, true)] {
        let seconds = |one_call: bool| {
            let name = if one_call {
                "alone-one-call"
            } else {
                "alone-this"
            };
            let how = How::Alone {
                seed: &seed,
                unit: &unit,
                one_call,
            };
            let run = build(qola, name, &work, &sid, &root, how);
            assert_eq!(run.units.len(), 1, "{name}: only {unit} compiles");
            run.units[0].wall
        };
        let (one, split) = (seconds(true), seconds(false));
        println!(
            "| {unit} ({}) | {one:.1} | {split:.1} | {:.3} |",
            kind(&unit),
            split / one
        );
    }
}
