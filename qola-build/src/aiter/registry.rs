//! What qola knows about AITER's modules beyond their recipe: which have a wrapper of qola's
//! C++ API (`cpp_api/` of this package), and which hsa code objects a module loads when the
//! manifest does not say.

/// The C++ API headers `qola build` writes into `<output-dir>/include` (with `qola_config.h`).
pub const PUBLIC_HEADERS: &[(&str, &str)] = &[
    ("qola_common.h", include_str!("../../cpp_api/qola_common.h")),
    (
        "qola_mha_fwd.h",
        include_str!("../../cpp_api/qola_mha_fwd.h"),
    ),
    (
        "qola_mha_bwd.h",
        include_str!("../../cpp_api/qola_mha_bwd.h"),
    ),
];

/// A module's C++ API wrapper: its file name and text.
pub fn cpp_wrapper(module: &str) -> Option<(&'static str, &'static str)> {
    match module {
        "libmha_fwd" => Some((
            "qola_mha_fwd.cpp",
            include_str!("../../cpp_api/qola_mha_fwd.cpp"),
        )),
        "libmha_bwd" => Some((
            "qola_mha_bwd.cpp",
            include_str!("../../cpp_api/qola_mha_bwd.cpp"),
        )),
        _ => None,
    }
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
