//! qola's C++ API for each generation of AITER's attention API (`qola_build::aiter::ApiGeneration`):
//! the generation read from a tree's headers, and a translation unit written the way
//! TransformerEngine calls QoLA compiled (`hipcc -fsyntax-only`) against the headers qola
//! installs. The newer AITERs' composable_kernel commits cannot be had here, so their headers
//! are stand-ins: declarations of the same shape (AITER's own `mha_fwd_args`/`mha_bwd_args`
//! structs, two-argument `mha_fwd`/`mha_bwd`, CK's `fmha_bwd_traits` and `fmha_bwd_launcher`).

#![allow(clippy::disallowed_methods)] // the test reads HIPCC, as the other tests do

use std::path::{Path, PathBuf};
use std::process::Command;

use qola_build::aiter::registry::Registry;
use qola_build::aiter::{ApiGeneration, CppApi, detect_api_generation, read_api};
use qola_tests::hipcc_available;

/// Stand-ins for the newer AITERs' headers (the struct generation), under `root/csrc/include`.
const STRUCT_HEADERS: &[(&str, &str)] = &[
    (
        "ck_tile_stand_in.hpp",
        "#pragma once\n#include <hip/hip_runtime.h>\n#include <string>\n#define ENABLE_CK 1\nnamespace ck_tile { struct stream_config { hipStream_t stream_id_ = nullptr; bool time_kernel_ = false; int log_level_ = 0; }; }\n",
    ),
    (
        "mha_fwd.h",
        "#pragma once\n#include \"ck_tile_stand_in.hpp\"\nnamespace aiter {\nstruct mha_fwd_args\n{\n    bool use_asm_v3;\n    std::string data_type;\n    const void* q_ptr;\n    int batch;\n};\n__attribute__((visibility(\"default\"))) float mha_fwd(mha_fwd_args args,\n                                                     const ck_tile::stream_config& s);\n#if FAV_NATIVE_ON\n__attribute__((visibility(\"default\"))) int mha_fwd_calculate_num_splits(const mha_fwd_args& a);\n__attribute__((visibility(\"default\"))) size_t mha_fwd_workspace_size(const mha_fwd_args& a);\n#endif\n#if FA_WITH_SINK\n__attribute__((visibility(\"default\"))) bool mha_fwd_with_sink_supported(const mha_fwd_args& a);\n#endif\n}\n",
    ),
    (
        "fmha_bwd.hpp",
        "#pragma once\n#include <cstddef>\n#include \"ck_tile_stand_in.hpp\"\nstruct fmha_bwd_traits { int hdim_q; int hdim_v; std::string data_type; bool is_group_mode; };\nstruct fmha_bwd_launcher { explicit fmha_bwd_launcher(const fmha_bwd_traits&); std::size_t workspace_size; };\n",
    ),
    (
        "mha_bwd.h",
        "#pragma once\n#include \"ck_tile_stand_in.hpp\"\n#include \"fmha_bwd.hpp\"\nnamespace aiter {\nstruct mha_bwd_args {\n    int mask_type;\n    bool use_asm_v3;\n    void* dq_acc_ptr;\n};\n__attribute__((visibility(\"default\"))) float mha_bwd(mha_bwd_args, const ck_tile::stream_config&);\n}\n",
    ),
];

/// Stand-ins with AITER 05a0d1f's shape (the parameters generation).
const PARAMETER_HEADERS: &[(&str, &str)] = &[
    (
        "ck_tile_stand_in.hpp",
        "#pragma once\n#include <hip/hip_runtime.h>\n#include <string>\nnamespace ck_tile { struct stream_config { hipStream_t stream_id_ = nullptr; }; }\nstruct fmha_fwd_args { const void* q_ptr; };\nstruct fmha_bwd_args { void* dq_acc_ptr; };\nstruct fmha_bwd_traits { int hdim_q; bool is_group_mode; bool is_deterministic; };\nenum class mask_enum { no_mask };\nenum class bias_enum { no_bias };\n",
    ),
    (
        "mha_fwd.h",
        "#pragma once\n#include \"ck_tile_stand_in.hpp\"\nnamespace aiter {\nusing mha_fwd_args = fmha_fwd_args;\nfloat mha_fwd(mha_fwd_args args, const ck_tile::stream_config& stream_config, std::string q_dtype_str, bool is_group_mode, mask_enum mask_type, bias_enum bias_type, bool has_lse, bool use_ext_asm, int how_v3_bf16_cvt = 1, const void* seqstart_q_padding_ptr = nullptr, const void* seqstart_k_padding_ptr = nullptr, bool is_v3_api_check = false);\n}\n",
    ),
    (
        "mha_bwd.h",
        "#pragma once\n#include \"ck_tile_stand_in.hpp\"\nnamespace aiter {\nusing mha_bwd_args = fmha_bwd_args;\nfloat mha_bwd(mha_bwd_args args, const ck_tile::stream_config& stream_config, std::string q_dtype_str, bool is_group_mode, mask_enum mask_type, bias_enum bias_type, bool has_dbias, bool is_store_randval, bool deterministic, bool use_ext_asm, bool is_v3_atomic_fp32, int how_v3_bf16_cvt, const void* seqlen_q_padded = nullptr, const void* seqlen_k_padded = nullptr, bool is_v3_api_check = false);\n}\n",
    ),
];

