//! qola at the AITER commits TransformerEngine pins beyond qola's own (issue 44): the compile
//! flags are the tree's own `core.py`'s at each, and today's pin (ab550455) builds the modules
//! that need no composable_kernel. CI reaches none of these trees: each test runs for the pins
//! whose checkout `QOLA_TEST_AITER_<pin>` names, and says which it skipped.

#![allow(clippy::disallowed_methods)] // tests read and set their own environment

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use qola_tests::fixtures_dir;

/// The pins: qola's own, TE's older ones, today's (and its sibling after TE #709), the gfx1250
/// manifest's.
const PINS: &[&str] = &[
    "05a0d1f", "7a24cd87", "d32b0cb", "ab550455", "a50a62a", "0403bcdf",
];

/// Runs the tree's own `build_module` (its `core.py` imported as AITER imports it) up to its
/// `_jit_compile` call and prints the two flag lists that call gets. What runs elsewhere is
/// replaced as qola replaces it: the compiler (`executable_path`, `get_hip_version`), the flag
/// checker (qola probes the `-mllvm` flags itself), the job count, the code generators.
const CORE_PY_RUNNER: &str = r#"
import importlib.util, inspect, json, os, sys, tempfile
tree, hipcc, hip_version, md, arch = sys.argv[1:6]
os.environ["AITER_JIT_DIR"] = tempfile.mkdtemp()
os.environ["GPU_ARCHS"] = arch
spec = importlib.util.spec_from_file_location("aiter_core", os.path.join(tree, "aiter/jit/core.py"))
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
core.executable_path = lambda name: hipcc
core.get_hip_version = lambda: "HIP version: " + hip_version
core.hip_flag_checker = lambda flag: True
core.check_and_set_ninja_worker = lambda: None
got = {}
class Captured(Exception):
    pass
def capture(*args, **kwargs):
    got["flags_cc"] = list(kwargs["extra_cflags"])
    got["flags_hip"] = [f for f in kwargs["extra_cuda_cflags"] if not f.startswith("--offload-arch=")]
    raise Captured()
core._jit_compile = capture
entry = core.get_args_of_build(md)
entry["blob_gen_cmd"] = ""
entry["torch_exclude"] = True
params = inspect.signature(core.build_module).parameters
try:
    core.build_module(md, **{k: v for k, v in entry.items() if k in params and k != "md_name"})
except BaseException:  # AITER's build reports the failure in its own words (SystemExit, its own error)
    if not got:
        raise
print(json.dumps(got))
"#;

/// `HIP version:` of `hipcc --version`.
fn hip_version(hipcc: &Path) -> String {
    let out = Command::new(hipcc).arg("--version").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("HIP version:"))
        .expect("hipcc says its HIP version")
        .trim()
        .to_string()
}

/// `qola <verb>` on `tree` as it is (QOLA_SKIP_PREPARE), with `hipcc`, composable_kernel from
/// `ck` when given (CK_DIR), qola's cache in the fixtures.
fn qola(verb: &str, hipcc: &Path, manifest: &Path, tree: &Path, out: &Path) -> Command {
    let mut command = common::qola_command(&["GPU_ARCHS", "CK_DIR", "ENABLE_CK"]);
    command
        .arg(verb)
        .arg("-m")
        .arg(manifest)
        .arg("-a")
        .arg(tree)
        .arg("-o")
        .arg(out)
        .env("QOLA_SKIP_PREPARE", "1")
        .env("HIPCC", hipcc)
        .env("QOLA_CACHE_DIR", fixtures_dir().join("cache"));
    command
}

/// The wheel's composable_kernel, a stand-in for the pins' own (in no reachable snapshot): the
/// flags do not depend on CK's content, only on whether there is one.
fn stand_in_ck() -> Option<PathBuf> {
    let ck = fixtures_dir().join("aiter-narrow/3rdparty/composable_kernel");
    let found = ck.join("include/ck_tile").is_dir();
    if !found {
        eprintln!("skipped: no prepared wheel tree in the fixtures (run the real-tree tests once)");
    }
    found.then_some(ck)
}

