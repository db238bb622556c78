//! Every cold unit cheaper, the same bytes every time: a unit split into its passes (device
//! passes per architecture as jobs of their own, an empty device pass where its guard leaves an
//! architecture dead, a host pass with a precompiled header of the includes it shares) gives
//! the object one hipcc call gives, byte for byte, and two builds of the same content in two
//! places and two processes give the same bytes. With Debian's hipcc (two live architectures)
//! and with the sid toolchain on composable_kernel instances (`gfx942;gfx950`, where each
//! `_gfx9.cpp` / `_gfx950.cpp` instance is dead for the other architecture).

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use qola_build::aiter::{AiterModuleSpec, prepare_module};
use qola_build::{CompileReport, HipBuild};
use qola_tests::{HipProject, hipcc_available};

/// The objects the child build `child` compiled into `out` (its `qola-test-object <path>`
/// lines), in order.
fn child_objects(child: &mut Command, out: &Path) -> Vec<Vec<u8>> {
    let output = child.env("QOLA_TEST_OUT", out).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("qola-test-object "))
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// Each unit's object bytes, by source file name.
fn objects(report: &CompileReport) -> Vec<(String, Vec<u8>)> {
    report
        .units
        .iter()
        .map(|u| {
            (
                u.source.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&u.object).unwrap(),
            )
        })
        .collect()
}

/// In a child: prints each unit's object path, on lines of their own (the test harness prints
/// its own words before a test's output).
fn print_objects(report: &CompileReport) {
    for unit in &report.units {
        println!("\nqola-test-object {}", unit.object.display());
    }
}

fn two_arch_build(project: &HipProject, tmp: &Path, out: &str) -> HipBuild {
    let mut b = HipBuild::new();
    b.files(&project.sources)
        .include(&project.include)
        .arch("gfx90a")
        .arch("gfx908")
        .cache_dir(tmp.join(format!("cache-{out}")))
        .out_dir(tmp.join(out))
        .jobs(2)
        .cargo_metadata(false);
    b
}

#[test]
fn a_unit_split_into_its_passes_is_the_one_call_s_bytes_in_every_place_with_debian_hipcc() {
    if common::is_child() {
        if std::env::var("QOLA_TEST_WHICH").as_deref() != Ok("debian") {
            return;
        }
        let out = PathBuf::from(std::env::var_os("QOLA_TEST_OUT").unwrap());
        let project = HipProject::create(&out.join("src"));
        // One call per unit: any launcher keeps a unit whole (here `env`, which runs it).
        let report = two_arch_build(&project, &out, "single")
            .launcher("env")
            .try_compile("demo")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(report.units.iter().all(|u| u.passes == "one call"));
        print_objects(&report);
        return;
    }
    if !hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The same project, in another place, in this process: split, as its plan says.
    let project = HipProject::create(&tmp.path().join("here/src"));
    let mut build = two_arch_build(&project, &tmp.path().join("here"), "split");
    let planned = common::planned_jobs(&build, "demo");
    let split = build
        .timings(true)
        .try_compile("demo")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        planned.len(),
        12,
        "two device passes, a bundle and a host pass per unit: {planned:?}"
    );
    assert_eq!(
        common::traced_jobs(&tmp.path().join("here/split"), "demo"),
        planned
    );
    assert!(
        split
            .units
            .iter()
            .all(|u| u.passes == "device gfx908, device gfx90a, host"
                || u.passes == "device gfx90a, device gfx908, host"),
        "{:?}",
        split.units.iter().map(|u| &u.passes).collect::<Vec<_>>()
    );
    let mut child = common::child(
        "a_unit_split_into_its_passes_is_the_one_call_s_bytes_in_every_place_with_debian_hipcc",
    );
    child.env("QOLA_TEST_WHICH", "debian");
    let single = child_objects(&mut child, &tmp.path().join("there"));
    let split_bytes: Vec<Vec<u8>> = objects(&split).into_iter().map(|(_, b)| b).collect();
    assert_eq!(split_bytes.len(), 3);
    assert!(
        split_bytes == single,
        "the split objects are the one call's bytes"
    );
}

