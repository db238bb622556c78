//! ck-jit's hints in CK's API dispatchers: what its interceptor rewrites, and what qola checks
//! before it gives the interceptor any instance (every instance named by a hint, or ck-jit would
//! never compile it and its library would call it).

use std::path::{Path, PathBuf};

use crate::aiter::{AiterError, Result};
use crate::common::io::io_error;

/// ck-jit's markers before each dispatch of CK's API dispatchers, each naming an instance's file
/// (the forward's, split-KV's and batch prefill's kernel, split-KV's combine kernel, the
/// backward's three), in every variant of its hints patch (v1, v2, v3 for 22ee91463).
const HINTS: [&str; 4] = [
    "//jit_kernel:",
    "//jit_combine_kernel:",
    "//jit_dot_do_o_kernel:",
    "//jit_convert_dq_kernel:",
];

/// The instance files ck-jit's hints in a dispatcher's `text` name, by file name: each marker's
/// value (its last path component; an empty one names none). A split-KV combine kernel is
/// named in its `_nlse_` form and names its `_lse_` twin too, as ck-jit derives it.
fn hinted_instances(text: &str) -> std::collections::BTreeSet<String> {
    let mut named = std::collections::BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        let Some(value) = HINTS.iter().find_map(|h| line.strip_prefix(h)) else {
            continue;
        };
        let Some(file) = value.trim().rsplit('/').next().filter(|f| !f.is_empty()) else {
            continue;
        };
        if line.starts_with("//jit_combine_kernel:") && file.contains("_nlse_") {
            named.insert(file.replacen("_nlse_", "_lse_", 1));
        }
        named.insert(file.to_string());
    }
    named
}

/// An error when an instance given to the interceptor is named by none of ck-jit's hints in
/// CK's API dispatchers: ck-jit compiles on first use only what a hint names, so its library
/// would call a kernel that is never compiled (no hint at all: ck-jit's patch to CK's generator
/// is not applied). A dispatcher without hints that dispatches nothing given to the interceptor
/// is not an error.
pub(super) fn check_hints(name: &str, taken: &[(PathBuf, Vec<String>)]) -> Result<()> {
    let is_api = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("fmha_") && n.contains("_api."))
    };
    let (apis, instances): (Vec<&Path>, Vec<&Path>) = taken
        .iter()
        .map(|(p, _)| p.as_path())
        .partition(|p| is_api(p));
    let mut named = std::collections::BTreeSet::new();
    for api in &apis {
        let text = std::fs::read_to_string(api).map_err(io_error("read", api))?;
        named.extend(hinted_instances(&text));
    }
    let unnamed: Vec<String> = instances
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|file| !named.contains(file))
        .collect();
    if unnamed.is_empty() {
        return Ok(());
    }
    let dispatchers = apis
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let why = match named.is_empty() {
        true => "they have none of ck-jit's `//jit_kernel:` hints, so its rewrite would leave calls to kernels that are never compiled: ck-jit's codegen hints patch is not applied to this composable_kernel (ck_jit_build.py applies it; a patch that does not apply to this CK must be adapted to it)".to_string(),
        false => format!(
            "{} of {} CK instance(s) given to the interceptor are named by none of their `//jit_*:` hints (first: {}), so ck-jit would never compile them and its library would call them: ck-jit's hints patch does not cover what this composable_kernel generates",
            unnamed.len(),
            instances.len(),
            unnamed.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ),
    };
    Err(AiterError::CkJit {
        step: format!("{name}: CK's API dispatcher(s) {dispatchers}"),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dispatcher as CK's generator writes it with ck-jit's hints (v3's, for composable_kernel
    /// 22ee91463 and later, name the same way as v1's and v2's): `(text, instances it names)`.
    fn dispatcher() -> (String, Vec<&'static str>) {
        let text = "// generated
#include <ck_tile/core.hpp>
float fmha_fwd_splitkv(fmha_fwd_splitkv_traits t, fmha_fwd_splitkv_args a, const ck_tile::stream_config& s) {
    if(t.hdim_q <= 128) {
        //jit_kernel: fmha_fwd_splitkv_d128_bf16_batch_b64_gfx9.cpp
//jit_combine_kernel: fmha_fwd_splitkv_combine_d128_bf16_batch_nlse_gfx9.cpp
        if(t.has_lse) { return 1.0f; }
    }
    //jit_kernel: blob/fmha_bwd_d128_bf16_batch_gfx9.cpp
    //jit_dot_do_o_kernel: fmha_bwd_dot_do_o_d128_bf16_gfx9.cpp
    //jit_convert_dq_kernel: 
    return -1;
}
";
        let named = vec![
            "fmha_fwd_splitkv_d128_bf16_batch_b64_gfx9.cpp",
            "fmha_fwd_splitkv_combine_d128_bf16_batch_nlse_gfx9.cpp",
            "fmha_fwd_splitkv_combine_d128_bf16_batch_lse_gfx9.cpp",
            "fmha_bwd_d128_bf16_batch_gfx9.cpp",
            "fmha_bwd_dot_do_o_d128_bf16_gfx9.cpp",
        ];
        (text.to_string(), named)
    }

    #[test]
    fn every_instance_a_hint_names_is_accepted_from_every_hints_variant() {
        let (text, named) = dispatcher();
        let found = hinted_instances(&text);
        assert_eq!(
            found.iter().map(String::as_str).collect::<Vec<_>>(),
            {
                let mut named = named.clone();
                named.sort();
                named
            },
            "an empty convert-dQ hint names nothing; the combine kernel's `_lse_` twin is named"
        );
        let dir = tempfile::tempdir().unwrap();
        let blob = dir.path().join("blob");
        std::fs::create_dir_all(&blob).unwrap();
        let api = blob.join("fmha_fwd_splitkv_api.cpp");
        std::fs::write(&api, &text).unwrap();
        let taken = |files: &[&str]| -> Vec<(PathBuf, Vec<String>)> {
            std::iter::once(api.clone())
                .chain(files.iter().map(|f| blob.join(f)))
                .map(|p| (p, Vec::new()))
                .collect()
        };
        check_hints("te_libmha_fwd", &taken(&named)).unwrap();
        // A dispatcher without hints beside it, dispatching nothing of the interceptor's: fine.
        let empty = blob.join("fmha_batch_prefill_api.cpp");
        std::fs::write(&empty, "float fmha_batch_prefill() { return -1; }\n").unwrap();
        let mut with_empty = taken(&named);
        with_empty.push((empty, Vec::new()));
        check_hints("te_libmha_fwd", &with_empty).unwrap();
        // An instance no hint names is an error naming it; no hint at all says the patch is missing.
        let error = check_hints(
            "te_libmha_fwd",
            &taken(&["fmha_fwd_appendkv_d128_gfx9.cpp"]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("1 of 1 CK instance(s)")
                && error.contains("fmha_fwd_appendkv_d128_gfx9.cpp"),
            "{error}"
        );
        std::fs::write(&api, "float f() { return -1; }\n").unwrap();
        let error = check_hints("te_libmha_fwd", &taken(&named))
            .unwrap_err()
            .to_string();
        assert!(error.contains("hints patch is not applied"), "{error}");
    }
}