/// A translation unit calling qola's API as TransformerEngine's ck_fused_attn calls QoLA's, in
/// its five forms: `QOLA_NS(mha_fwd)(args, stream_config)` with AITER's struct (the launch and
/// the v3 dry run alike), under split-KV (`FAV_NATIVE_ON`) `QOLA_NS(mha_fwd_calculate_num_splits)`
/// and `QOLA_NS(mha_fwd_workspace_size)`, `QOLA_NS(mha_bwd)`, and the one-argument
/// `QOLA_NS(mha_bwd_workspace_size)(traits)` under `ENABLE_CK`; the declared types are QoLA's
/// exactly.
const TE_STYLE_CALLER: &str = r#"#include <cstddef>
#include <type_traits>
#include <hip/hip_runtime.h>
#include "qola_mha_fwd.h"
#include "qola_mha_bwd.h"

namespace te_like {
float forward(const aiter::mha_fwd_args& fmha_args, hipStream_t stream) {
  ck_tile::stream_config stream_config{stream};
  return QOLA_NS(mha_fwd)(fmha_args, stream_config);
}
#if FAV_NATIVE_ON
int num_splits(const aiter::mha_fwd_args& fmha_args) {
  return QOLA_NS(mha_fwd_calculate_num_splits)(fmha_args);
}
size_t workspace_size(const aiter::mha_fwd_args& fmha_args) {
  return QOLA_NS(mha_fwd_workspace_size)(fmha_args);
}
static_assert(std::is_same_v<decltype(&QOLA_NS(mha_fwd_calculate_num_splits)),
                             int (*)(const aiter::mha_fwd_args&)>);
#endif
float backward(aiter::mha_bwd_args fmha_args, const ck_tile::stream_config& stream_config) {
  return QOLA_NS(mha_bwd)(fmha_args, stream_config);
}
#if ENABLE_CK
std::size_t workspace(const fmha_bwd_traits& traits) {
  return QOLA_NS(mha_bwd_workspace_size)(traits);
}
static_assert(std::is_same_v<decltype(&QOLA_NS(mha_bwd_workspace_size)),
                             std::size_t (*)(const fmha_bwd_traits&)>);
#endif
static_assert(std::is_same_v<decltype(&QOLA_NS(mha_fwd)),
                             float (*)(const aiter::mha_fwd_args&, const ck_tile::stream_config&)>);
static_assert(std::is_same_v<decltype(&QOLA_NS(mha_bwd)),
                             float (*)(const aiter::mha_bwd_args&, const ck_tile::stream_config&)>);
}
"#;

/// A tree under `dir` whose `csrc/include` holds `headers`.
fn tree(dir: &Path, headers: &[(&str, &str)]) -> PathBuf {
    let include = dir.join("csrc/include");
    std::fs::create_dir_all(&include).unwrap();
    for (name, text) in headers {
        std::fs::write(include.join(name), text).unwrap();
    }
    dir.to_path_buf()
}

/// `hipcc -fsyntax-only` of `source` with the installed API and the tree's headers, and
/// `defines`.
fn syntax_check(source: &Path, api: &Path, root: &Path, defines: &[&str]) -> std::process::Output {
    let hipcc = std::env::var_os("HIPCC").unwrap_or_else(|| "hipcc".into());
    Command::new(hipcc)
        .args([
            "-x",
            "hip",
            "-std=c++17",
            "-fsyntax-only",
            "--offload-arch=gfx90a",
        ])
        .arg("-I")
        .arg(api)
        .arg("-I")
        .arg(root.join("csrc/include"))
        .args(defines)
        .arg(source)
        .output()
        .unwrap()
}