/// Units whose includes are the same text share a precompiled header for their host passes only
/// when every header it names guards itself: the host pass reads its unit's includes again after
/// the header, and one without `#pragma once` or an `#ifndef` guard (AITER's generated
/// `impl/*.cuh`) would define its names twice. Debian's hipcc, two architectures.
#[test]
fn units_share_a_precompiled_header_only_over_headers_that_guard_themselves() {
    if !hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for (header, shared) in [
        ("#pragma once\nstruct Shared { int x; };\n", true),
        (
            "#ifndef SHARED_H\n#define SHARED_H\nstruct Shared { int x; };\n#endif\n",
            true,
        ),
        ("struct Shared { int x; };\n", false),
    ] {
        let dir = tmp.path().join(format!("case-{}", header.len()));
        qola_tests::write(&dir, "src/shared.h", header);
        let mut sources = Vec::new();
        for name in ["a", "b"] {
            let text = format!(
                "#include <hip/hip_runtime.h>\n#include \"shared.h\"\n__global__ void {name}(Shared* s) {{ s->x = 1; }}\n"
            );
            qola_tests::write(&dir, &format!("src/{name}.hip"), text);
            sources.push(dir.join(format!("src/{name}.hip")));
        }
        let report = HipBuild::new()
            .files(&sources)
            .arch("gfx90a")
            .arch("gfx908")
            .precompile_shared_includes(true)
            .cache_dir(dir.join("cache"))
            .out_dir(dir.join("out"))
            .jobs(2)
            .cargo_metadata(false)
            .try_compile("shared")
            .unwrap_or_else(|e| panic!("{header:?}: {e}"));
        for unit in &report.units {
            assert_eq!(
                unit.passes
                    .ends_with("host with a shared precompiled header"),
                shared,
                "{header:?}: {}",
                unit.passes
            );
        }
    }
}

/// Two instances of one composable_kernel forward kernel (its `_gfx9.cpp` and `_gfx950.cpp`
/// files), built for `gfx942;gfx950`: split (each one's other architecture dead, a shared
/// precompiled header for the host passes) here, in one call each in a child process; the
/// objects are the same bytes, and the fat binary has a code object for each architecture,
/// with kernels only where the guard holds.
#[test]
fn composable_kernel_instances_split_with_dead_passes_and_a_shared_header_are_the_one_call_s_bytes()
{
    let which = std::env::var("QOLA_TEST_WHICH");
    if common::is_child() && which.as_deref() != Ok("ck") {
        return;
    }
    let (Some(root), Some(hipcc)) = (common::prepared_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let place = match std::env::var_os("QOLA_TEST_OUT") {
        Some(out) => PathBuf::from(out),
        None => tmp.path().join("here"),
    };
    let module = ck_instances(&root, &hipcc, &place);
    if common::is_child() {
        let mut build = module;
        let report = build
            .launcher("env")
            .cache_dir(place.join("cache"))
            .out_dir(place.join("out"))
            .try_compile("instances")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(report.units.iter().all(|u| u.passes == "one call"));
        print_objects(&report);
        return;
    }
    let mut build = module;
    build
        .cache_dir(place.join("cache"))
        .out_dir(place.join("out"));
    // The plan names the jobs the build runs: dead passes, the shared header, the bundles.
    let planned = common::planned_jobs(&build, "instances");
    let split = build
        .timings(true)
        .try_compile("instances")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        planned.iter().any(|j| j.contains(": empty device gfx950"))
            && planned.iter().any(|j| j == "(shared): precompiled header")
            && planned.iter().filter(|j| j.ends_with(": bundle")).count() == 2,
        "{planned:?}"
    );
    assert_eq!(
        common::traced_jobs(&place.join("out"), "instances"),
        planned
    );
    let passes: Vec<(String, &str)> = split
        .units
        .iter()
        .map(|u| {
            let name = u.source.file_name().unwrap().to_string_lossy();
            (
                name.rsplit('_').next().unwrap().to_string(),
                u.passes.as_str(),
            )
        })
        .collect();
    for (suffix, passes) in &passes {
        let expected = match suffix.as_str() {
            "gfx9.cpp" => {
                "device gfx942, empty device gfx950, host with a shared precompiled header"
            }
            _ => "device gfx950, empty device gfx942, host with a shared precompiled header",
        };
        assert_eq!(*passes, expected, "{passes:?}");
    }
    // The same instances in one call each, in another place and another process.
    let mut child = common::child(
        "composable_kernel_instances_split_with_dead_passes_and_a_shared_header_are_the_one_call_s_bytes",
    );
    child.env("QOLA_TEST_WHICH", "ck");
    let single = child_objects(&mut child, &tmp.path().join("there"));
    let split_bytes: Vec<Vec<u8>> = objects(&split).into_iter().map(|(_, b)| b).collect();
    assert_eq!(split_bytes.len(), 2);
    assert!(
        split_bytes == single,
        "the split objects are the one call's bytes"
    );
    // What the fat binary holds, per architecture: a code object each, kernels where the
    // guard holds, none where it does not.
    for (unit, (suffix, _)) in split.units.iter().zip(&passes) {
        let kernels = fat_binary_kernels(&unit.object, tmp.path());
        let (live, dead) = match suffix.as_str() {
            "gfx9.cpp" => ("gfx942", "gfx950"),
            _ => ("gfx950", "gfx942"),
        };
        assert_eq!(kernels.len(), 2, "{kernels:?}");
        assert!(
            kernels.iter().any(|(t, n)| t.ends_with(live) && *n > 0),
            "{kernels:?}"
        );
        assert!(
            kernels.iter().any(|(t, n)| t.ends_with(dead) && *n == 0),
            "{kernels:?}"
        );
    }
}

