//! A float64 CPU reference of the kernels, on contiguous `[batch, seqlen, nhead, head_dim]`
//! tensors, with the same causal alignment (query `i` sees keys `j <= i + seqlen_k - seqlen_q`).

/// The sizes of a problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Batch size.
    pub batch: usize,
    /// Number of heads.
    pub nhead: usize,
    /// Query sequence length.
    pub seqlen_q: usize,
    /// Key/value sequence length.
    pub seqlen_k: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Causal mask.
    pub causal: bool,
    /// Softmax scale.
    pub scale: f64,
}

impl Shape {
    /// Elements of a query-shaped tensor.
    pub fn q_len(&self) -> usize {
        self.batch * self.seqlen_q * self.nhead * self.head_dim
    }

    /// Elements of a key-shaped tensor.
    pub fn k_len(&self) -> usize {
        self.batch * self.seqlen_k * self.nhead * self.head_dim
    }

    /// Elements of the log-sum-exp, `[batch, nhead, seqlen_q]`.
    pub fn lse_len(&self) -> usize {
        self.batch * self.nhead * self.seqlen_q
    }

    fn at(&self, seqlen: usize, b: usize, pos: usize, h: usize) -> usize {
        ((b * seqlen + pos) * self.nhead + h) * self.head_dim
    }

    /// Whether query `i` sees key `j`.
    pub fn visible(&self, i: usize, j: usize) -> bool {
        !self.causal || j + self.seqlen_q <= i + self.seqlen_k
    }

    fn dot(&self, x: &[f64], xo: usize, y: &[f64], yo: usize) -> f64 {
        (0..self.head_dim).map(|c| x[xo + c] * y[yo + c]).sum()
    }

    fn lse_at(&self, b: usize, h: usize, i: usize) -> usize {
        (b * self.nhead + h) * self.seqlen_q + i
    }
}

/// Forward: returns the output (query-shaped) and the log-sum-exp of each query row
/// (`-inf` for a row that sees no key; its output is zero).
pub fn forward(s: &Shape, q: &[f64], k: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut o = vec![0.0; s.q_len()];
    let mut lse = vec![f64::NEG_INFINITY; s.lse_len()];
    for b in 0..s.batch {
        for h in 0..s.nhead {
            for i in 0..s.seqlen_q {
                let qo = s.at(s.seqlen_q, b, i, h);
                let scores: Vec<(usize, f64)> = (0..s.seqlen_k)
                    .filter(|&j| s.visible(i, j))
                    .map(|j| (j, s.scale * s.dot(q, qo, k, s.at(s.seqlen_k, b, j, h))))
                    .collect();
                if scores.is_empty() {
                    continue;
                }
                let m = scores
                    .iter()
                    .map(|&(_, x)| x)
                    .fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|&(_, x)| (x - m).exp()).sum();
                lse[s.lse_at(b, h, i)] = m + sum.ln();
                for &(j, x) in &scores {
                    let p = (x - m).exp() / sum;
                    let vo = s.at(s.seqlen_k, b, j, h);
                    for c in 0..s.head_dim {
                        o[qo + c] += p * v[vo + c];
                    }
                }
            }
        }
    }
    (o, lse)
}

/// Backward: returns `(dq, dk, dv)` for output gradient `dout`, from the forward's `o` and `lse`.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    s: &Shape,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    o: &[f64],
    dout: &[f64],
    lse: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut dq = vec![0.0; s.q_len()];
    let mut dk = vec![0.0; s.k_len()];
    let mut dv = vec![0.0; s.k_len()];
    for b in 0..s.batch {
        for h in 0..s.nhead {
            for i in 0..s.seqlen_q {
                let l = lse[s.lse_at(b, h, i)];
                if l == f64::NEG_INFINITY {
                    continue;
                }
                let qo = s.at(s.seqlen_q, b, i, h);
                let delta = s.dot(dout, qo, o, qo);
                for j in (0..s.seqlen_k).filter(|&j| s.visible(i, j)) {
                    let ko = s.at(s.seqlen_k, b, j, h);
                    let p = (s.scale * s.dot(q, qo, k, ko) - l).exp();
                    let dp = s.dot(dout, qo, v, ko);
                    let ds = p * (dp - delta);
                    for c in 0..s.head_dim {
                        dv[ko + c] += p * dout[qo + c];
                        dq[qo + c] += s.scale * ds * k[ko + c];
                        dk[ko + c] += s.scale * ds * q[qo + c];
                    }
                }
            }
        }
    }
    (dq, dk, dv)
}

#[cfg(test)]
mod tests {
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

    /// The backward agrees with finite differences of `sum(o * dout)`, masked or not.
    #[test]
    fn backward_matches_finite_differences_of_the_forward() {
        for causal in [false, true] {
            let s = Shape {
                batch: 2,
                nhead: 2,
                seqlen_q: 3,
                seqlen_k: 4,
                head_dim: 5,
                causal,
                scale: 0.7,
            };
            let (q, k, v) = (
                pseudo_random(s.q_len(), 1),
                pseudo_random(s.k_len(), 2),
                pseudo_random(s.k_len(), 3),
            );
            let dout = pseudo_random(s.q_len(), 4);
            let loss = |q: &[f64], k: &[f64], v: &[f64]| -> f64 {
                let (o, _) = forward(&s, q, k, v);
                o.iter().zip(&dout).map(|(a, b)| a * b).sum()
            };
            let (o, lse) = forward(&s, &q, &k, &v);
            let (dq, dk, dv) = backward(&s, &q, &k, &v, &o, &dout, &lse);
            let eps = 1e-6;
            for (which, grad) in [(0, &dq), (1, &dk), (2, &dv)] {
                for idx in (0..grad.len()).step_by(7) {
                    let mut ins = [q.clone(), k.clone(), v.clone()];
                    ins[which][idx] += eps;
                    let up = loss(&ins[0], &ins[1], &ins[2]);
                    ins[which][idx] -= 2.0 * eps;
                    let down = loss(&ins[0], &ins[1], &ins[2]);
                    let numeric = (up - down) / (2.0 * eps);
                    assert!(
                        (numeric - grad[idx]).abs() < 1e-6,
                        "causal={causal} tensor {which} index {idx}: {numeric} vs {}",
                        grad[idx]
                    );
                }
            }
        }
    }

    #[test]
    fn a_causal_row_with_no_visible_key_is_zero_with_negative_infinite_lse() {
        let s = Shape {
            batch: 1,
            nhead: 1,
            seqlen_q: 3,
            seqlen_k: 1,
            head_dim: 2,
            causal: true,
            scale: 1.0,
        };
        let (o, lse) = forward(&s, &[1.0; 6], &[1.0; 2], &[2.0; 2]);
        assert_eq!(&o[..4], &[0.0; 4]);
        assert_eq!(lse[0], f64::NEG_INFINITY);
        assert_eq!(&o[4..], &[2.0, 2.0]);
    }
}
