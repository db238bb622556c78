use super::*;

fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        })
        .collect()
}

fn problem(mask: Mask) -> Problem {
    Problem {
        nhead_q: 4,
        nhead_k: 2,
        hdim_q: 5,
        hdim_v: 3,
        mask,
        scale: 0.7,
        soft_cap: 0.0,
        dropout: None,
    }
}

fn sequence(p: &Problem, lq: usize, lk: usize, bias: bool, alibi: bool) -> Sequence {
    Sequence {
        index: 1,
        lq,
        lk,
        q: pseudo_random(lq * p.nhead_q * p.hdim_q, 1),
        k: pseudo_random(lk * p.nhead_k * p.hdim_q, 2),
        v: pseudo_random(lk * p.nhead_k * p.hdim_v, 3),
        bias: bias.then(|| pseudo_random(p.nhead_q * lq * lk, 4)),
        alibi_slopes: alibi.then(|| vec![0.5, 0.25, 0.125, 0.0625]),
    }
}

/// The input a gradient belongs to.
type Input = fn(&mut Sequence) -> &mut Vec<f64>;

/// A gradient check: what, the problem, (lq, lk), with a bias, with ALiBi slopes.
type GradientCase = (&'static str, Problem, (usize, usize), bool, bool);

/// Central differences of `sum(o * dout)` against the backward, for every input element of q,
/// k, v and the bias.
fn check_gradients(p: &Problem, x: &Sequence, what: &str) {
    let dout = pseudo_random(x.lq * p.nhead_q * p.hdim_v, 5);
    let loss = |x: &Sequence| -> f64 {
        let f = p.forward(x);
        f.o.iter().zip(&dout).map(|(a, b)| a * b).sum()
    };
    let f = p.forward(x);
    let g = p.backward(x, &f.o, &f.lse, &dout);
    let eps = 1e-6;
    let tensors: [(&str, &Vec<f64>, Input); 4] = [
        ("dq", &g.dq, |x| &mut x.q),
        ("dk", &g.dk, |x| &mut x.k),
        ("dv", &g.dv, |x| &mut x.v),
        ("dbias", &g.dbias, |x| x.bias.as_mut().unwrap()),
    ];
    for (name, grad, field) in tensors {
        if name == "dbias" && x.bias.is_none() {
            continue;
        }
        for (idx, &want) in grad.iter().enumerate() {
            let mut up = x.clone();
            field(&mut up)[idx] += eps;
            let mut down = x.clone();
            field(&mut down)[idx] -= eps;
            let numeric = (loss(&up) - loss(&down)) / (2.0 * eps);
            assert!(
                (numeric - want).abs() < 1e-6,
                "{what}: {name}[{idx}]: finite difference {numeric} vs backward {want}"
            );
        }
    }
}

#[test]
fn backward_matches_finite_differences_for_every_feature() {
    let window = |kind, left, right| Mask { kind, left, right };
    let cases: Vec<GradientCase> = vec![
        ("plain GQA", problem(Mask::NONE), (3, 4), false, false),
        (
            "causal top-left",
            problem(window(MaskKind::TopLeft, -1, 0)),
            (4, 3),
            false,
            false,
        ),
        (
            "causal bottom-right",
            problem(window(MaskKind::BottomRight, -1, 0)),
            (3, 5),
            false,
            false,
        ),
        (
            "window top-left (1, 1)",
            problem(window(MaskKind::TopLeft, 1, 1)),
            (5, 5),
            false,
            false,
        ),
        (
            "window bottom-right (2, 0) with bias",
            problem(window(MaskKind::BottomRight, 2, 0)),
            (4, 6),
            true,
            false,
        ),
        ("elementwise bias", problem(Mask::NONE), (3, 4), true, false),
        ("ALiBi, no mask", problem(Mask::NONE), (4, 3), false, true),
        (
            "ALiBi, causal",
            problem(window(MaskKind::TopLeft, -1, 0)),
            (4, 4),
            false,
            true,
        ),
        (
            "ALiBi, window bottom-right",
            problem(window(MaskKind::BottomRight, 1, 1)),
            (3, 5),
            false,
            true,
        ),
        (
            "ALiBi, window top-left",
            problem(window(MaskKind::TopLeft, 2, 1)),
            (5, 3),
            false,
            true,
        ),
        (
            "soft cap",
            Problem {
                soft_cap: 0.3,
                ..problem(Mask::NONE)
            },
            (3, 4),
            true,
            false,
        ),
        (
            "dropout",
            Problem {
                dropout: Some(Dropout {
                    p_drop: 0.3,
                    seed: 7,
                    offset: 9,
                }),
                ..problem(window(MaskKind::BottomRight, -1, 0))
            },
            (4, 5),
            true,
            false,
        ),
    ];
    for (what, p, (lq, lk), bias, alibi) in cases {
        check_gradients(&p, &sequence(&p, lq, lk, bias, alibi), what);
    }
}

/// CK's host reference (`reference_batched_dropout_randval`) fills the random bytes of one
/// head tile by tile: each of 64 lanes draws 16 bytes and spreads them over a 32×32 tile. Done
/// here the same way, it gives the bytes [`Dropout::byte`] computes element by element.
#[test]
fn dropout_bytes_follow_cks_tile_layout() {
    let d = Dropout {
        p_drop: 0.2,
        seed: 0x1234_5678_9abc_def0,
        offset: 77,
    };
    let (nhead, b, lq, lk) = (3, 2, 70, 45);
    for h in 0..nhead {
        let mut tiles = vec![vec![None; lk]; lq];
        for row in 0..lq.div_ceil(32) {
            for col in 0..lk.div_ceil(32) {
                for lane in 0..64 {
                    let counter = d.offset + ((b * nhead + h) * 64 + lane) as u64;
                    let words = philox(d.seed, counter, row as u64 | (col as u64) << 32);
                    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                    for (r, &byte) in bytes.iter().enumerate() {
                        let i = (16 * (r / 8) % 32) + 8 * (lane / 32) + (r % 8);
                        let j = lane % 32;
                        let (m, n) = (row * 32 + i, col * 32 + j);
                        if m < lq && n < lk {
                            assert!(tiles[m][n].is_none(), "({m}, {n}) drawn twice");
                            tiles[m][n] = Some(byte);
                        }
                    }
                }
            }
        }
        for (i, row) in tiles.iter().enumerate() {
            for (j, byte) in row.iter().enumerate() {
                assert_eq!(
                    *byte,
                    Some(d.byte(nhead, b, h, i, j)),
                    "head {h} ({i}, {j})"
                );
            }
        }
    }
    // About 1 - p_drop of the elements are kept.
    let kept = (0..lq)
        .flat_map(|i| (0..lk).map(move |j| (i, j)))
        .filter(|&(i, j)| d.factor(nhead, b, 0, i, j) > 0.0)
        .count() as f64
        / (lq * lk) as f64;
    assert!((kept - 0.8).abs() < 0.03, "kept {kept}");
    assert_eq!(d.threshold(), 204);
}

#[test]
fn a_row_that_sees_no_key_is_zero_with_negative_infinite_lse() {
    let p = Problem {
        nhead_q: 1,
        nhead_k: 1,
        hdim_q: 2,
        hdim_v: 2,
        mask: Mask {
            kind: MaskKind::BottomRight,
            left: -1,
            right: 0,
        },
        scale: 1.0,
        soft_cap: 0.0,
        dropout: None,
    };
    let x = Sequence {
        lq: 3,
        lk: 1,
        q: vec![1.0; 6],
        k: vec![1.0; 2],
        v: vec![2.0; 2],
        ..Sequence::default()
    };
    let f = p.forward(&x);
    assert_eq!(&f.o[..4], &[0.0; 4]);
    assert_eq!(f.lse[0], f64::NEG_INFINITY);
    assert_eq!(&f.o[4..], &[2.0, 2.0]);
}

#[test]
fn sliding_windows_see_the_documented_keys() {
    let m = Mask {
        kind: MaskKind::BottomRight,
        left: 1,
        right: 1,
    };
    // lq 2, lk 5: offset 3; query 0 sees keys 2..=4, query 1 sees 3..=4 (5 is past the end).
    let seen = |i| {
        (0..5)
            .filter(|&j| m.visible(2, 5, i, j))
            .collect::<Vec<_>>()
    };
    assert_eq!(seen(0), [2, 3, 4]);
    assert_eq!(seen(1), [3, 4]);
    let t = Mask {
        kind: MaskKind::TopLeft,
        left: 0,
        right: 2,
    };
    assert_eq!(
        (0..5)
            .filter(|&j| t.visible(2, 5, 1, j))
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
}
