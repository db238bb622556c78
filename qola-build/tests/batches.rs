//! composable_kernel's instances compiled in batches (issue 47), on the real tree with the sid
//! toolchain: the same code as one unit per instance, the same bytes wherever it is built, and
//! an edited instance recompiling only its batch.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use qola_tests::{TWO_INSTANCE_FWD_FILTER, fixtures_dir};

/// The narrow forward's module for gfx942 with two of its instances (`TWO_INSTANCE_FWD_FILTER`:
/// one family, with and without the mask), its code generated under `place`, batched as
/// `QOLA_BATCH` of this process says.
fn narrow_forward(root: &Path, hipcc: &Path, place: &Path) -> qola_build::aiter::AiterModule {
    let text = "[[modules]]\nname = \"libmha_fwd\"\nreceipt = 700\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n";
    let manifest = qola_build::Manifest::from_str_at(text, Path::new("test.toml")).unwrap();
    common::prepare_gfx942_module(
        root,
        hipcc,
        &manifest.modules[0],
        Some(TWO_INSTANCE_FWD_FILTER),
        &place.join("gen"),
    )
}

/// In a child (`QOLA_BATCH`, `QOLA_TEST_OUT` and `QOLA_CACHE_DIR` set by the parent): builds
/// the narrow forward's CK instances (the API and AITER's own sources aside) with that cache,
/// prints each unit's source name and object, and the library.
fn build_in_child(root: &Path, hipcc: &Path) {
    let place = PathBuf::from(std::env::var_os("QOLA_TEST_OUT").unwrap());
    let cache = PathBuf::from(std::env::var_os("QOLA_CACHE_DIR").unwrap());
    let mut module = narrow_forward(root, hipcc, &place);
    module.sources.retain(|s| {
        let name = s.file_name().unwrap().to_string_lossy();
        name.starts_with("fmha_fwd_d128") && name.ends_with("_gfx9.cpp")
            || s.parent().is_some_and(|d| d.ends_with("qola-batches"))
    });
    let report = module
        .hip_build()
        .arch("gfx942")
        .jobs(2)
        .cache_dir(cache)
        .out_dir(place.join("out"))
        .cargo_metadata(false)
        .timings(true)
        .try_compile("instances")
        .unwrap_or_else(|e| panic!("{e}"));
    for unit in &report.units {
        println!(
            "\nqola-test-unit {}\t{}",
            unit.source.file_name().unwrap().to_string_lossy(),
            unit.object.display()
        );
    }
    println!("\nqola-test-library {}", report.library.display());
}

