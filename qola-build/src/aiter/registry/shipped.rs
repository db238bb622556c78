//! qola's own registry (`qola-build/cpp_api/registry.toml`) and the files it names, compiled
//! into qola (a `qola` installed from a wheel has no source tree). [`materialize`] writes them
//! for a build, the struct generation's forward API with the extras the tree declares (see
//! `api_generation`): the one part of the C++ API that is worked out, not written down.

use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::aiter::Result;
use crate::aiter::recipe::{ForwardExtra, TreeApi};
use crate::aiter::registry::{Base, Registry};
use crate::common::io::write_if_changed;

/// Every file of `cpp_api/`, by its path there.
const FILES: &[(&str, &str)] = &[
    (
        "registry.toml",
        include_str!("../../../cpp_api/registry.toml"),
    ),
    (
        "qola_exports.lds",
        include_str!("../../../cpp_api/qola_exports.lds"),
    ),
    (
        "qola_common.h",
        include_str!("../../../cpp_api/qola_common.h"),
    ),
    (
        "parameters/qola_mha_fwd.h",
        include_str!("../../../cpp_api/parameters/qola_mha_fwd.h"),
    ),
    (
        "parameters/qola_mha_fwd.cpp",
        include_str!("../../../cpp_api/parameters/qola_mha_fwd.cpp"),
    ),
    (
        "parameters/qola_mha_bwd.h",
        include_str!("../../../cpp_api/parameters/qola_mha_bwd.h"),
    ),
    (
        "parameters/qola_mha_bwd.cpp",
        include_str!("../../../cpp_api/parameters/qola_mha_bwd.cpp"),
    ),
    (
        "struct/qola_mha_fwd.h",
        include_str!("../../../cpp_api/struct/qola_mha_fwd.h"),
    ),
    (
        "struct/qola_mha_fwd.cpp",
        include_str!("../../../cpp_api/struct/qola_mha_fwd.cpp"),
    ),
    (
        "struct/qola_mha_bwd.h",
        include_str!("../../../cpp_api/struct/qola_mha_bwd.h"),
    ),
    (
        "struct/qola_mha_bwd.cpp",
        include_str!("../../../cpp_api/struct/qola_mha_bwd.cpp"),
    ),
    (
        "gemm/qola_gemm_a4w4.h",
        include_str!("../../../cpp_api/gemm/qola_gemm_a4w4.h"),
    ),
    (
        "gemm/qola_gemm_a4w4_c.h",
        include_str!("../../../cpp_api/gemm/qola_gemm_a4w4_c.h"),
    ),
    (
        "gemm/qola_gemm_a4w4_blockscale.h",
        include_str!("../../../cpp_api/gemm/qola_gemm_a4w4_blockscale.h"),
    ),
    (
        "gemm/qola_gemm_a4w4_blockscale.cpp",
        include_str!("../../../cpp_api/gemm/qola_gemm_a4w4_blockscale.cpp"),
    ),
    (
        "gemm/qola_gemm_a4w4_asm.h",
        include_str!("../../../cpp_api/gemm/qola_gemm_a4w4_asm.h"),
    ),
    (
        "gemm/qola_gemm_a4w4_asm.cpp",
        include_str!("../../../cpp_api/gemm/qola_gemm_a4w4_asm.cpp"),
    ),
];

/// qola's registry, read once.
pub(super) fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        super::read::read(
            FILES[0].1,
            Path::new("qola's registry (qola-build/cpp_api/registry.toml)"),
            Base::Shipped,
        )
        .expect("qola's own registry reads (tested)")
    })
}

/// Writes qola's registry files into `dir` for a tree whose attention API is `api` (each file
/// only when its content changes).
pub fn materialize(dir: &Path, api: &TreeApi) -> Result<()> {
    for (name, text) in FILES {
        let text = match *name {
            "struct/qola_mha_fwd.h" => with_extras(text, &api.forward_extras, |e| {
                format!(
                    "QOLA_EXPORT {} {}(const aiter::mha_fwd_args& args);\n",
                    e.returns, e.name
                )
            }),
            "struct/qola_mha_fwd.cpp" => with_extras(text, &api.forward_extras, |e| {
                format!(
                    "{} {}(const aiter::mha_fwd_args& args)\n{{\n    return ::aiter::{}(args);\n}}\n",
                    e.returns, e.name, e.name
                )
            }),
            _ => text.to_string(),
        };
        write_if_changed(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
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

/// The files of `cpp_api/` on disk, relative to it (for the test that each is compiled in).
#[cfg(test)]
fn on_disk(dir: &Path, prefix: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = prefix.join(path.file_name().unwrap());
        if path.is_dir() {
            on_disk(&path, &rel, out);
        } else {
            out.push(rel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_cpp_api_is_compiled_in_and_the_registry_reads() {
        let mut files = Vec::new();
        on_disk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("cpp_api"),
            Path::new(""),
            &mut files,
        );
        files.sort();
        let mut compiled: Vec<PathBuf> = FILES.iter().map(|(n, _)| PathBuf::from(n)).collect();
        compiled.sort();
        assert_eq!(files, compiled);
        let r = registry();
        assert!(r.entry("libmha_fwd").is_some() && r.entry("libmha_bwd").is_some());
    }
}