/// The HipBuild of two instances of the narrow forward (`_gfx9.cpp` and `_gfx950.cpp`) for
/// `gfx942;gfx950`, their code generated under `place`.
fn ck_instances(root: &Path, hipcc: &Path, place: &Path) -> HipBuild {
    let text = "[[modules]]\nname = \"libmha_fwd\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n";
    let manifest = qola_build::Manifest::from_str_at(text, Path::new("test.toml")).unwrap();
    let archs = ["gfx942".to_string(), "gfx950".to_string()];
    let filter = "fmha_fwd_d128_bf16_batch_*_qr_async_vr_psddv_nlogits_nbias_nmask_lse_ndropout_*";
    let mut module = prepare_module(&AiterModuleSpec {
        root,
        module: &manifest.modules[0],
        archs: &archs,
        gen_dir: &place.join("gen"),
        cache: &qola_tests::fixtures_dir().join("cache"),
        ck_filter: Some(filter),
        variants: &Default::default(),
        compiler: Some(hipcc),
        toolchain: None,
        cargo_metadata: false,
        registry: None,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    module.sources.retain(|s| {
        let name = s.file_name().unwrap().to_string_lossy().into_owned();
        name.starts_with("fmha_fwd_d128")
            && (name.ends_with("_gfx9.cpp") || name.ends_with("_gfx950.cpp"))
    });
    assert_eq!(module.sources.len(), 2, "{:?}", module.sources);
    let mut build = module.hip_build();
    build.arch("gfx942").arch("gfx950").jobs(2);
    build
}

/// The offload targets of the fat binary in `object` and how many kernels (symbols ending in
/// `.kd`, a kernel's descriptor) each target's code object defines.
fn fat_binary_kernels(object: &Path, scratch: &Path) -> Vec<(String, usize)> {
    common::code::fat_binary_code_objects(object, scratch)
        .into_iter()
        .map(|(target, bytes)| {
            let code_object = scratch.join("code-object.elf");
            std::fs::write(&code_object, &bytes).unwrap();
            let symbols = Command::new("readelf")
                .arg("-sW")
                .arg(&code_object)
                .output()
                .unwrap();
            let kernels = String::from_utf8_lossy(&symbols.stdout)
                .lines()
                .filter(|l| {
                    l.split_whitespace()
                        .last()
                        .is_some_and(|s| s.ends_with(".kd"))
                })
                .count();
            (target, kernels)
        })
        .collect()
}
