//! Which generation of AITER's C++ attention API a tree has, read from its headers, so that
//! `qola build` installs the matching qola API (`cpp_api/parameters/` or `cpp_api/struct/`).
//!
//! * [`ApiGeneration::Parameters`] (AITER 05a0d1f, qola's pin): `aiter::mha_fwd_args` is CK's
//!   `fmha_fwd_args` (`using mha_fwd_args = fmha_fwd_args;`) and `aiter::mha_fwd` takes the
//!   options as further parameters (`q_dtype_str`, `is_group_mode`, `mask_type`, ...);
//!   likewise `mha_bwd`.
//! * [`ApiGeneration::Struct`] (the AITERs TransformerEngine and QoLA pin later): AITER defines
//!   its own `struct mha_fwd_args` holding every option, and `aiter::mha_fwd(args,
//!   stream_config)` takes two arguments; likewise `mha_bwd`. qola installs QoLA's signatures
//!   for it: `float qola::<ns>::mha_fwd(const aiter::mha_fwd_args&, const
//!   ck_tile::stream_config&)`, `mha_bwd` alike, `size_t mha_bwd_workspace_size(const
//!   fmha_bwd_traits&)`.
//!
//! Both headers (`csrc/include/mha_fwd.h`, `mha_bwd.h`) must show the same generation, each
//! by both signs (the args type and the function's arity); anything else is an error naming the
//! header and what it shows, never a guess.
//!
//! A struct-generation forward header may also declare functions QoLA wraps too
//! ([`ForwardExtra`]: `mha_fwd_calculate_num_splits`, `mha_fwd_workspace_size`,
//! `mha_fwd_with_sink_supported`), each under a feature switch of the tree (AITER 7a24cd87:
//! `#if FAV_NATIVE_ON`). qola's API declares and wraps exactly those the tree declares, under
//! the tree's own condition, so a caller sees them exactly when the library has them.

use std::path::Path;

use crate::aiter::{AiterError, Result};
use crate::common::io::io_error;

/// A generation of AITER's C++ attention API (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiGeneration {
    /// Options as parameters of `aiter::mha_fwd` / `mha_bwd` (AITER 05a0d1f).
    Parameters,
    /// Options inside AITER's own `mha_fwd_args` / `mha_bwd_args` structs.
    Struct,
}

impl ApiGeneration {
    /// Its name in qola's registry (`{api_generation}`): `parameters` or `struct`.
    pub fn name(self) -> &'static str {
        match self {
            ApiGeneration::Parameters => "parameters",
            ApiGeneration::Struct => "struct",
        }
    }
}

/// A forward function beyond `mha_fwd` that the tree declares and qola's API wraps, with the
/// condition it is declared under.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForwardExtra {
    /// Its name (`mha_fwd_calculate_num_splits`).
    pub name: &'static str,
    /// What it returns (`int`).
    pub returns: &'static str,
    /// The preprocessor condition it is declared under in the tree's header (`FAV_NATIVE_ON`).
    pub condition: Option<String>,
}

/// The API of a tree: its generation and the forward functions beyond `mha_fwd` it declares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TreeApi {
    /// The generation (see the module docs).
    pub generation: ApiGeneration,
    /// The forward extras, in QoLA's order.
    pub forward_extras: Vec<ForwardExtra>,
}

/// The forward functions QoLA wraps when the tree declares them: name and return type.
const FORWARD_EXTRAS: [(&str, &str); 3] = [
    ("mha_fwd_calculate_num_splits", "int"),
    ("mha_fwd_workspace_size", "size_t"),
    ("mha_fwd_with_sink_supported", "bool"),
];

