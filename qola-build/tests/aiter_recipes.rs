//! The recipe follows the tree: on a tree shaped like AITER 7a24cd87's (the files here are
//! qola's own text with the same structure: `mha_fwd.cu` gating its asm v3, CK and native
//! paths behind `FAV3_ON`, `FAV2_ON` and `FAV_NATIVE_ON`, `mha_bwd.cu` including the hsa
//! config of its asm v3 kernels, an `hsa/codegen.py` that writes `asm_<kernels>_configs.hpp`),
//! a module gets QoLA's flags and generation steps from what its sources ask; a switch qola
//! cannot satisfy is a refusal naming the file and the switch, never a library that returns -1.
//! With the sid toolchain (what AITER's modules need).

mod common;

use std::path::{Path, PathBuf};

use qola_build::aiter::{AiterModule, AiterModuleSpec, prepare_module};

const OPT_COMPILER_CONFIG: &str = r#"{
  "libmha_fwd": {
    "srcs": ["f'{AITER_CSRC_DIR}/cpp_itfs/mha_fwd.cu'"],
    "flags_extra_cc": ["'-DFAV_NATIVE_ON=1'"],
    "flags_extra_hip": ["'-DCK_TILE_FMHA_FWD_FAST_EXP2=1'", "'-DFAV_NATIVE_ON=1'"],
    "extra_ldflags": "None",
    "extra_include": ["f'{CK_DIR}/example/ck_tile/01_fmha'", "f'{AITER_CSRC_DIR}/kernels/mha_native'"],
    "verbose": "False", "is_python_module": "False", "is_standalone": "False", "torch_exclude": "True",
    "blob_gen_cmd": ["f'{CK_DIR}/example/ck_tile/01_fmha/generate.py -d fwd --receipt 600 --output_dir {{}}'"]
  },
  "libmha_bwd": {
    "srcs": ["f'{AITER_CSRC_DIR}/cpp_itfs/mha_bwd.cu'"],
    "flags_extra_cc": [],
    "flags_extra_hip": [],
    "extra_ldflags": "None",
    "extra_include": ["f'{CK_DIR}/example/ck_tile/01_fmha'"],
    "verbose": "False", "is_python_module": "False", "is_standalone": "False", "torch_exclude": "True",
    "blob_gen_cmd": ["f'{CK_DIR}/example/ck_tile/01_fmha/generate.py -d bwd --receipt 600 --output_dir {{}}'"]
  }
}
"#;

const MHA_FWD_CU: &str = "#include \"mha_fwd.h\"\n#if FAV3_ON\n#include \"asm_fmha_v3_fwd_configs.hpp\"\n#endif\n#if FAV_NATIVE_ON\n#include \"mha_native_launch.h\"\n#endif\n#include <string>\n\nnamespace aiter {\n#if FAV3_ON\nfloat fmha_fwd_v3_path() { return 1; }\n#endif\n#if FAV2_ON\nfloat fmha_fwd_ck_path() { return 2; }\n#endif\nfloat mha_fwd_entry() {\n#if FAV3_ON\n    return fmha_fwd_v3_path();\n#endif\n#if FAV2_ON\n    return fmha_fwd_ck_path();\n#endif\n    return -1;\n}\n}\n";

const MHA_BWD_CU: &str = "#include \"mha_bwd.h\"\n#include \"asm_fmha_v3_bwd_configs.hpp\"\n#include <string>\nnamespace aiter { float mha_bwd_entry() { return 0; } }\n";

/// hsa/codegen.py's shape: `-m <kernels> --output_dir D` writes `D/asm_<kernels>_configs.hpp`
/// from `hsa/<arch>/<kernels>/*.csv` for the architectures of `AITER_GPU_ARCHS`.
const HSA_CODEGEN: &str = r#"import argparse, glob, os
this_dir = os.path.dirname(os.path.abspath(__file__))
archs = os.environ["AITER_GPU_ARCHS"].split(";")
parser = argparse.ArgumentParser()
parser.add_argument("-m", "--module", required=True)
parser.add_argument("-o", "--output_dir", required=True)
args = parser.parse_args()
rows = [f for arch in archs for f in glob.glob(f"{this_dir}/{arch}/{args.module}/*.csv")]
with open(f"{args.output_dir}/asm_{args.module}_configs.hpp", "w") as f:
    f.write(f"// {len(rows)} configs of {args.module}\n")
