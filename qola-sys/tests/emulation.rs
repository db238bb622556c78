//! The built-in kernels' math, compiled for the CPU, against the float64 reference: every
//! feature of `qola_mha.h` alone, then random combinations, each forward (o, lse, dropout's
//! random bytes) and backward (dq, dk, dv, dbias). Mutation checks: breaking one feature in the
//! kernels' source makes these comparisons fail. This runs on any machine; `gpu.rs` runs the
//! same cases on a GPU when one is present.

mod common;

use std::path::Path;

use common::emulator::{INCLUDE, compile as emulator, run};
use common::{Case, check};

#[test]
fn every_feature_alone_matches_the_float64_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = emulator(tmp.path(), None);
    let mut failures = Vec::new();
    for case in Case::features() {
        if let Err(e) = check(&case, &mut |bwd, laid| run(&exe, bwd, laid)) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn random_combinations_match_the_float64_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = emulator(tmp.path(), None);
    let mut failures = Vec::new();
    for seed in 1..=60 {
        let case = Case::random(seed);
        if let Err(e) = check(&case, &mut |bwd, laid| run(&exe, bwd, laid)) {
            failures.push(format!("{e}\n  {case:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One deliberate bug per feature, made in a copy of the kernels' row functions: each must make
/// at least one feature case fail, or that feature is not really tested.
#[test]
fn breaking_any_feature_in_the_kernels_fails_the_comparison() {
    let impl_path = Path::new(INCLUDE).join("qola_mha_impl.hpp");
    let source = std::fs::read_to_string(&impl_path).unwrap();
    let mutations: [(&str, &str, &str); 16] = [
        (
            "left window",
            "j < i + off - p.window_left",
            "j < i + off - p.window_left - 1",
        ),
        (
            "right window",
            "j > i + off + p.window_right",
            "j > i + off + p.window_right + 1",
        ),
        (
            "bottom-right anchor",
            "QOLA_MHA_MASK_BOTTOM_RIGHT ? q.lk - q.lq : 0",
            "QOLA_MHA_MASK_BOTTOM_RIGHT ? 0 : 0",
        ),
        (
            "GQA head",
            "hk = h / (p.nhead_q / p.nhead_k);",
            "hk = h % p.nhead_k;",
        ),
        (
            "ALiBi distance",
            "return -slope * (float)(d < 0 ? -d : d);",
            "return -slope * (float)d;",
        ),
        (
            "ALiBi causal",
            "if (causal) return slope * (float)j;",
            "if (causal) return -slope * (float)j;",
        ),
        (
            "dropout lane",
            "const int lane = 32 * ((ii / 8) % 2) + jj;",
            "const int lane = jj;",
        ),
        (
            "dropout rescale",
            "out.rescale = (float)(1.0 / (double)undrop);",
            "out.rescale = 1.0f;",
        ),
        (
            "dropout seed on device",
            "out.seed = d.seed_offset_on_device ? *d.seed_ptr : d.seed;",
            "out.seed = d.seed;",
        ),
        (
            "dropout in the backward",
            "const float ds = prob * (keep * dp - delta);",
            "const float ds = prob * (dp - delta);",
        ),
        ("group start rows", "(start + row) * s.seq", "row * s.seq"),
        (
            "padded batch lengths",
            "lq = s.cu_seqlen_q ? s.cu_seqlen_q[b + 1] - s.cu_seqlen_q[b] : p.seqlen_q;",
            "lq = p.seqlen_q;",
        ),
        (
            "group seqlen pointers",
            "lq = s.seqlen_q ? s.seqlen_q[b] :",
            "lq = s.seqlen_q ? s.seqlen_q[b] + 1 :",
        ),
        (
            "soft cap gradient",
            "*dcap = 1.0f - t * t;",
            "*dcap = 1.0f;",
        ),
        (
            "bias column",
            "matrix_offset(p, a.bias_strides, b, q.q0, i, h) + j",
            "matrix_offset(p, a.bias_strides, b, q.q0, i, h)",
        ),
        (
            "dbias",
            "E::store((T*)a.dbias, db + j, g.ds);",
            "E::store((T*)a.dbias, db + j, g.kept);",
        ),
    ];
    let cases = Case::features();
    let mut survivors = Vec::new();
    for (what, from, to) in mutations {
        assert_eq!(
            source.matches(from).count(),
            1,
            "mutation {what}: `{from}` is not in the source once"
        );
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("qola_mha_impl.hpp"),
            source.replace(from, to),
        )
        .unwrap();
        let exe = emulator(tmp.path(), Some(tmp.path()));
        let caught = cases
            .iter()
            .any(|case| check(case, &mut |bwd, laid| run(&exe, bwd, laid)).is_err());
        if !caught {
            survivors.push(what);
        }
    }
    assert!(
        survivors.is_empty(),
        "mutations no case catches: {survivors:?}"
    );
}
