//! What qola knows about AITER's modules beyond their recipe: which have a wrapper of qola's
//! C++ API (`cpp_api/` of this package, one folder per [`ApiGeneration`] of AITER's API), and
//! which hsa code objects a module loads when the manifest does not say.

use crate::aiter::api_generation::ApiGeneration;

/// A file of qola's C++ API: its name and text.
pub type ApiFile = (&'static str, &'static str);

/// The C++ API headers `qola build` writes into `<output-dir>/include` (with `qola_config.h`)
/// for a tree of `generation`.
pub fn public_headers(generation: ApiGeneration) -> [ApiFile; 3] {
    let common = ("qola_common.h", include_str!("../../cpp_api/qola_common.h"));
    match generation {
        ApiGeneration::Parameters => [
            common,
            (
                "qola_mha_fwd.h",
                include_str!("../../cpp_api/parameters/qola_mha_fwd.h"),
            ),
            (
                "qola_mha_bwd.h",
                include_str!("../../cpp_api/parameters/qola_mha_bwd.h"),
            ),
        ],
        ApiGeneration::Struct => [
            common,
            (
                "qola_mha_fwd.h",
                include_str!("../../cpp_api/struct/qola_mha_fwd.h"),
            ),
            (
                "qola_mha_bwd.h",
                include_str!("../../cpp_api/struct/qola_mha_bwd.h"),
            ),
        ],
    }
}

/// A module's C++ API wrapper for a tree of `generation`, when qola has one.
pub fn cpp_wrapper(module: &str, generation: ApiGeneration) -> Option<ApiFile> {
    use ApiGeneration::{Parameters, Struct};
    Some(match (module, generation) {
        ("libmha_fwd", Parameters) => (
            "qola_mha_fwd.cpp",
            include_str!("../../cpp_api/parameters/qola_mha_fwd.cpp"),
        ),
        ("libmha_bwd", Parameters) => (
            "qola_mha_bwd.cpp",
            include_str!("../../cpp_api/parameters/qola_mha_bwd.cpp"),
        ),
        ("libmha_fwd", Struct) => (
            "qola_mha_fwd.cpp",
            include_str!("../../cpp_api/struct/qola_mha_fwd.cpp"),
        ),
        ("libmha_bwd", Struct) => (
            "qola_mha_bwd.cpp",
            include_str!("../../cpp_api/struct/qola_mha_bwd.cpp"),
        ),
        _ => return None,
    })
}

/// The hsa subdirectories (of `hsa/<arch>/`) whose code objects a module loads at run time,
/// used when the manifest's entry has no `hsa_subdirs`.
pub fn default_hsa_subdirs(module: &str) -> &'static [&'static str] {
    match module {
        "libmha_fwd" => &["fmha_v3_fwd"],
        "libmha_bwd" => &["fmha_v3_bwd"],
        _ => &[],
    }
}

/// `qola_config.h` for a namespace.
pub fn config_header(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!(
            "// Written by qola build: the namespace of this build's C++ API (qola::{ns}::).\n#pragma once\n#define QOLA_NAMESPACE {ns}\n"
        ),
        None => "// Written by qola build: no namespace (the C++ API is qola::).\n#pragma once\n"
            .to_string(),
    }
}

/// The linker version script of a module's shared library: only qola's C++ API (and its type
/// information) is exported; everything else, AITER's default-visibility functions included, is
/// local, so libraries of two namespaces or two AITER builds do not collide in one process.
pub fn version_script() -> &'static str {
    "/* Written by qola build: export qola's C++ API only. */\n{\n  global:\n    extern \"C++\" {\n      qola::*;\n      \"typeinfo for qola::*\";\n      \"typeinfo name for qola::*\";\n      \"vtable for qola::*\";\n    };\n  local:\n    *;\n};\n"
}
