//! `[[mha_fwd_variants]]` and `[[mha_bwd_variants]]`: the attention variants a consumer needs,
//! as QoLA declares them. Each option is a value, a list of values, or absent (every value);
//! the variants are the cartesian product.

use std::collections::BTreeMap;

use toml::de::DeTable;

use super::read::Reader;

/// Which API a variant section describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `[[mha_fwd_variants]]`.
    Forward,
    /// `[[mha_bwd_variants]]`.
    Backward,
}

/// The data types CK's attention generator knows for these APIs.
pub const DTYPES: &[&str] = &["bf16", "fp16"];

/// The boolean options of each direction, as QoLA names them.
pub fn options(direction: Direction) -> &'static [&'static str] {
    match direction {
        Direction::Forward => &[
            "has_bias",
            "has_alibi",
            "has_mask",
            "has_lse",
            "has_dropout",
            "has_skip",
            "has_sink",
        ],
        Direction::Backward => &[
            "has_bias",
            "has_alibi",
            "has_dbias",
            "has_mask",
            "has_dropout",
            "deterministic",
        ],
    }
}

/// One variant declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Variant {
    /// The data types (absent: all of [`DTYPES`]).
    pub dtypes: Vec<String>,
    /// The boolean options given, each with its values (absent: both).
    pub flags: BTreeMap<String, Vec<bool>>,
    /// The CK receipt the declaration asks for.
    pub receipt: Option<i64>,
    /// The manifest line of the declaration.
    pub line: usize,
}

pub(super) fn read(
    r: &mut Reader,
    direction: Direction,
    at: usize,
    t: &DeTable,
) -> Option<Variant> {
    let section = match direction {
        Direction::Forward => "[[mha_fwd_variants]]",
        Direction::Backward => "[[mha_bwd_variants]]",
    };
    let flags = options(direction);
    let known: Vec<&str> = [&["dtype", "receipt"][..], flags].concat();
    r.only(section, t, &known);
    let key = |k: &str| format!("{section} {k}");
    let mut variant = Variant {
        dtypes: DTYPES.iter().map(|s| s.to_string()).collect(),
        flags: BTreeMap::new(),
        receipt: None,
        line: r.line(at),
    };
    if let Some(v) = t.get("dtype") {
        variant.dtypes = r.strings(v, key("dtype"))?;
        for dtype in &variant.dtypes {
            if !DTYPES.contains(&dtype.as_str()) {
                r.problem(
                    v.span().start,
                    key("dtype"),
                    format!(
                        "{dtype:?} is not a data type of these kernels (known: {})",
                        DTYPES.join(", ")
                    ),
                );
            }
        }
    }
    if let Some(v) = t.get("receipt") {
        variant.receipt = r.integer(v, key("receipt"));
    }
    for flag in flags {
        let Some(v) = t.get(*flag) else { continue };
        let values = match v.get_ref() {
            toml::de::DeValue::Array(items) => items
                .iter()
                .map(|item| r.bool(item, key(flag)))
                .collect::<Option<Vec<bool>>>(),
            _ => r.bool(v, key(flag)).map(|b| vec![b]),
        };
        if let Some(values) = values {
            variant.flags.insert(flag.to_string(), values);
        }
    }
    Some(variant)
}