/// Runs this test in a child with `QOLA_BATCH=batch`, building under `place` with qola's cache
/// `cache`: each unit's source name and object, and the library.
fn child_build(
    test: &str,
    batch: &str,
    place: &Path,
    cache: &Path,
) -> (Vec<(String, PathBuf)>, PathBuf) {
    let out = common::child(test)
        .env("QOLA_BATCH", batch)
        .env("QOLA_TEST_OUT", place)
        .env("QOLA_CACHE_DIR", cache)
        .output()
        .unwrap();
    let said = common::text(&out);
    assert!(out.status.success(), "{said}");
    let units = said
        .lines()
        .filter_map(|l| l.strip_prefix("qola-test-unit "))
        .map(|l| {
            let (name, object) = l.split_once('\t').unwrap();
            (name.to_string(), PathBuf::from(object))
        })
        .collect();
    let library = said
        .lines()
        .find_map(|l| l.strip_prefix("qola-test-library "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{said}"));
    (units, library)
}

/// The narrow forward's two instances, compiled as one batch (`QOLA_BATCH=2`) and as one unit
/// each (`QOLA_BATCH=1`), have the same kernels: each kernel's instructions and metadata
/// (registers, spills, LDS, arguments) are equal, and so is every host function (its bytes and
/// relocations) but the ones
/// that register a translation unit's kernels and run its static initializers. A second
/// batched build, in another place, process and cache, gives the same object and library bytes.
#[test]
fn a_batch_compiles_the_same_kernels_and_host_code_as_one_unit_per_instance() {
    const TEST: &str = "a_batch_compiles_the_same_kernels_and_host_code_as_one_unit_per_instance";
    let (Some(root), Some(hipcc)) = (common::prepared_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    if common::is_child() {
        build_in_child(&root, &hipcc);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The batches from empty caches of their own: compiled, traced, and below compiled again
    // elsewhere from nothing. The instances one unit each go to the fixtures' cache, where the
    // other test here finds them when its batch fails (a warm machine's run compiles none).
    let batched_place = tmp.path().join("batched");
    let (batched, batched_library) =
        child_build(TEST, "2", &batched_place, &batched_place.join("cache"));
    let (single, _) = child_build(
        TEST,
        "1",
        &tmp.path().join("single"),
        &fixtures_dir().join("cache"),
    );
    assert_eq!(batched.len(), 1, "one batch: {batched:?}");
    assert!(batched[0].0.ends_with("_gfx9+1.cpp"), "{batched:?}");
    assert_eq!(single.len(), 2, "two instances: {single:?}");

    // The timings report names the batch's instances: in its trace and on its page.
    let out = tmp.path().join("batched").join("out");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("qola-timings-instances.json")).unwrap())
            .unwrap();
    let holds: Vec<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "X" && e["args"]["source"].as_str().unwrap().ends_with("+1.cpp"))
        .map(|e| e["args"]["holds"].as_array().unwrap())
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    let mut names: Vec<&str> = single.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    let mut sorted = holds.clone();
    sorted.sort();
    assert_eq!(sorted, names, "the batch's instances in the trace");
    let page = std::fs::read_to_string(out.join("qola-timings-instances.html")).unwrap();
    assert!(page.contains(holds[0]), "the page lists the instances");

    // A translation unit's own: its kernels' registration and its static initializers.
    let own = |f: &str| f.starts_with("__hip_module_") || f.starts_with("_GLOBAL__sub_I_");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let batch = common::code::code_of(&hipcc, &batched[0].1, &scratch);
    let mut kernels = BTreeMap::new();
    let mut host = BTreeMap::new();
    for (name, object) in &single {
        let code = common::code::code_of(&hipcc, object, &scratch);
        assert_eq!(code.kernels.len(), 1, "{name}: {:?}", code.kernels.keys());
        kernels.extend(code.kernels);
        for (function, text) in code.host.into_iter().filter(|(f, _)| !own(f)) {
            // A function every instance has (a template's, an inline one's) is the same in each.
            if let Some(seen) = host.get(&function) {
                assert!(*seen == text, "{function} differs between instances");
            }
            host.insert(function, text);
        }
    }
    assert_eq!(
        batch.kernels.keys().collect::<Vec<_>>(),
        kernels.keys().collect::<Vec<_>>()
    );
    for (kernel, (instructions, metadata)) in &kernels {
        let (batch_instructions, batch_metadata) = &batch.kernels[kernel];
        assert!(!instructions.is_empty(), "{kernel}: no code read");
        assert!(
            batch_instructions == instructions,
            "{kernel}: its code bytes differ"
        );
        assert_eq!(batch_metadata, metadata, "{kernel}: metadata");
    }
    let compared: Vec<&String> = host.keys().collect();
    assert_eq!(
        batch.host.keys().filter(|f| !own(f)).collect::<Vec<_>>(),
        compared
    );
    for function in &compared {
        assert!(
            batch.host[*function] == host[*function],
            "{function}: its code or relocations differ"
        );
    }
    println!(
        "{} kernels and {} host functions the same (instructions, metadata); {:?} are the translation units' own",
        kernels.len(),
        compared.len(),
        batch.host.keys().filter(|f| own(f)).collect::<Vec<_>>()
    );

    // Built again elsewhere, from nothing: the same bytes.
    let again_place = tmp.path().join("another place");
    let (again, again_library) = child_build(TEST, "2", &again_place, &again_place.join("cache"));
    assert_eq!(again.len(), 1);
    assert!(
        std::fs::read(&again[0].1).unwrap() == std::fs::read(&batched[0].1).unwrap(),
        "the batch's object differs between two builds"
    );
    assert!(
        std::fs::read(&again_library).unwrap() == std::fs::read(&batched_library).unwrap(),
        "the library differs between two builds"
    );
}

/// An instance that does not compile, in a batch: the batch fails, qola says so once and
/// compiles its instances one unit each, and the build's error names that instance.
#[test]
fn a_batch_that_fails_is_compiled_again_one_instance_each_and_the_error_names_the_instance() {
    let (Some(real), Some(hipcc)) = (qola_tests::real_aiter(), qola_tests::sid_hipcc()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // The wheel's AITER, prepared in the fixtures (`aiter-narrow`, as the other builds' tests).
    let manifest = qola_tests::ManifestText::new(&real.commit, &real.upstream)
        .set("namespace", "te")
        .archs(&["gfx942"])
        .narrow_forward()
        .write(tmp.path().join("fwd.toml"));
    let out = tmp.path().join("out");
    let qola = |verb: &str| {
        let mut command = common::qola_command(&["GPU_ARCHS", "QOLA_BATCH"]);
        command
            .arg(verb)
            .arg("-m")
            .arg(&manifest)
            .arg("-a")
            .arg(fixtures_dir().join("aiter-narrow"))
            .arg("-o")
            .arg(&out)
            .env("HIPCC", &hipcc)
            // The fixtures' cache: AITER's sources and the wrapper are the other narrow builds'
            // units, the instances one unit each the other test's (the two-instance dispatch
            // file compiles here: a build that fails stores nothing).
            .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"))
            .env("QOLA_CK_FILTER_LIBMHA_FWD", TWO_INSTANCE_FWD_FILTER);
        command
    };
    // The plan generates the code; its batch names the instances.
    let plan = qola("plan").arg("--json").output().unwrap();
    assert!(plan.status.success(), "{}", common::text(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let batch = &plan["modules"][0]["batches"][0];
    let members: Vec<PathBuf> = batch["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| PathBuf::from(m.as_str().unwrap()))
        .collect();
    assert_eq!(members.len(), 2, "{batch}");
    // The second instance includes a header that does not exist, inside its guard.
    let broken = &members[1];
    let text = std::fs::read_to_string(broken).unwrap();
    let guard = text
        .find("#if !defined(__HIP_DEVICE_COMPILE__)")
        .unwrap_or_else(|| panic!("{text}"));
    let body = guard + text[guard..].find('\n').unwrap() + 1;
    let edited = format!(
        "{}#include \"qola_test_missing.h\"\n{}",
        &text[..body],
        &text[body..]
    );
    std::fs::write(broken, edited).unwrap();
    let build = qola("build").output().unwrap();
    let said = common::text(&build);
    assert_eq!(build.status.code(), Some(1), "{said}");
    let warned: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("did not compile") && l.contains("compiled one unit each"))
        .collect();
    assert_eq!(warned.len(), 1, "{said}");
    let name = broken.file_name().unwrap().to_string_lossy();
    assert!(
        said.lines().any(|l| l.contains("error")
            && l.contains(name.as_ref())
            && !l.contains("qola-batches")),
        "the error names the instance: {said}"
    );
}
