//! What qola knows about AITER's modules beyond their recipe: which have a wrapper of qola's
//! C++ API (`cpp_api/` of this package, one folder per [`ApiGeneration`] of AITER's API), and
//! which hsa code objects a module loads when the manifest does not say.

use crate::aiter::api_generation::{ApiGeneration, ForwardExtra, TreeApi};

/// A file of qola's C++ API: its name and text.
pub type ApiFile = (&'static str, String);

/// The C++ API headers `qola build` writes into `<output-dir>/include` (with `qola_config.h`)
/// for a tree whose API is `api`: for the struct generation, the forward extras the tree
/// declares are declared too, under the tree's own conditions.
pub fn public_headers(api: &TreeApi) -> [ApiFile; 3] {
    let common = (
        "qola_common.h",
        include_str!("../../cpp_api/qola_common.h").to_string(),
    );
    match api.generation {
        ApiGeneration::Parameters => [
            common,
            (
                "qola_mha_fwd.h",
                include_str!("../../cpp_api/parameters/qola_mha_fwd.h").to_string(),
            ),
            (
                "qola_mha_bwd.h",
                include_str!("../../cpp_api/parameters/qola_mha_bwd.h").to_string(),
            ),
        ],
        ApiGeneration::Struct => [
            common,
            (
                "qola_mha_fwd.h",
                with_extras(
                    include_str!("../../cpp_api/struct/qola_mha_fwd.h"),
                    &api.forward_extras,
                    |e| {
                        format!(
                            "QOLA_EXPORT {} {}(const aiter::mha_fwd_args& args);\n",
                            e.returns, e.name
                        )
                    },
                ),
            ),
            (
                "qola_mha_bwd.h",
                include_str!("../../cpp_api/struct/qola_mha_bwd.h").to_string(),
            ),
        ],
    }
}

/// A module's C++ API wrapper for a tree whose API is `api`, when qola has one.
pub fn cpp_wrapper(module: &str, api: &TreeApi) -> Option<ApiFile> {
    use ApiGeneration::{Parameters, Struct};
    Some(match (module, api.generation) {
        ("libmha_fwd", Parameters) => (
            "qola_mha_fwd.cpp",
            include_str!("../../cpp_api/parameters/qola_mha_fwd.cpp").to_string(),
        ),
        ("libmha_bwd", Parameters) => (
            "qola_mha_bwd.cpp",
            include_str!("../../cpp_api/parameters/qola_mha_bwd.cpp").to_string(),
        ),
        ("libmha_fwd", Struct) => (
            "qola_mha_fwd.cpp",
            with_extras(
                include_str!("../../cpp_api/struct/qola_mha_fwd.cpp"),
                &api.forward_extras,
                |e| {
                    format!(
                        "{} {}(const aiter::mha_fwd_args& args)\n{{\n    return ::aiter::{}(args);\n}}\n",
                        e.returns, e.name, e.name
                    )
                },
            ),
        ),
        ("libmha_bwd", Struct) => (
            "qola_mha_bwd.cpp",
            include_str!("../../cpp_api/struct/qola_mha_bwd.cpp").to_string(),
        ),
        _ => return None,
    })
}

/// `text` (a file of qola's API ending in `QOLA_NS_END`) with `each` of `extras` before its
/// end, each under its condition in the tree.
fn with_extras(
    text: &str,
    extras: &[ForwardExtra],
    each: impl Fn(&ForwardExtra) -> String,
) -> String {
    let end = text
        .rfind("QOLA_NS_END")
        .expect("qola's API files end their namespace");
    let mut out = text[..end].to_string();
    for extra in extras {
        match &extra.condition {
            Some(condition) => {
                out.push_str(&format!("#if {condition}\n{}#endif\n\n", each(extra)));
            }
            None => out.push_str(&format!("{}\n", each(extra))),
        }
    }
    out.push_str(&text[end..]);
    out
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