"#;

/// CK's generate.py's shape: writes one API file for the direction.
const CK_GENERATE: &str = r#"import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("-d", "--direction")
parser.add_argument("--receipt")
parser.add_argument("--output_dir")
parser.add_argument("--targets")
parser.add_argument("--filter")
parser.add_argument("--list_blobs")
args = parser.parse_args()
if args.list_blobs:
    open(args.list_blobs, "w").write(f"{args.output_dir}/fmha_{args.direction}_api.cpp\n")
else:
    open(f"{args.output_dir}/fmha_{args.direction}_api.cpp", "w").write("// api\n")
"#;

/// A `core.py` shaped as AITER's (7a24cd87): `build_module`'s `MainFunc` computes the flag
/// lists and hands them to `_jit_compile`; qola reads its flags from it.
const CORE_PY: &str = r#"import os
from packaging.version import Version, parse


def build_module(md_name, srcs, flags_extra_cc, flags_extra_hip, blob_gen_cmd):
    def MainFunc():
        flags_cc = ["-O3", "-std=c++20"]
        flags_hip = ["-DLEGACY_HIPBLAS_DIRECT", "-mllvm --amdgpu-kernarg-preload-count=16"]
        hip_version = parse(get_hip_version().split()[-1].rstrip("-").replace("-", "+"))
        if hip_version > Version("5.7.23302"):
            flags_hip += ["-fno-offload-uniform-block"]
        flags_cc += flags_extra_cc
        flags_hip += flags_extra_hip
        flags_hip += [f"--offload-arch={arch}" for arch in validate_and_update_archs()]
        flags_hip = sorted(set(flags_hip))
        _jit_compile(md_name, extra_cflags=flags_cc, extra_cuda_cflags=flags_hip)

    MainFunc()
"#;

/// The tree under `dir`, with the forward source `mha_fwd_cu`.
fn tree(dir: &Path, mha_fwd_cu: &str) -> PathBuf {
    let files: &[(&str, &str)] = &[
        ("aiter/jit/core.py", CORE_PY),
        ("aiter/jit/optCompilerConfig.json", OPT_COMPILER_CONFIG),
        ("csrc/cpp_itfs/mha_fwd.cu", mha_fwd_cu),
        ("csrc/cpp_itfs/mha_bwd.cu", MHA_BWD_CU),
        (
            "csrc/kernels/mha_native/mha_native_launch.h",
            "#pragma once\n",
        ),
        ("csrc/include/mha_fwd.h", "#pragma once\n"),
        ("csrc/include/mha_bwd.h", "#pragma once\n"),
        ("hsa/codegen.py", HSA_CODEGEN),
        (
            "hsa/gfx942/fmha_v3_fwd/fwd.csv",
            "dtype,co_name\nbf16,fwd.co\n",
        ),
        (
            "hsa/gfx942/fmha_v3_bwd/bwd.csv",
            "dtype,co_name\nbf16,bwd.co\n",
        ),
        (
            "3rdparty/composable_kernel/example/ck_tile/01_fmha/generate.py",
            CK_GENERATE,
        ),
        (
            "3rdparty/composable_kernel/include/ck_tile/core.hpp",
            "#pragma once\n",
        ),
    ];
    for (path, text) in files {
        qola_tests::write(dir, path, text);
    }
    dir.to_path_buf()
}

/// The module `name` of a manifest entry with `extra` keys, prepared for gfx942.
fn module(
    root: &Path,
    hipcc: &Path,
    name: &str,
    extra: &str,
    gen_dir: &Path,
) -> Result<AiterModule, qola_build::AiterError> {
    let text = format!("[[modules]]\nname = \"{name}\"\nreceipt = 700\n{extra}");
    let manifest = qola_build::Manifest::from_str_at(&text, Path::new("test.toml")).unwrap();
    let archs = ["gfx942".to_string()];
    prepare_module(&AiterModuleSpec {
        root,
        module: &manifest.modules[0],
        archs: &archs,
        gen_dir,
        cache: &gen_dir.join("cache"),
        ck_filter: None,
        variants: &Default::default(),
        compiler: Some(hipcc),
        toolchain: None,
        cargo_metadata: false,
        registry: None,
    })
}

