//! `[[mha_fwd_variants]]` and `[[mha_bwd_variants]]`: the attention variants a consumer needs,
//! as QoLA declares them. Each option is a value, a list of values, or absent (every value);
//! the variants are the cartesian product.

use std::collections::BTreeMap;

use toml::de::DeTable;

use crate::manifest::reader::Reader;

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

/// Reads one declaration of the array of tables `key` (`mha_fwd_variants`, ...).
pub(super) fn read(
    r: &mut Reader,
    direction: Direction,
    key: &str,
    at: usize,
    t: &DeTable,
) -> Option<Variant> {
    let section = format!("[[{key}]]");
    let flags = options(direction);
    let known: Vec<&str> = [&["dtype", "receipt"][..], flags].concat();
    r.only(&section, t, &known);
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

/// The CK `--filter`s the variants of a manifest give: for CK's `-d fwd` and `-d bwd`
/// generators, each a union (`|`, qola's patch 0006) of one pattern per distinct variant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VariantFilters {
    /// The forward filter (`None`: no `[[mha_fwd_variants]]`, every instance).
    pub fwd: Option<String>,
    /// The backward filter, in CK's three-part `dot_do_o@convert_dq@dq_dk_dv` form.
    pub bwd: Option<String>,
}

/// Every combination of a variant's options, as (dtype, option → value).
fn combinations(direction: Direction, v: &Variant) -> Vec<(String, BTreeMap<&'static str, bool>)> {
    let mut out: Vec<(String, BTreeMap<&'static str, bool>)> = v
        .dtypes
        .iter()
        .map(|d| (d.clone(), BTreeMap::new()))
        .collect();
    for flag in options(direction) {
        let values = v.flags.get(*flag).cloned().unwrap_or(vec![false, true]);
        out = out
            .into_iter()
            .flat_map(|(dtype, set)| {
                values.iter().map(move |value| {
                    let mut set = set.clone();
                    set.insert(*flag, *value);
                    (dtype.clone(), set)
                })
            })
            .collect();
    }
    out
}

fn token(on: bool, yes: &str, no: &str) -> String {
    if on { yes.to_string() } else { no.to_string() }
}

/// CK's bias token: elementwise bias wins over ALiBi (the kernels take one bias kind).
fn bias_token(o: &BTreeMap<&str, bool>) -> &'static str {
    if o["has_bias"] {
        "bias"
    } else if o["has_alibi"] {
        "alibi"
    } else {
        "nbias"
    }
}

/// The forward instance pattern of one combination, over CK's names at qola's pin
/// (`fmha_fwd_d128_bf16_batch_<tile>_<pipeline><pad>_<logits>_<bias>_<mask>_<lse>_<dropout>_<skip>_...`).
fn fwd_pattern(dtype: &str, o: &BTreeMap<&str, bool>) -> String {
    let bias = bias_token(o);
    format!(
        "fmha_fwd_*_{dtype}_*logits_{bias}_{}_{}_{}_{}_*",
        token(o["has_mask"], "mask", "nmask"),
        token(o["has_lse"], "lse", "nlse"),
        token(o["has_dropout"], "dropout", "ndropout"),
        token(o["has_skip"], "skip", "nskip"),
    )
}

/// The backward's three patterns of one combination (`fmha_bwd_dot_do_o_d128_bf16_...`,
/// `fmha_bwd_convert_dq_..._<deterministic>`, `fmha_bwd_d128_bf16_..._<bias>_<dbias>_<mask>_<dropout>_<deterministic>`).
fn bwd_patterns(dtype: &str, o: &BTreeMap<&str, bool>) -> [String; 3] {
    let bias = bias_token(o);
    let deterministic = token(o["deterministic"], "deterministic", "ndeterministic");
    [
        format!("*_{dtype}_*"),
        format!("*_{dtype}_*_{deterministic}*"),
        format!(
            "*_{dtype}_*_{bias}_{}_{}_{}_{deterministic}*",
            token(o["has_dbias"], "dbias", "ndbias"),
            token(o["has_mask"], "mask", "nmask"),
            token(o["has_dropout"], "dropout*", "ndropout"),
        ),
    ]
}