/// The pins whose checkouts are given (`QOLA_TEST_AITER_<commit>`), with ROCm 7's hipcc and a
/// composable_kernel to stand in for theirs.
struct PinsWithRocm7 {
    pins: Vec<(&'static str, PathBuf)>,
    hipcc: PathBuf,
    ck: PathBuf,
}

/// [`PinsWithRocm7`], or `None` (the test says it skipped) without them.
fn pins_with_rocm7(test: &str) -> Option<PinsWithRocm7> {
    let pins: Vec<(&str, PathBuf)> = PINS
        .iter()
        .filter_map(|pin| qola_tests::aiter_at(pin).map(|dir| (*pin, dir)))
        .collect();
    let found = match (pins.is_empty(), qola_tests::rocm7_hipcc(), stand_in_ck()) {
        (false, Some(hipcc), Some(ck)) => Some(PinsWithRocm7 { pins, hipcc, ck }),
        _ => None,
    };
    if found.is_none() {
        eprintln!(
            "skipped {test}: it needs QOLA_TEST_AITER_<commit> for a pin, ROCm 7's hipcc \
             (tools/sid-hipcc-setup --rocm7) and a composable_kernel"
        );
    }
    found
}

/// At every pin given, `qola plan`'s flags for the asm FP4 GEMM (a module every pin has) are the
/// lists the tree's own `core.py` hands `_jit_compile`, and the unit's command carries each of
/// them (the `-mllvm` ones the compiler does not know excepted, as AITER's checker drops them).
#[test]
fn qolas_flags_are_the_trees_own_core_pys_at_every_pin() {
    let Some(PinsWithRocm7 { pins, hipcc, ck }) =
        pins_with_rocm7("qolas_flags_are_the_trees_own_core_pys_at_every_pin")
    else {
        return;
    };
    let version = hip_version(&hipcc);
    let tmp = tempfile::tempdir().unwrap();
    let manifest = tmp.path().join("gemm.toml");
    std::fs::write(
        &manifest,
        "[qola]\nnamespace = \"te\"\n\n[build]\narchitectures = [\"gfx950\"]\n\n[[modules]]\nname = \"module_gemm_a4w4_asm\"\nmd_name = \"'libgemm_a4w4_asm'\"\nmode = \"cpp_itfs\"\n",
    )
    .unwrap();
    for (pin, tree) in pins {
        let out = tmp.path().join(pin);
        let plan = qola("plan", &hipcc, &manifest, &tree, &out)
            .arg("--json")
            .env("CK_DIR", &ck)
            .output()
            .unwrap();
        assert!(plan.status.success(), "{pin}: {}", common::text(&plan));
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let module = &plan["modules"][0];
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        let ours_cc = strings(&module["core_flags"]["flags_cc"]);
        let ours_hip = strings(&module["core_flags"]["flags_hip"]);
        let dropped = strings(&module["dropped_flags"]);

        let core = Command::new("python3")
            .args(["-c", CORE_PY_RUNNER])
            .arg(&tree)
            .arg(&hipcc)
            .arg(&version)
            .args(["module_gemm_a4w4_asm", "gfx950"])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("CK_DIR", &ck)
            .env_remove("ENABLE_CK")
            .output()
            .unwrap();
        assert!(core.status.success(), "{pin}: {}", common::text(&core));
        let core: serde_json::Value = serde_json::from_slice(&core.stdout).unwrap();
        let (core_cc, core_hip) = (strings(&core["flags_cc"]), strings(&core["flags_hip"]));
        assert_eq!(ours_cc, core_cc, "{pin}: flags_cc");
        assert_eq!(ours_hip, core_hip, "{pin}: flags_hip");

        // What the unit compiles with.
        let unit = module["compile"]["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["source"].as_str().unwrap().ends_with("asm_gemm_a4w4.cu"))
            .unwrap_or_else(|| panic!("{pin}: no unit of asm_gemm_a4w4.cu"));
        let command = format!(" {} ", strings(&unit["command"]).join(" "));
        for flag in core_cc.iter().chain(&core_hip) {
            if dropped.contains(flag) {
                continue;
            }
            assert!(
                command.contains(&format!(" {flag} ")),
                "{pin}: {flag} in {command}"
            );
        }
        println!(
            "{pin}: equal: flags_cc {} | flags_hip {} | dropped by the compiler's probe: {}",
            core_cc.join(" "),
            core_hip.join(" "),
            if dropped.is_empty() {
                "none".to_string()
            } else {
                dropped.join(", ")
            }
        );
    }
}

/// At every pin, the architecture AITER picks among several for its gfx-conditional flags
/// (`get_gfx()`: the last entry of `GPU_ARCHS`, which `core.py` reads for
/// `-D__Float4_e2m1fn_x2` and, from ab550455, `-DAITER_ENABLE_CLUSTER_LAUNCH`) is qola's: a module
/// with no architecture of its own (`module_activation`) planned for `gfx942;gfx950`,
/// `gfx950;gfx942` and each alone gets the tree's own `core.py`'s flags with that `GPU_ARCHS`.
#[test]
fn the_architecture_aiter_picks_among_several_is_qola_s_at_every_pin() {
    let Some(PinsWithRocm7 { pins, hipcc, ck }) =
        pins_with_rocm7("the_architecture_aiter_picks_among_several_is_qola_s_at_every_pin")
    else {
        return;
    };
    let version = hip_version(&hipcc);
    let tmp = tempfile::tempdir().unwrap();
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    for (pin, tree) in pins {
        for archs in ["gfx942;gfx950", "gfx950;gfx942", "gfx942", "gfx950"] {
            let manifest = tmp.path().join("activation.toml");
            let listed: Vec<String> = archs.split(';').map(|a| format!("\"{a}\"")).collect();
            std::fs::write(
                &manifest,
                format!(
                    "[qola]\nnamespace = \"te\"\n\n[build]\narchitectures = [{}]\n\n[[modules]]\nname = \"module_activation\"\nmode = \"cpp_itfs\"\n",
                    listed.join(", ")
                ),
            )
            .unwrap();
            let plan = qola("plan", &hipcc, &manifest, &tree, &tmp.path().join(pin))
                .arg("--json")
                .env("CK_DIR", &ck)
                .output()
                .unwrap();
            assert!(
                plan.status.success(),
                "{pin} {archs}: {}",
                common::text(&plan)
            );
            let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
            let ours = strings(&plan["modules"][0]["core_flags"]["flags_hip"]);
            let core = Command::new("python3")
                .args(["-c", CORE_PY_RUNNER])
                .arg(&tree)
                .arg(&hipcc)
                .arg(&version)
                .args(["module_activation", archs])
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env("CK_DIR", &ck)
                .env_remove("ENABLE_CK")
                .output()
                .unwrap();
            assert!(
                core.status.success(),
                "{pin} {archs}: {}",
                common::text(&core)
            );
            let core: serde_json::Value = serde_json::from_slice(&core.stdout).unwrap();
            assert_eq!(ours, strings(&core["flags_hip"]), "{pin} {archs}");
            let fp4 = ours.iter().any(|f| f == "-D__Float4_e2m1fn_x2");
            println!(
                "{pin} {archs}: equal; -D__Float4_e2m1fn_x2 {}",
                if fp4 { "on" } else { "off" }
            );
        }
    }
}

/// AITER's own merge of a tuned table: `AITER_CONFIGS.<variable>_FILE` of the tree's `core.py`
/// (which writes its merge under `/tmp/aiter_configs`), printed as pandas reads it beside qola's.
const AITER_MERGE: &str = r#"
import importlib.util, os, sys, tempfile
import pandas as pd
tree, variable, ours = sys.argv[1:4]
os.environ["AITER_JIT_DIR"] = tempfile.mkdtemp()
spec = importlib.util.spec_from_file_location("aiter_core", os.path.join(tree, "aiter/jit/core.py"))
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
theirs = getattr(core.AITER_CONFIGS, variable + "_FILE")
a, b = pd.read_csv(theirs), pd.read_csv(ours)
print(f"{a.equals(b)} {len(a)} {len(b)} {theirs}")
"#;

/// At today's pins, the FP4 blockscale GEMM's tuned table (the default one and a model's, in
/// `model_configs/`) is merged as the tree's own `core.py` merges it: pandas reads qola's merge
/// (in qola's cache, which the plan's generator command names) as the same table as AITER's.
#[test]
fn the_blockscale_gemms_tuned_table_is_merged_as_the_trees_core_py_merges_it() {
    for pin in ["ab550455", "a50a62a"] {
        let Some(tree) = qola_tests::aiter_at(pin) else {
            continue;
        };
        let (Some(hipcc), Some(ck)) = (qola_tests::rocm7_hipcc(), stand_in_ck()) else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let manifest = tmp.path().join("gemm.toml");
        std::fs::write(
            &manifest,
            "[qola]\nnamespace = \"te\"\n\n[build]\narchitectures = [\"gfx950\"]\n\n[[modules]]\nname = \"module_gemm_a4w4_blockscale\"\nmd_name = \"'libgemm_a4w4_blockscale'\"\nmode = \"cpp_itfs\"\n",
        )
        .unwrap();
        let plan = qola("plan", &hipcc, &manifest, &tree, &tmp.path().join("out"))
            .arg("--json")
            .env("CK_DIR", &ck)
            .env_remove("AITER_CONFIG_GEMM_A4W4")
            .output()
            .unwrap();
        assert!(plan.status.success(), "{pin}: {}", common::text(&plan));
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let command = plan["modules"][0]["generators"][0]["command"]
            .as_str()
            .unwrap()
            .to_string();
        let ours = command
            .split_once("--tune_file ")
            .map(|(_, table)| table.trim())
            .unwrap_or_else(|| panic!("{pin}: {command}"));
        assert!(
            ours.starts_with(
                &fixtures_dir()
                    .join("cache/tuned-tables")
                    .display()
                    .to_string()
            ),
            "{pin}: {ours}"
        );
        let aiter = Command::new("python3")
            .args(["-c", AITER_MERGE])
            .arg(&tree)
            .args(["AITER_CONFIG_GEMM_A4W4", ours])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("AITER_CONFIG_GEMM_A4W4")
            .output()
            .unwrap();
        let said = common::text(&aiter);
        assert!(
            aiter.status.success() && said.starts_with("True "),
            "{pin}: {said}"
        );
        println!(
            "{pin}: the a4w4 blockscale table: equal to AITER's merge (rows, AITER's, path): {}",
            said.trim()
        );
    }
}

/// TE's asm FP4 GEMM caller of qola's C interface, for a library built without CK (only its
/// refusals run without a GPU).
const C_CALLER: &str = r#"#include <cstdio>
#include "qola_gemm_a4w4.h"
int main() {
  qola_tensor_t t{};
  t.ndim = 2; t.dtype = QOLA_DTYPE_FP4X2; t.shape[0] = 32; t.shape[1] = 64; t.strides[0] = 64; t.strides[1] = 1;
  qola_tensor_t out = t;
  out.dtype = QOLA_DTYPE_FP32;
  char err[256] = {};
  int rc = QOLA_C(gemm_a4w4_asm)(&t, &t, &t, &t, &out, nullptr, "", 1.0f, 0.0f, 1, -1, nullptr, err, sizeof(err));
  std::printf("asm %d: %s\n", rc, err);
}
"#;

/// At today's pin (ab550455, and its sibling a50a62a), qola's series for it applied, with ROCm 7
/// and the tree's CK absent:
/// the attention modules built as the gfx1250 manifest builds them (`ENABLE_CK=0`, AITER's asm
/// v3 kernels; the forward with the native split-KV kernels and gfx1250's sink forward,
/// `FA_WITH_NATIVE_SPLITKV` and `FA_WITH_SINK`) and the asm FP4 GEMM compile, link, embed their code objects in the tree's map
/// form and export qola's API alone; TE's C caller links the GEMM and runs to its refusal; the
/// CK modules of TE's manifest fail naming the missing composable_kernel before any compile;
/// the sid toolchain (HIP 6.4) is refused naming the ROCm the tree needs.
#[test]
fn todays_pin_builds_its_modules_without_ck_and_names_what_it_lacks() {
    for pin in ["ab550455", "a50a62a"] {
        let Some(tree) = qola_tests::aiter_at(pin) else {
            continue;
        };
        let Some(hipcc) = qola_tests::rocm7_hipcc() else {
            return;
        };
        if tree.join("3rdparty/composable_kernel/include").is_dir() {
            eprintln!(
                "skipped {pin}: its checkout has composable_kernel; this test is for one without"
            );
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        // The tree as qola prepares it for this pin: qola's series for it applied.
        let tree = with_todays_series(&tree, tmp.path());
        let ck_free = tmp.path().join("ck_free.toml");
        std::fs::write(
            &ck_free,
            "[qola]\nnamespace = \"te\"\n\n[build]\narchitectures = [\"gfx950\", \"gfx942\"]\n\n\
             [[modules]]\nname = \"libmha_fwd\"\nmode = \"cpp_itfs\"\ndrop_srcs = [\"mha_fwd_split.cu\", \"mha_fwd_batch_prefill.cu\"]\ndrop_directions = [\"fwd\", \"fwd_splitkv\", \"batch_prefill\"]\nflags_extra_cc = [\"'-DFAV3_ON=1'\", \"'-DENABLE_CK=0'\", \"'-DFA_WITH_NATIVE_SPLITKV=1'\", \"'-DFA_WITH_SINK=1'\"]\n\n\
             [[modules]]\nname = \"libmha_bwd\"\nmode = \"cpp_itfs\"\ndrop_directions = [\"bwd\"]\nflags_extra_cc = [\"'-DONLY_FAV3=1'\", \"'-DENABLE_CK=0'\"]\n\n\
             [[modules]]\nname = \"module_gemm_a4w4_asm\"\nmd_name = \"'libgemm_a4w4_asm'\"\nmode = \"cpp_itfs\"\nflags_extra_cc = [\"'-DENABLE_CK=0'\"]\n",
        )
        .unwrap();
        let out = tmp.path().join("out");
        // The GEMM's kernels are gfx950's only: every module for gfx950.
        let build = qola("build", &hipcc, &ck_free, &tree, &out)
            .args(["--arch", "gfx950"])
            .output()
            .unwrap();
        let said = common::text(&build);
        assert!(build.status.success(), "{pin}: {said}");
        for (lib, kernels) in [
            ("te_libmha_fwd.so", "hsa/gfx950/fmha_v3_fwd/"),
            ("te_libmha_bwd.so", "hsa/gfx950/fmha_v3_bwd/"),
            ("te_libgemm_a4w4_asm.so", "hsa/gfx950/f4gemm/"),
        ] {
            let path = out.join("lib").join(lib);
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{pin}: {lib}: {e}"));
            let keys = bytes
                .windows(kernels.len())
                .filter(|w| *w == kernels.as_bytes())
                .count();
            assert!(keys > 0, "{pin}: {lib} embeds no {kernels}*");
            let exported = common::exported(&path);
            if lib == "te_libmha_fwd.so" {
                // The native split-KV forward's and gfx1250's sink forward's API (qola's series,
                // 0006 and 0007).
                for name in [
                    "mha_fwd_calculate_num_splits",
                    "mha_fwd_workspace_size",
                    "mha_fwd_with_sink_supported",
                ] {
                    assert!(
                        exported.iter().any(|s| s.contains(name)),
                        "{pin}: {exported:?}"
                    );
                }
            }
            assert!(
                exported
                    .iter()
                    .all(|s| s.starts_with("qola_te_") || s.starts_with("_ZN4qola2te")),
                "{pin}: {lib} exports {exported:?}"
            );
            println!(
                "{pin}: {lib}: {} code-object keys of {kernels}, exports {exported:?}",
                keys
            );
        }

        // TE's C caller links the GEMM library and runs (in the ROCm 7 root) to its refusal.
        let (source, program) = (tmp.path().join("c.cpp"), tmp.path().join("c"));
        std::fs::write(&source, C_CALLER).unwrap();
        let lib = out.join("lib");
        common::link_caller(
            &hipcc,
            &source,
            &[&out.join("include")],
            &lib,
            &["te_libgemm_a4w4_asm.so"],
            &program,
        );
        let run = qola_tests::in_sid_root(&hipcc, &program, &[tmp.path(), &tree]);
        let said = String::from_utf8_lossy(&run.stdout);
        assert!(
            said.starts_with("asm 1: ") && said.contains("BFloat16"),
            "{pin}: {said}{}",
            String::from_utf8_lossy(&run.stderr)
        );
        println!("{pin}: TE's C caller: {}", said.trim());

        // TE's manifest: its CK modules stop before any compile, naming what is missing.
        let te = tmp.path().join("te.toml");
        std::fs::write(
            &te,
            "[qola]\nnamespace = \"te\"\n\n[build]\narchitectures = [\"gfx950\"]\n\n\
             [[modules]]\nname = \"libmha_fwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\ndrop_srcs = [\"mha_fwd_split.cu\", \"mha_fwd_batch_prefill.cu\"]\ndrop_directions = [\"fwd_splitkv\", \"batch_prefill\"]\n\n\
             [[modules]]\nname = \"libmha_bwd\"\nmode = \"cpp_itfs\"\nreceipt = 700\n\n\
             [[modules]]\nname = \"module_gemm_a4w4_blockscale\"\nmd_name = \"'libgemm_a4w4_blockscale'\"\nmode = \"cpp_itfs\"\n",
        )
        .unwrap();
        let te_out = tmp.path().join("te-out");
        let build = qola("build", &hipcc, &te, &tree, &te_out).output().unwrap();
        let said = common::text(&build);
        assert_eq!(build.status.code(), Some(1), "{pin}: {said}");
        for module in ["libmha_fwd", "libmha_bwd", "module_gemm_a4w4_blockscale"] {
            assert!(
                said.contains(&format!(
                    "module {module} is built with composable_kernel (ENABLE_CK is not 0)"
                )),
                "{pin}: {said}"
            );
        }
        assert!(!said.contains("qola: compiled"), "{pin}: {said}");
        println!(
            "{pin}: TE's CK modules: {}",
            said.lines()
                .find(|l| l.contains("libmha_fwd: error"))
                .unwrap_or("")
        );

        // HIP 6.4 lacks what the tree's headers use: said before anything is compiled.
        if let Some(sid) = qola_tests::sid_hipcc() {
            let old = tmp.path().join("old");
            let build = qola("build", &sid, &ck_free, &tree, &old)
                .args(["--arch", "gfx950"])
                .output()
                .unwrap();
            let said = common::text(&build);
            assert_eq!(build.status.code(), Some(1), "{pin}: {said}");
            assert!(
                said.contains("uses `hipDeviceAttributePciChipId`")
                    && said.contains("it needs ROCm 7"),
                "{pin}: {said}"
            );
            assert!(
                !said.contains("qola: compiled") && !old.join("lib").exists(),
                "{pin}: {said}"
            );
            println!(
                "{pin}: HIP 6.4: {}",
                said.lines().find(|l| l.contains("error")).unwrap_or("")
            );
        }
    }
}

/// qola's series for today's pin, in order.
fn todays_series() -> Vec<PathBuf> {
    let series = Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/aiter-ab550455");
    let mut patches: Vec<PathBuf> = std::fs::read_dir(&series)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .collect();
    patches.sort();
    patches
}

/// A copy of `tree` under `dir` with [`todays_series`] applied (`git apply`).
fn with_todays_series(tree: &Path, dir: &Path) -> PathBuf {
    let copy = dir.join("aiter-patched");
    qola_tests::run_ok(Command::new("cp").arg("-a").arg(tree).arg(&copy));
    for patch in todays_series() {
        qola_tests::run_ok(
            Command::new("git")
                .arg("apply")
                .arg(&patch)
                .current_dir(&copy),
        );
    }
    copy
}

/// qola's series for today's pin (`patches/aiter-ab550455`, chosen for a manifest pinning
/// ab550455 or a50a62a without `patches_dir`) applies with qola's applier to each of those
/// trees, and the tree is the one `git apply` makes of the same patches. (The trees here are
/// the pins' files in a repository of their own: the choice by commit is checked by the
/// series' unit tests, as no reachable AITER repository can be cloned whole.)
#[test]
fn todays_series_applies_to_todays_pins_as_git_apply_does() {
    let series = Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/aiter-ab550455");
    let patches = todays_series();
    for pin in ["ab550455", "a50a62a"] {
        let Some(tree) = qola_tests::aiter_at(pin) else {
            continue;
        };
        let tmp = tempfile::tempdir().unwrap();
        // The pin's files, committed in a repository of their own (what qola clones).
        let upstream = tmp.path().join("upstream");
        qola_tests::run_ok(Command::new("cp").arg("-a").arg(&tree).arg(&upstream));
        let _ = std::fs::remove_dir_all(upstream.join(".git"));
        qola_tests::git(&upstream, &["init", "-q"]);
        qola_tests::git(&upstream, &["add", "-A"]);
        qola_tests::git(&upstream, &["commit", "-qm", pin]);
        // What its .gitignore kept out is not in the commit qola clones.
        qola_tests::git(&upstream, &["clean", "-fdxq"]);
        let commit = qola_tests::git(&upstream, &["rev-parse", "HEAD"]);
        let manifest = tmp.path().join("m.toml");
        std::fs::write(
            &manifest,
            format!(
                "[qola]\naiter_commit = \"{commit}\"\naiter_url = \"file://{}\"\n",
                upstream.display()
            ),
        )
        .unwrap();
        let root = tmp.path().join("aiter");
        let prepared = common::qola_command(&[])
            .args(["prepare", "-m"])
            .arg(&manifest)
            .arg("--aiter-root")
            .arg(&root)
            .arg("--patches-dir")
            .arg(&series)
            .env("QOLA_CACHE_DIR", tmp.path().join("cache"))
            .output()
            .unwrap();
        assert!(
            prepared.status.success(),
            "{pin}: {}",
            common::text(&prepared)
        );
        // git apply of the same patches, in order, on the pin's files.
        for patch in &patches {
            qola_tests::git(&upstream, &["apply", &patch.display().to_string()]);
        }
        let theirs = qola_tests::git(&upstream, &["diff", "--stat"]);
        let ours = qola_tests::git(&root, &["diff", "--stat"]);
        assert_eq!(ours, theirs, "{pin}");
        let differ = Command::new("diff")
            .args(["-r", "-q", "--exclude=.git"])
            .arg(&upstream)
            .arg(&root)
            .output()
            .unwrap();
        assert!(differ.status.success(), "{pin}: {}", common::text(&differ));
        println!(
            "{pin}: qola's series applied as git apply applies it: {}",
            ours.lines().last().unwrap_or("")
        );
    }
}