/// The extras `header` (a forward header's text) declares, each with the innermost `#if` it
/// sits in (an include guard `#ifndef X_H` is not a condition).
pub(crate) fn forward_extras(header: &str) -> Vec<ForwardExtra> {
    let code = without_comments(header);
    let mut found = Vec::new();
    let mut conditions: Vec<Option<String>> = Vec::new();
    for line in code.lines() {
        let trimmed = line.trim();
        if let Some(directive) = trimmed.strip_prefix('#').map(str::trim_start) {
            if let Some(condition) = directive.strip_prefix("if ") {
                conditions.push(Some(condition.trim().to_string()));
            } else if let Some(name) = directive.strip_prefix("ifdef ") {
                conditions.push(Some(format!("defined({})", name.trim())));
            } else if directive.starts_with("ifndef") {
                conditions.push(None);
            } else if directive.starts_with("endif") {
                conditions.pop();
            } else if directive.starts_with("el") {
                // An `#else` branch: not the condition any more; qola declares nothing there.
                if let Some(last) = conditions.last_mut() {
                    *last = Some("0".to_string());
                }
            }
            continue;
        }
        for (name, returns) in FORWARD_EXTRAS {
            let declared = occurrences(line, name).any(|(before, after)| {
                before.ends_with(returns)
                    && after.starts_with('(')
                    && after.contains("mha_fwd_args")
            });
            if declared && !found.iter().any(|f: &ForwardExtra| f.name == name) {
                let condition = conditions.iter().rev().flatten().next().cloned();
                if condition.as_deref() == Some("0") {
                    continue;
                }
                found.push(ForwardExtra {
                    name,
                    returns,
                    condition,
                });
            }
        }
    }
    found.sort_by_key(|f| FORWARD_EXTRAS.iter().position(|(n, _)| *n == f.name));
    found
}

/// How a header declares one function's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgsType {
    /// `using <name>_args = f<name>_args;`: CK's struct.
    CkAlias,
    /// `struct <name>_args { ... }`: AITER's own.
    OwnStruct,
    /// Neither.
    Unknown,
}

/// What a header shows of `aiter::<name>`: its args type and the number of parameters of its
/// first declaration (`None`: not declared).
fn shape(text: &str, name: &str) -> (ArgsType, Option<usize>) {
    let code = without_comments(text);
    let args = format!("{name}_args");
    let ck_alias = occurrences(&code, &args).any(|(before, after)| {
        before.ends_with("using")
            && after
                .strip_prefix('=')
                .is_some_and(|a| a.trim_start().starts_with(&format!("f{args}")))
    });
    // A definition, not a mention: `struct <name>_args {`.
    let own_struct = occurrences(&code, &args)
        .any(|(before, after)| before.ends_with("struct") && after.starts_with('{'));
    let args_type = match (ck_alias, own_struct) {
        (true, false) => ArgsType::CkAlias,
        (false, true) => ArgsType::OwnStruct,
        _ => ArgsType::Unknown,
    };
    (args_type, parameters_of(&code, name))
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Each whole-word occurrence of `ident` in `code`: the text before it (trimmed at its end) and
/// after it (trimmed at its start).
fn occurrences<'c>(code: &'c str, ident: &str) -> impl Iterator<Item = (&'c str, &'c str)> {
    code.match_indices(ident).filter_map(move |(start, _)| {
        let end = start + ident.len();
        let whole = !code[..start]
            .chars()
            .next_back()
            .is_some_and(is_identifier_char)
            && !code[end..].chars().next().is_some_and(is_identifier_char);
        whole.then(|| (code[..start].trim_end(), code[end..].trim_start()))
    })
}

/// The number of parameters of the first `float <name>(...)` declared in `code`.
fn parameters_of(code: &str, name: &str) -> Option<usize> {
    let (_, after) = occurrences(code, name)
        .find(|(before, after)| before.ends_with("float") && after.starts_with('('))?;
    {
        let list = &after[1..];
        let (mut depth, mut count, mut any) = (0i32, 1usize, false);
        for c in list.chars() {
            match c {
                '(' | '<' | '{' | '[' => depth += 1,
                ')' if depth == 0 => return Some(if any { count } else { 0 }),
                ')' | '>' | '}' | ']' => depth -= 1,
                ',' if depth == 0 => count += 1,
                c if !c.is_whitespace() => any = true,
                _ => {}
            }
        }
        None
    }
}