/// A union of patterns, each once, in first-seen order.
fn union(patterns: impl IntoIterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for p in patterns {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen.join("|")
}

/// The filters of a manifest's variants. `Err` names a variant this AITER cannot serve.
pub fn filters(fwd: &[Variant], bwd: &[Variant]) -> Result<VariantFilters, String> {
    for v in fwd {
        if v.flags
            .get("has_sink")
            .is_some_and(|values| values.contains(&true))
        {
            return Err(format!(
                "[[mha_fwd_variants]] on line {}: has_sink = true, but CK's forward at qola's pinned AITER has no sink kernels; set has_sink = false",
                v.line
            ));
        }
    }
    let fwd_filter = (!fwd.is_empty()).then(|| {
        union(fwd.iter().flat_map(|v| {
            combinations(Direction::Forward, v)
                .into_iter()
                .filter(|(_, o)| !o["has_sink"])
                .map(|(dtype, o)| fwd_pattern(&dtype, &o))
        }))
    });
    let bwd_filter = (!bwd.is_empty()).then(|| {
        let parts: Vec<[String; 3]> = bwd
            .iter()
            .flat_map(|v| {
                combinations(Direction::Backward, v)
                    .into_iter()
                    .map(|(dtype, o)| bwd_patterns(&dtype, &o))
            })
            .collect();
        (0..3)
            .map(|i| union(parts.iter().map(|p| p[i].clone())))
            .collect::<Vec<_>>()
            .join("@")
    });
    Ok(VariantFilters {
        fwd: fwd_filter,
        bwd: bwd_filter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(dtypes: &[&str], flags: &[(&str, &[bool])]) -> Variant {
        Variant {
            dtypes: dtypes.iter().map(|s| s.to_string()).collect(),
            flags: flags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect(),
            receipt: None,
            line: 1,
        }
    }

    #[test]
    fn a_fully_given_forward_variant_is_one_pattern() {
        let v = variant(
            &["bf16"],
            &[
                ("has_bias", &[false]),
                ("has_alibi", &[false]),
                ("has_mask", &[true]),
                ("has_lse", &[true]),
                ("has_dropout", &[false]),
                ("has_skip", &[false]),
                ("has_sink", &[false]),
            ],
        );
        let f = filters(&[v], &[]).unwrap();
        assert_eq!(
            f.fwd.as_deref(),
            Some("fmha_fwd_*_bf16_*logits_nbias_mask_lse_ndropout_nskip_*")
        );
        assert_eq!(f.bwd, None);
    }

    #[test]
    fn omitted_options_take_every_value_and_bias_wins_over_alibi() {
        // TE's forward: two dtypes, LSE always, no skip, no sink; bias, ALiBi, mask, dropout
        // free: 2 x (no bias, alibi, bias) x 2 x 2 = 24 distinct patterns (32 combinations).
        let v = variant(
            &["bf16", "fp16"],
            &[
                ("has_lse", &[true]),
                ("has_skip", &[false]),
                ("has_sink", &[false]),
            ],
        );
        let fwd = filters(&[v], &[]).unwrap().fwd.unwrap();
        assert_eq!(fwd.split('|').count(), 24, "{fwd}");
        assert!(fwd.contains("_bias_"));
        assert!(fwd.contains("_alibi_"));
        assert!(!fwd.contains("_nlse_"));
    }

    #[test]
    fn the_backward_filter_has_ck_three_parts() {
        let v = variant(
            &["bf16"],
            &[("deterministic", &[false]), ("has_dropout", &[false])],
        );
        let bwd = filters(&[], &[v]).unwrap().bwd.unwrap();
        let parts: Vec<&str> = bwd.split('@').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], "*_bf16_*");
        assert_eq!(parts[1], "*_bf16_*_ndeterministic*");
        assert!(
            parts[2].contains("*_bf16_*_alibi_ndbias_mask_ndropout_ndeterministic*"),
            "{bwd}"
        );
    }

    #[test]
    fn sink_kernels_are_an_error_at_this_pin() {
        let v = variant(&["bf16"], &[("has_sink", &[true])]);
        assert!(filters(&[v], &[]).unwrap_err().contains("has_sink"));
    }
}