#[test]
fn a_tree_s_feature_switches_and_hsa_configs_give_qolas_flags_and_generation_steps() {
    let Some(hipcc) = qola_tests::sid_hipcc() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tree(&tmp.path().join("aiter"), MHA_FWD_CU);
    let fwd = module(&root, &hipcc, "libmha_fwd", "", &tmp.path().join("gen"))
        .unwrap_or_else(|e| panic!("{e}"));
    for flag in ["-DFAV3_ON=1", "-DFAV2_ON=1", "-DFAV_NATIVE_ON=1"] {
        assert_eq!(
            fwd.flags.iter().filter(|f| *f == flag).count(),
            if flag == "-DFAV_NATIVE_ON=1" { 2 } else { 1 },
            "{flag} in {:?}",
            fwd.flags
        );
    }
    let generators: Vec<&str> = fwd.recipe.blob_gen_cmd.iter().map(String::as_str).collect();
    assert!(
        generators
            .iter()
            .any(|g| g.ends_with("hsa/codegen.py -m fmha_v3_fwd --output_dir {}")),
        "{generators:?}"
    );
    assert_eq!(fwd.recipe.hsa_kernels, ["fmha_v3_fwd"]);
    // The generated config is where the compile finds it.
    assert!(
        fwd.generated
            .iter()
            .any(|g| g.dir.join("asm_fmha_v3_fwd_configs.hpp").is_file()),
        "{:?}",
        fwd.generated
    );
    // The backward includes its config unconditionally: its generator is added, no switch.
    let bwd = module(&root, &hipcc, "libmha_bwd", "", &tmp.path().join("gen"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        bwd.recipe
            .blob_gen_cmd
            .iter()
            .any(|g| g.contains("hsa/codegen.py -m fmha_v3_bwd")),
        "{:?}",
        bwd.recipe.blob_gen_cmd
    );
    assert!(!bwd.flags.iter().any(|f| f.starts_with("-DFAV")));
}

#[test]
fn a_switch_qola_cannot_satisfy_is_refused_naming_the_file_and_the_switch() {
    let Some(hipcc) = qola_tests::sid_hipcc() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let source = MHA_FWD_CU.replace(
        "#include <string>",
        "#if FAV_SPARSE_ON\n#include \"mha_sparse_launch.h\"\n#endif\n#include <string>",
    );
    let root = tree(&tmp.path().join("aiter"), &source);
    let error = module(&root, &hipcc, "libmha_fwd", "", &tmp.path().join("gen"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("csrc/cpp_itfs/mha_fwd.cu")
            && error.contains("FAV_SPARSE_ON")
            && error.contains("mha_sparse_launch.h"),
        "{error}"
    );
    // An hsa config that no generator of the tree writes, likewise.
    std::fs::remove_dir_all(root.join("hsa/gfx942/fmha_v3_bwd")).unwrap();
    let error = module(&root, &hipcc, "libmha_bwd", "", &tmp.path().join("gen"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("mha_bwd.cu") && error.contains("asm_fmha_v3_bwd_configs.hpp"),
        "{error}"
    );
}

/// A manifest written for another AITER (TransformerEngine's gfx1250 manifest names a sink
/// source its pinned tree does not have): the missing source is an error naming it, before
/// anything is generated or compiled.
#[test]
fn a_source_the_tree_lacks_is_refused_naming_it() {
    let Some(hipcc) = qola_tests::sid_hipcc() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tree(&tmp.path().join("aiter"), MHA_FWD_CU);
    let srcs = "srcs = [\"f'{AITER_CSRC_DIR}/cpp_itfs/mha_fwd.cu'\", \"f'{AITER_CSRC_DIR}/py_itfs_cu/asm_fmha_fwd_with_sink.cu'\"]\n";
    let error = module(&root, &hipcc, "libmha_fwd", srcs, &tmp.path().join("gen"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("srcs") && error.contains("py_itfs_cu/asm_fmha_fwd_with_sink.cu"),
        "{error}"
    );
    assert!(
        !tmp.path().join("gen/libmha_fwd").exists(),
        "nothing generated"
    );
}