/// `text` without `//` and `/* */` comments (string literals are not special: headers of this
/// API hold no comment markers in strings).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
            out.push(' ');
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The generation one header shows for `aiter::<name>`, or what it shows instead.
fn generation_of(text: &str, name: &str) -> std::result::Result<ApiGeneration, String> {
    match shape(text, name) {
        (ArgsType::CkAlias, Some(n)) if n > 2 => Ok(ApiGeneration::Parameters),
        (ArgsType::OwnStruct, Some(2)) => Ok(ApiGeneration::Struct),
        (args, params) => Err(format!(
            "{}, and {}",
            match args {
                ArgsType::CkAlias => format!("{name}_args is CK's f{name}_args"),
                ArgsType::OwnStruct => format!("{name}_args is AITER's own struct"),
                ArgsType::Unknown => format!("no definition of {name}_args"),
            },
            match params {
                Some(n) => format!("`float {name}(...)` takes {n} parameters"),
                None => format!("no `float {name}(...)` declaration"),
            }
        )),
    }
}

/// The generation both headers show (see the module docs): `Err` names the header and what it
/// shows.
pub(crate) fn classify(
    fwd: &str,
    bwd: &str,
) -> std::result::Result<ApiGeneration, (&'static str, String)> {
    let fwd = generation_of(fwd, "mha_fwd").map_err(|why| ("mha_fwd.h", why))?;
    let bwd = generation_of(bwd, "mha_bwd").map_err(|why| ("mha_bwd.h", why))?;
    if fwd != bwd {
        return Err((
            "mha_bwd.h",
            format!("its API is {bwd:?}, but mha_fwd.h's is {fwd:?}"),
        ));
    }
    Ok(fwd)
}

/// The generation of the AITER tree at `root` (its `csrc/include/mha_fwd.h` and `mha_bwd.h`).
pub fn detect(root: &Path) -> Result<ApiGeneration> {
    Ok(read_api(root)?.generation)
}

