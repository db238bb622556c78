//! A float64 CPU reference of `qola_mha.h`'s model, one sequence at a time, every feature: GQA,
//! separate head dims, masks and sliding windows, elementwise bias (and its gradient), ALiBi,
//! logits soft-cap, dropout with CK's Philox scheme, LSE. Tensors are contiguous: q `[lq,
//! nhead_q, hdim_q]`, k `[lk, nhead_k, hdim_q]`, v `[lk, nhead_k, hdim_v]`, o and dout `[lq,
//! nhead_q, hdim_v]`, bias and dbias `[nhead_q, lq, lk]`, lse `[nhead_q, lq]`.

/// Where the mask's windows are anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskKind {
    /// No mask: every key is seen.
    None,
    /// Windows aligned to the top left (`QOLA_MHA_MASK_TOP_LEFT`).
    TopLeft,
    /// Windows aligned to the bottom right (`QOLA_MHA_MASK_BOTTOM_RIGHT`).
    BottomRight,
}

/// A mask: its kind and FlashAttention's left/right windows (-1 = unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mask {
    /// The anchor.
    pub kind: MaskKind,
    /// Keys at most this far left of the diagonal are seen (-1: all).
    pub left: i64,
    /// Keys at most this far right of the diagonal are seen (-1: all).
    pub right: i64,
}

impl Mask {
    /// No mask.
    pub const NONE: Mask = Mask {
        kind: MaskKind::None,
        left: -1,
        right: -1,
    };

    /// Whether query `i` sees key `j` in a sequence of `lq` queries and `lk` keys.
    pub fn visible(&self, lq: usize, lk: usize, i: usize, j: usize) -> bool {
        let offset = match self.kind {
            MaskKind::None => return true,
            MaskKind::TopLeft => 0,
            MaskKind::BottomRight => lk as i64 - lq as i64,
        };
        let (i, j) = (i as i64, j as i64);
        (self.left < 0 || j >= i + offset - self.left)
            && (self.right < 0 || j <= i + offset + self.right)
    }

    fn causal(&self) -> bool {
        self.kind != MaskKind::None && self.left < 0 && self.right == 0
    }
}

/// Dropout: probability and CK's Philox seed and offset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dropout {
    /// Probability of dropping, `[0, 1)`.
    pub p_drop: f32,
    /// Philox seed.
    pub seed: u64,
    /// Philox offset.
    pub offset: u64,
}

/// CK's Philox-4x32-7: four 32-bit words for a key (seed), a counter and a subsequence.
pub fn philox(seed: u64, counter: u64, subsequence: u64) -> [u32; 4] {
    let mut c = [
        counter as u32,
        (counter >> 32) as u32,
        subsequence as u32,
        (subsequence >> 32) as u32,
    ];
    let mut key = [seed as u32, (seed >> 32) as u32];
    for round in 0..7 {
        if round > 0 {
            key[0] = key[0].wrapping_add(0x9E37_79B9);
            key[1] = key[1].wrapping_add(0xBB67_AE85);
        }
        let m0 = 0xD251_1F53u64 * c[0] as u64;
        let m1 = 0xCD9E_8D57u64 * c[2] as u64;
        c = [
            (m1 >> 32) as u32 ^ c[1] ^ key[0],
            m1 as u32,
            (m0 >> 32) as u32 ^ c[3] ^ key[1],
            m0 as u32,
        ];
    }
    c
}

impl Dropout {
    /// The random byte of element `(i, j)` of sequence `b`, query head `h` of `nhead_q`: the
    /// inverse of CK's 32×32 tile layout (`qola_mha.h`, "Dropout").
    pub fn byte(&self, nhead_q: usize, b: usize, h: usize, i: usize, j: usize) -> u8 {
        let (ii, jj) = (i % 32, j % 32);
        let lane = 32 * ((ii / 8) % 2) + jj;
        let r = 8 * (ii / 16) + ii % 8;
        let counter = self
            .offset
            .wrapping_add(((b * nhead_q + h) * 64 + lane) as u64);
        let words = philox(
            self.seed,
            counter,
            (i / 32) as u64 | ((j / 32) as u64) << 32,
        );
        (words[r / 4] >> (8 * (r % 4))) as u8
    }