#[test]
fn the_real_tree_has_the_parameters_generation() {
    let Some(real) = qola_tests::real_aiter() else {
        return;
    };
    assert_eq!(
        detect_api_generation(&real.upstream).unwrap(),
        ApiGeneration::Parameters
    );
}

#[test]
fn a_tree_of_either_shape_gets_its_generation_and_a_tree_of_neither_an_error_naming_the_header() {
    let tmp = tempfile::tempdir().unwrap();
    let structs = tree(&tmp.path().join("struct"), STRUCT_HEADERS);
    let params = tree(&tmp.path().join("params"), PARAMETER_HEADERS);
    assert_eq!(
        detect_api_generation(&structs).unwrap(),
        ApiGeneration::Struct
    );
    assert_eq!(
        detect_api_generation(&params).unwrap(),
        ApiGeneration::Parameters
    );
    let neither = tree(
        &tmp.path().join("neither"),
        &[("mha_fwd.h", "namespace aiter {}\n"), ("mha_bwd.h", "")],
    );
    let error = detect_api_generation(&neither).unwrap_err().to_string();
    assert!(
        error.contains("csrc/include/mha_fwd.h") && error.contains("no definition of mha_fwd_args"),
        "{error}"
    );
}

#[test]
fn te_style_calls_compile_against_the_struct_generation_api_and_not_against_the_parameters_one() {
    if !hipcc_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let caller = tmp.path().join("te_caller.cpp");
    std::fs::write(&caller, TE_STYLE_CALLER).unwrap();

    // Struct generation: QoLA's signatures; the caller and qola's wrappers compile, with
    // split-KV on (the extras declared and wrapped) and off (neither).
    let structs = tree(&tmp.path().join("struct"), STRUCT_HEADERS);
    let api = tmp.path().join("struct-api");
    let tree_api = read_api(&structs).unwrap();
    let extras: Vec<&str> = tree_api.forward_extras.iter().map(|e| e.name).collect();
    assert_eq!(
        extras,
        [
            "mha_fwd_calculate_num_splits",
            "mha_fwd_workspace_size",
            "mha_fwd_with_sink_supported"
        ]
    );
    let cpp = CppApi::resolve(
        Registry::shipped(),
        &structs,
        &tmp.path().join("struct-gen"),
    )
    .unwrap();
    cpp.write_headers(&api, Some("te")).unwrap();
    for defines in [
        &["-DFAV_NATIVE_ON=1", "-DFA_WITH_SINK=1"][..],
        &["-DFAV_NATIVE_ON=0"][..],
    ] {
        let out = syntax_check(&caller, &api, &structs, defines);
        assert!(
            out.status.success(),
            "{defines:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for module in ["libmha_fwd", "libmha_bwd"] {
            let [wrapper] = &cpp.wrappers[module][..] else {
                panic!("{module}: one wrapper source")
            };
            let out = syntax_check(wrapper, &api, &structs, defines);
            assert!(
                out.status.success(),
                "{} {defines:?}: {}",
                wrapper.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    // Split-KV off: the extras are not there to call.
    let calls = tmp.path().join("calls_num_splits.cpp");
    std::fs::write(
        &calls,
        "#include \"qola_mha_fwd.h\"\nint f(const aiter::mha_fwd_args& a) { return QOLA_NS(mha_fwd_calculate_num_splits)(a); }\n",
    )
    .unwrap();
    let out = syntax_check(&calls, &api, &structs, &["-DFAV_NATIVE_ON=0"]);
    assert!(
        !out.status.success(),
        "declared although the tree's switch is off"
    );

    // Parameters generation (AITER 05a0d1f): that API takes the options as parameters, so
    // TransformerEngine's calls do not compile against it, and the wrappers do.
    let params = tree(&tmp.path().join("params"), PARAMETER_HEADERS);
    let api = tmp.path().join("params-api");
    let cpp =
        CppApi::resolve(Registry::shipped(), &params, &tmp.path().join("params-gen")).unwrap();
    cpp.write_headers(&api, Some("te")).unwrap();
    let out = syntax_check(&caller, &api, &params, &[]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && text.contains("too few arguments"),
        "{text}"
    );
    let wrapper = &cpp.wrappers["libmha_fwd"][0];
    assert!(wrapper.ends_with("parameters/qola_mha_fwd.cpp"));
    let out = syntax_check(wrapper, &api, &params, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