/// The API of the AITER tree at `root`: its generation and, for the struct generation, the
/// forward extras its `mha_fwd.h` declares.
pub fn read_api(root: &Path) -> Result<TreeApi> {
    let include = root.join("csrc/include");
    let read = |name: &str| {
        let path = include.join(name);
        std::fs::read_to_string(&path).map_err(io_error("read", path))
    };
    let (fwd, bwd) = (read("mha_fwd.h")?, read("mha_bwd.h")?);
    let generation = classify(&fwd, &bwd).map_err(|(header, why)| AiterError::ApiGeneration {
        header: include.join(header),
        why,
    })?;
    let forward_extras = match generation {
        ApiGeneration::Struct => forward_extras(&fwd),
        ApiGeneration::Parameters => Vec::new(),
    };
    Ok(TreeApi {
        generation,
        forward_extras,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of AITER 05a0d1f's headers (abridged).
    const PARAMETERS_FWD: &str = "namespace aiter {\nusing mha_fwd_args = fmha_fwd_args;\n// float mha_fwd(mha_fwd_args args, const ck_tile::stream_config& s);\n__attribute__((visibility(\"default\"))) float mha_fwd(mha_fwd_args args,\n    const ck_tile::stream_config& stream_config, std::string q_dtype_str, bool is_group_mode,\n    mask_enum mask_type, bias_enum bias_type, bool has_lse, bool use_ext_asm,\n    int how_v3_bf16_cvt = 1, const void* seqstart_q_padding_ptr = nullptr,\n    const void* seqstart_k_padding_ptr = nullptr, bool is_v3_api_check = false);\nfloat mha_fwd_splitkv(mha_fwd_splitkv_args args, const ck_tile::stream_config& s);\n}\n";
    const PARAMETERS_BWD: &str = "namespace aiter {\nusing mha_bwd_args = fmha_bwd_args;\nfloat mha_bwd(mha_bwd_args args, const ck_tile::stream_config& stream_config,\n    std::string q_dtype_str, bool is_group_mode, mask_enum mask_type, bias_enum bias_type,\n    bool has_dbias, bool is_store_randval, bool deterministic, bool use_ext_asm,\n    bool is_v3_atomic_fp32, int how_v3_bf16_cvt, const void* seqlen_q_padded = nullptr,\n    const void* seqlen_k_padded = nullptr, bool is_v3_api_check = false);\n}\n";
    /// The shape of the newer AITERs' headers (abridged).
    const STRUCT_FWD: &str = "namespace aiter {\nstruct mha_fwd_traits : public fmha_fwd_traits { };\nstruct mha_fwd_args\n{\n    bool use_asm_v3;\n    std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*, const void*>> drop_seed_offset;\n};\nfloat mha_fwd_splitkv(mha_fwd_splitkv_args args, const ck_tile::stream_config& s, std::string q);\n__attribute__((visibility(\"default\"))) float mha_fwd(mha_fwd_args args,\n                                                     const ck_tile::stream_config& s);\n}\n";
    const STRUCT_BWD: &str = "namespace aiter {\nstruct mha_bwd_args {\n    int mask_type; /* 0: no mask */\n};\n__attribute__((visibility(\"default\"))) float mha_bwd(mha_bwd_args, const ck_tile::stream_config&);\n}\n";

    #[test]
    fn each_generation_is_read_from_both_signs_of_both_headers() {
        assert_eq!(
            classify(PARAMETERS_FWD, PARAMETERS_BWD),
            Ok(ApiGeneration::Parameters)
        );
        assert_eq!(classify(STRUCT_FWD, STRUCT_BWD), Ok(ApiGeneration::Struct));
    }

    #[test]
    fn a_header_of_no_known_shape_or_headers_that_disagree_are_errors_naming_what_they_show() {
        let (header, why) = classify(STRUCT_FWD, PARAMETERS_BWD).unwrap_err();
        assert_eq!(header, "mha_bwd.h");
        assert!(
            why.contains("Parameters") && why.contains("Struct"),
            "{why}"
        );
        // The struct's type with the old arity: neither generation.
        let mixed = STRUCT_FWD.replace(
            "const ck_tile::stream_config& s);",
            "const ck_tile::stream_config& s, bool x);",
        );
        let (header, why) = classify(&mixed, STRUCT_BWD).unwrap_err();
        assert_eq!(header, "mha_fwd.h");
        assert!(
            why.contains("AITER's own struct") && why.contains("takes 3 parameters"),
            "{why}"
        );
        let (_, why) = classify("namespace aiter {}", STRUCT_BWD).unwrap_err();
        assert!(
            why.contains("no definition of mha_fwd_args") && why.contains("no `float mha_fwd"),
            "{why}"
        );
    }

    #[test]
    fn forward_extras_are_read_with_the_condition_they_are_declared_under() {
        let header = format!(
            "{STRUCT_FWD}#ifndef QOLA_TEST_H\n#if FAV_NATIVE_ON\n// int mha_fwd_with_sink_supported(const mha_fwd_args& a);\n__attribute__((visibility(\"default\"))) int mha_fwd_calculate_num_splits(const mha_fwd_args& a);\n\n__attribute__((visibility(\"default\"))) size_t mha_fwd_workspace_size(const mha_fwd_args& a);\n#endif\n#ifdef WITH_SINK\nbool mha_fwd_with_sink_supported(const mha_fwd_args& a);\n#else\nint mha_fwd_other(const mha_fwd_args& a);\n#endif\n#endif\n"
        );
        let extras = forward_extras(&header);
        let shown: Vec<(&str, Option<&str>)> = extras
            .iter()
            .map(|e| (e.name, e.condition.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                ("mha_fwd_calculate_num_splits", Some("FAV_NATIVE_ON")),
                ("mha_fwd_workspace_size", Some("FAV_NATIVE_ON")),
                ("mha_fwd_with_sink_supported", Some("defined(WITH_SINK)")),
            ]
        );
        assert_eq!(forward_extras(STRUCT_FWD), Vec::new());
    }

    #[test]
    fn comments_and_look_alike_names_do_not_count() {
        // The commented-out two-argument declaration above is not the declaration, nor is
        // mha_fwd_splitkv's.
        assert_eq!(
            parameters_of(&without_comments(PARAMETERS_FWD), "mha_fwd"),
            Some(12)
        );
        assert_eq!(
            parameters_of(&without_comments(STRUCT_BWD), "mha_bwd"),
            Some(2)
        );
        assert_eq!(parameters_of("float f();", "f"), Some(0));
    }
}