    /// Bytes at or below this are kept: `floor((1 - p_drop) * 255)`, as CK computes it.
    pub fn threshold(&self) -> u8 {
        let undrop = (1.0f64 - self.p_drop as f64) as f32;
        (undrop * 255.0).floor() as u8
    }

    /// The factor a kept probability is multiplied by: `1 / (1 - p_drop)`.
    pub fn rescale(&self) -> f64 {
        let undrop = (1.0f64 - self.p_drop as f64) as f32;
        (1.0 / undrop as f64) as f32 as f64
    }

    /// 0 (dropped) or [`Dropout::rescale`] (kept) for an element.
    pub fn factor(&self, nhead_q: usize, b: usize, h: usize, i: usize, j: usize) -> f64 {
        if self.byte(nhead_q, b, h, i, j) <= self.threshold() {
            self.rescale()
        } else {
            0.0
        }
    }
}

/// What every sequence of a problem shares.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Query heads (a multiple of `nhead_k`).
    pub nhead_q: usize,
    /// Key/value heads.
    pub nhead_k: usize,
    /// Head dim of q and k.
    pub hdim_q: usize,
    /// Head dim of v and o.
    pub hdim_v: usize,
    /// The mask.
    pub mask: Mask,
    /// Softmax scale.
    pub scale: f64,
    /// Logits soft cap (0 = none).
    pub soft_cap: f64,
    /// Dropout, if any.
    pub dropout: Option<Dropout>,
}

/// One sequence's inputs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sequence {
    /// Its index in the batch (dropout's Philox counter depends on it).
    pub index: usize,
    /// Logical query length.
    pub lq: usize,
    /// Logical key length.
    pub lk: usize,
    /// `[lq, nhead_q, hdim_q]`.
    pub q: Vec<f64>,
    /// `[lk, nhead_k, hdim_q]`.
    pub k: Vec<f64>,
    /// `[lk, nhead_k, hdim_v]`.
    pub v: Vec<f64>,
    /// Elementwise bias `[nhead_q, lq, lk]`, if any.
    pub bias: Option<Vec<f64>>,
    /// ALiBi slopes `[nhead_q]`, if any.
    pub alibi_slopes: Option<Vec<f64>>,
}

/// The forward's results for one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    /// `[lq, nhead_q, hdim_v]`.
    pub o: Vec<f64>,
    /// `[nhead_q, lq]`; `-inf` for a row that sees no key.
    pub lse: Vec<f64>,
}

/// The backward's results for one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Backward {
    /// `[lq, nhead_q, hdim_q]`.
    pub dq: Vec<f64>,
    /// `[lk, nhead_k, hdim_q]`.
    pub dk: Vec<f64>,
    /// `[lk, nhead_k, hdim_v]`.
    pub dv: Vec<f64>,
    /// `[nhead_q, lq, lk]`: the gradient of the scores (zero where masked).
    pub dbias: Vec<f64>,
}

/// The ALiBi term of CK's `AlibiMode` for query `i`, key `j`.
fn alibi(mask: &Mask, slope: f64, lq: usize, lk: usize, i: usize, j: usize) -> f64 {
    if mask.causal() {
        return slope * j as f64;
    }
    let (up, down) = match mask.kind {
        MaskKind::TopLeft => (0, 0),
        _ => (lq.saturating_sub(lk), lk.saturating_sub(lq)),
    };
    -slope * ((i + down) as f64 - (j + up) as f64).abs()
}

/// A score and the soft cap's derivative.
struct Score {
    s: f64,
    dcap: f64,
}

impl Problem {
    fn kv_head(&self, h: usize) -> usize {
        h / (self.nhead_q / self.nhead_k)
    }

    fn score(&self, x: &Sequence, h: usize, i: usize, j: usize) -> Score {
        let hk = self.kv_head(h);
        let d = self.hdim_q;
        let qo = (i * self.nhead_q + h) * d;
        let ko = (j * self.nhead_k + hk) * d;
        let mut s = self.scale * (0..d).map(|c| x.q[qo + c] * x.k[ko + c]).sum::<f64>();
        let mut dcap = 1.0;
        if self.soft_cap > 0.0 {
            let t = (s / self.soft_cap).tanh();
            s = self.soft_cap * t;
            dcap = 1.0 - t * t;
        }
        if let Some(bias) = &x.bias {
            s += bias[(h * x.lq + i) * x.lk + j];
        }
        if let Some(slopes) = &x.alibi_slopes {
            s += alibi(&self.mask, slopes[h], x.lq, x.lk, i, j);
        }
        Score { s, dcap }
    }

    fn keep(&self, x: &Sequence, h: usize, i: usize, j: usize) -> f64 {
        self.dropout
            .map_or(1.0, |d| d.factor(self.nhead_q, x.index, h, i, j))
    }

    /// The visible keys of query `i`.
    fn keys(&self, x: &Sequence, i: usize) -> impl Iterator<Item = usize> + '_ {
        let (lq, lk, mask) = (x.lq, x.lk, self.mask);
        (0..lk).filter(move |&j| mask.visible(lq, lk, i, j))
    }

    /// Forward of one sequence.
    pub fn forward(&self, x: &Sequence) -> Forward {
        let dv = self.hdim_v;
        let mut o = vec![0.0; x.lq * self.nhead_q * dv];
        let mut lse = vec![f64::NEG_INFINITY; self.nhead_q * x.lq];
        for h in 0..self.nhead_q {
            let hk = self.kv_head(h);
            for i in 0..x.lq {
                let scores: Vec<(usize, f64)> = self
                    .keys(x, i)
                    .map(|j| (j, self.score(x, h, i, j).s))
                    .filter(|&(_, s)| s > f64::NEG_INFINITY)
                    .collect();
                if scores.is_empty() {
                    continue;
                }
                let m = scores.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|&(_, s)| (s - m).exp()).sum();
                let l = m + sum.ln();
                lse[h * x.lq + i] = l;
                let oo = (i * self.nhead_q + h) * dv;
                for &(j, s) in &scores {
                    let p = (s - l).exp() * self.keep(x, h, i, j);
                    let vo = (j * self.nhead_k + hk) * dv;
                    for c in 0..dv {
                        o[oo + c] += p * x.v[vo + c];
                    }
                }
            }
        }
        Forward { o, lse }
    }

    /// Backward of one sequence: the gradients of `sum(o * dout)`, given the forward's `o` and
    /// `lse` (as a kernel stored them, or [`Problem::forward`]'s).
    pub fn backward(&self, x: &Sequence, o: &[f64], lse: &[f64], dout: &[f64]) -> Backward {
        let (dq_, dv_) = (self.hdim_q, self.hdim_v);
        let mut dq = vec![0.0; x.lq * self.nhead_q * dq_];
        let mut dk = vec![0.0; x.lk * self.nhead_k * dq_];
        let mut dv = vec![0.0; x.lk * self.nhead_k * dv_];
        let mut dbias = vec![0.0; self.nhead_q * x.lq * x.lk];
        for h in 0..self.nhead_q {
            let hk = self.kv_head(h);
            for i in 0..x.lq {
                let l = lse[h * x.lq + i];
                if l == f64::NEG_INFINITY {
                    continue;
                }
                let go = (i * self.nhead_q + h) * dv_;
                let qo = (i * self.nhead_q + h) * dq_;
                let delta: f64 = (0..dv_).map(|c| dout[go + c] * o[go + c]).sum();
                for j in self.keys(x, i).collect::<Vec<_>>() {
                    let sc = self.score(x, h, i, j);
                    if sc.s == f64::NEG_INFINITY {
                        continue;
                    }
                    let p = (sc.s - l).exp();
                    let keep = self.keep(x, h, i, j);
                    let vo = (j * self.nhead_k + hk) * dv_;
                    let ko = (j * self.nhead_k + hk) * dq_;
                    let dp: f64 = (0..dv_).map(|c| dout[go + c] * x.v[vo + c]).sum();
                    let ds = p * (keep * dp - delta);
                    dbias[(h * x.lq + i) * x.lk + j] = ds;
                    let dx = ds * sc.dcap * self.scale;
                    for c in 0..dv_ {
                        dv[vo + c] += p * keep * dout[go + c];
                    }
                    for c in 0..dq_ {
                        dq[qo + c] += dx * x.k[ko + c];
                        dk[ko + c] += dx * x.q[qo + c];
                    }
                }
            }
        }
        Backward { dq, dk, dv, dbias }
    }
}

#[cfg(test)]
mod tests;
