//! Cases and comparisons shared by the numerics tests: a case is a full `qola_mha.h` problem
//! (every feature can be switched on), its inputs laid out in one block of memory (the "blob")
//! whose offsets stand in for pointers, and the float64 reference's answer for it. The emulator
//! (CPU) and the GPU test run the same cases and are compared the same way.

#![allow(dead_code)] // each test binary uses a part

pub mod emulator;

use qola_sys::reference::{self, Dropout, Mask, MaskKind};
use qola_sys::*;

/// A small xorshift generator: cases are reproducible from their seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// In `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// Uniform in [-1, 1).
    pub fn float(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as i64 - 1) as usize]
    }
}

/// Which bias a case has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bias {
    None,
    Elementwise,
    /// ALiBi; `true`: one set of slopes per sequence.
    Alibi(bool),
}

/// How sequence lengths are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lengths {
    /// Batch mode, every sequence full.
    Batch,
    /// Batch mode, `cu_seqlen_q/k` shorten the sequences.
    BatchPadded,
    /// Group mode, packed sequences.
    Group,
    /// Group mode with padding rows, logical lengths from `seqlen_q/k`.
    GroupPadded,
    /// Group mode with padding rows, logical lengths from `cu_seqlen_q/k`.
    GroupCumulative,
}

/// A problem to run: every `qola_mha.h` feature is a field.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub dtype: i32,
    pub lengths: Lengths,
    /// Per sequence: (logical q, logical k, physical q, physical k).
    pub seqs: Vec<(usize, usize, usize, usize)>,
    pub nhead_q: usize,
    pub nhead_k: usize,
    pub hdim_q: usize,
    pub hdim_v: usize,
    pub mask: Mask,
    pub bias: Bias,
    pub soft_cap: f32,
    pub dropout: Option<Dropout>,
    pub dropout_on_device: bool,
    pub randval: bool,
    pub lse: bool,
    /// k and v stored `[batch, nhead, seqlen, hdim]` (other strides than q).
    pub kv_head_major: bool,
    pub seed: u64,
}

impl Case {
    /// A plain fp32 problem with two sequences; features are switched on by the callers.
    pub fn plain(name: &str) -> Case {
        Case {
            name: name.to_string(),
            dtype: QOLA_DTYPE_FP32,
            lengths: Lengths::Batch,
            seqs: vec![(5, 7, 5, 7), (5, 7, 5, 7)],
            nhead_q: 2,
            nhead_k: 2,
            hdim_q: 16,
            hdim_v: 16,
            mask: Mask::NONE,
            bias: Bias::None,
            soft_cap: 0.0,
            dropout: None,
            dropout_on_device: false,
            randval: false,
            lse: true,
            kv_head_major: false,
            seed: 1,
        }
    }

    fn with(mut self, f: impl FnOnce(&mut Case)) -> Case {
        f(&mut self);
        self
    }

    /// Every feature alone, on top of [`Case::plain`].
    pub fn features() -> Vec<Case> {
        let drop = Some(Dropout {
            p_drop: 0.25,
            seed: 0x0123_4567_89ab_cdef,
            offset: 1000,
        });
        let mask = |kind, left, right| Mask { kind, left, right };
        let varlen = vec![(5, 7, 5, 7), (3, 2, 3, 2), (9, 4, 9, 4)];
        let padded = vec![(4, 6, 5, 7), (2, 2, 3, 2), (9, 3, 9, 4)];
        vec![
            Case::plain("plain fp32"),
            Case::plain("fp16").with(|c| c.dtype = QOLA_DTYPE_FP16),
            Case::plain("bf16").with(|c| c.dtype = QOLA_DTYPE_BF16),
            Case::plain("GQA 6/2").with(|c| (c.nhead_q, c.nhead_k) = (6, 2)),
            Case::plain("MQA 3/1").with(|c| (c.nhead_q, c.nhead_k) = (3, 1)),
            Case::plain("hdim_q 24, hdim_v 8").with(|c| (c.hdim_q, c.hdim_v) = (24, 8)),
            Case::plain("hdim 256").with(|c| (c.hdim_q, c.hdim_v) = (256, 256)),
            Case::plain("k and v head-major").with(|c| c.kv_head_major = true),
            Case::plain("no lse").with(|c| c.lse = false),
            Case::plain("batch mode, cu_seqlen").with(|c| {
                c.lengths = Lengths::BatchPadded;
                c.seqs = vec![(3, 7, 5, 7), (5, 4, 5, 7)];
            }),
            Case::plain("group mode").with(|c| {
                c.lengths = Lengths::Group;
                c.seqs = varlen.clone();
            }),
            Case::plain("group mode, seqlen pointers").with(|c| {
                c.lengths = Lengths::GroupPadded;
                c.seqs = padded.clone();
            }),
            Case::plain("group mode, cu_seqlen").with(|c| {
                c.lengths = Lengths::GroupCumulative;
                c.seqs = padded.clone();
            }),
            Case::plain("causal top-left").with(|c| c.mask = mask(MaskKind::TopLeft, -1, 0)),
            Case::plain("causal bottom-right")
                .with(|c| c.mask = mask(MaskKind::BottomRight, -1, 0)),
            Case::plain("causal bottom-right, more queries than keys").with(|c| {
                c.mask = mask(MaskKind::BottomRight, -1, 0);
                c.seqs = vec![(7, 5, 7, 5), (7, 5, 7, 5)];
            }),
            Case::plain("window top-left (2, 1)").with(|c| c.mask = mask(MaskKind::TopLeft, 2, 1)),
            Case::plain("window bottom-right (1, 2)")
                .with(|c| c.mask = mask(MaskKind::BottomRight, 1, 2)),
            Case::plain("window right only (-1, 2)")
                .with(|c| c.mask = mask(MaskKind::TopLeft, -1, 2)),
            Case::plain("elementwise bias").with(|c| c.bias = Bias::Elementwise),
            Case::plain("ALiBi, shared slopes").with(|c| c.bias = Bias::Alibi(false)),
            Case::plain("ALiBi, per sequence").with(|c| c.bias = Bias::Alibi(true)),
            Case::plain("ALiBi, causal").with(|c| {
                c.bias = Bias::Alibi(false);
                c.mask = mask(MaskKind::BottomRight, -1, 0);
            }),
            Case::plain("ALiBi, window top-left").with(|c| {
                c.bias = Bias::Alibi(false);
                c.mask = mask(MaskKind::TopLeft, 2, 2);
            }),
            Case::plain("soft cap").with(|c| c.soft_cap = 0.5),
            Case::plain("dropout").with(|c| c.dropout = drop),
            Case::plain("dropout, long rows (several Philox tiles)").with(|c| {
                c.dropout = drop;
                c.randval = true;
                c.seqs = vec![(40, 70, 40, 70)];
            }),
            Case::plain("dropout, seed on device").with(|c| {
                c.dropout = drop;
                c.dropout_on_device = true;
            }),
            Case::plain("dropout random bytes").with(|c| {
                c.dropout = drop;
                c.randval = true;
            }),
        ]
    }

    /// A random combination of features.
    pub fn random(seed: u64) -> Case {
        let mut r = Rng::new(seed);
        let mut c = Case::plain(&format!("random #{seed}"));
        c.seed = seed;
        c.dtype = r.pick(&[QOLA_DTYPE_FP32, QOLA_DTYPE_FP16, QOLA_DTYPE_BF16]);
        c.nhead_k = r.range(1, 2) as usize;
        c.nhead_q = c.nhead_k * r.range(1, 3) as usize;
        c.hdim_q = r.pick(&[8, 16, 40, 64, 128]);
        c.hdim_v = if r.chance(0.3) {
            r.pick(&[8, 32, 64])
        } else {
            c.hdim_q
        };
        c.lengths = r.pick(&[
            Lengths::Batch,
            Lengths::BatchPadded,
            Lengths::Group,
            Lengths::GroupPadded,
            Lengths::GroupCumulative,
        ]);
        let batch = r.range(1, 3) as usize;
        let uniform = (r.range(1, 12) as usize, r.range(1, 12) as usize);
        c.seqs = (0..batch)
            .map(|_| {
                let (pq, pk) = match c.lengths {
                    Lengths::Batch | Lengths::BatchPadded => uniform,
                    _ => (r.range(1, 12) as usize, r.range(1, 12) as usize),
                };
                match c.lengths {
                    Lengths::Batch | Lengths::Group => (pq, pk, pq, pk),
                    _ => (
                        r.range(1, pq as i64) as usize,
                        r.range(1, pk as i64) as usize,
                        pq,
                        pk,
                    ),
                }
            })
            .collect();
        let kind = r.pick(&[MaskKind::None, MaskKind::TopLeft, MaskKind::BottomRight]);
        c.mask = if kind == MaskKind::None {
            Mask::NONE
        } else {
            Mask {
                kind,
                left: r.range(-1, 4),
                right: r.range(-1, 4),
            }
        };
        c.bias = r.pick(&[
            Bias::None,
            Bias::Elementwise,
            Bias::Alibi(false),
            Bias::Alibi(true),
        ]);
        c.soft_cap = if r.chance(0.3) { 0.4 } else { 0.0 };
        if r.chance(0.4) {
            c.dropout = Some(Dropout {
                p_drop: r.pick(&[0.1, 0.5]),
                seed: r.next(),
                offset: r.next() >> 8,
            });
            c.dropout_on_device = r.chance(0.5);
            c.randval = r.chance(0.5);
        }
        c.lse = r.chance(0.8);
        c.kv_head_major = r.chance(0.3);
        c
    }

    pub fn group(&self) -> bool {
        !matches!(self.lengths, Lengths::Batch | Lengths::BatchPadded)
    }

    /// Relative tolerance: 1e-4 for fp32, 1e-2 for fp16 and bf16 (outputs are rounded to them).
    pub fn tolerance(&self) -> f64 {
        if self.dtype == QOLA_DTYPE_FP32 {
            1e-4
        } else {
            1e-2
        }
    }

    fn elem(&self) -> usize {
        if self.dtype == QOLA_DTYPE_FP32 { 4 } else { 2 }
    }
}

/// Memory for one case: a byte block whose offsets stand in for device pointers (offset 0 is
/// NULL, so the block starts with 64 unused bytes).
#[derive(Clone)]
pub struct Blob(pub Vec<u8>);

impl Blob {
    fn new() -> Blob {
        Blob(vec![0; 64])
    }

    fn push(&mut self, bytes: &[u8]) -> usize {
        let at = self.0.len().div_ceil(64) * 64;
        self.0.resize(at, 0);
        self.0.extend_from_slice(bytes);
        at
    }

    fn floats(&self, at: usize, n: usize) -> Vec<f32> {
        decode(QOLA_DTYPE_FP32, &self.0[at..at + 4 * n])
    }
}

fn ptr<T>(offset: usize) -> *mut T {
    offset as *mut T
}

/// A tensor in the blob: where, its strides, and how (b, row, head) maps to an element.
#[derive(Clone, Copy)]
struct Placed {
    at: usize,
    strides: qola_tensor_strides,
    hdim: usize,
}

/// The laid-out case: args with offsets for pointers, the blob, and where each tensor is.
pub struct Laid {
    pub fwd: qola_mha_fwd_args,
    pub bwd: qola_mha_bwd_args,
    pub blob: Blob,
    q: Placed,
    k: Placed,
    v: Placed,
    o: Placed,
    dout: Placed,
    dq: Placed,
    dk: Placed,
    dv: Placed,
    lse_at: usize,
    bias_at: usize,
    dbias_at: usize,
    randval_at: usize,
    /// Physical start rows of each sequence in q-like and k-like tensors.
    q0: Vec<usize>,
    k0: Vec<usize>,
}

/// A value no kernel writes: padding rows must keep it.
const UNTOUCHED: u8 = 0x5a;

impl Case {
    fn rows(&self) -> (usize, usize) {
        if self.group() {
            (
                self.seqs.iter().map(|s| s.2).sum(),
                self.seqs.iter().map(|s| s.3).sum(),
            )
        } else {
            (self.seqs[0].2, self.seqs[0].3)
        }
    }

    fn max_logical(&self) -> (usize, usize) {
        (
            self.seqs.iter().map(|s| s.0).max().unwrap(),
            self.seqs.iter().map(|s| s.1).max().unwrap(),
        )
    }

    /// Strides and element count of a `[batch, rows, heads, hdim]` tensor.
    fn layout(
        &self,
        rows: usize,
        heads: usize,
        hdim: usize,
        head_major: bool,
    ) -> (qola_tensor_strides, usize) {
        let batches = if self.group() { 1 } else { self.seqs.len() };
        let (r, h, d) = (rows as i64, heads as i64, hdim as i64);
        let s = if head_major {
            qola_tensor_strides {
                batch: h * r * d,
                seq: d,
                head: r * d,
            }
        } else {
            qola_tensor_strides {
                batch: r * h * d,
                seq: h * d,
                head: d,
            }
        };
        let s = if self.group() {
            qola_tensor_strides { batch: 0, ..s }
        } else {
            s
        };
        (s, batches * rows * heads * hdim)
    }

    /// Lays the case out with random inputs (rounded to the element type).
    pub fn lay_out(&self) -> Laid {
        if !self.group() {
            assert!(
                self.seqs
                    .iter()
                    .all(|s| (s.2, s.3) == (self.seqs[0].2, self.seqs[0].3)),
                "{}: in batch mode every sequence has the same physical lengths",
                self.name
            );
        }
        let mut r = Rng::new(self.seed * 7919 + self.name.len() as u64);
        let mut blob = Blob::new();
        let (rows_q, rows_k) = self.rows();
        let (max_q, max_k) = self.max_logical();
        let batch = self.seqs.len();
        let e = self.elem();
        let mut tensor = |blob: &mut Blob, rows, heads, hdim, head_major, random: bool| {
            let (strides, n) = self.layout(rows, heads, hdim, head_major);
            let bytes = if random {
                encode(self.dtype, &(0..n).map(|_| r.float()).collect::<Vec<_>>())
            } else {
                vec![UNTOUCHED; n * e]
            };
            Placed {
                at: blob.push(&bytes),
                strides,
                hdim,
            }
        };
        let q = tensor(&mut blob, rows_q, self.nhead_q, self.hdim_q, false, true);
        let k = tensor(
            &mut blob,
            rows_k,
            self.nhead_k,
            self.hdim_q,
            self.kv_head_major,
            true,
        );
        let v = tensor(
            &mut blob,
            rows_k,
            self.nhead_k,
            self.hdim_v,
            self.kv_head_major,
            true,
        );
        let dout = tensor(&mut blob, rows_q, self.nhead_q, self.hdim_v, false, true);
        let o = tensor(&mut blob, rows_q, self.nhead_q, self.hdim_v, false, false);
        let dq = tensor(&mut blob, rows_q, self.nhead_q, self.hdim_q, false, false);
        let dk = tensor(
            &mut blob,
            rows_k,
            self.nhead_k,
            self.hdim_q,
            self.kv_head_major,
            false,
        );
        let dv = tensor(
            &mut blob,
            rows_k,
            self.nhead_k,
            self.hdim_v,
            self.kv_head_major,
            false,
        );

        // Matrices [batch, nhead_q, rows_q, columns]: columns = seqlen_k (batch) or max_k (group).
        let columns = if self.group() { max_k } else { rows_k };
        let batches = if self.group() { 1 } else { batch };
        let matrix = qola_matrix_strides {
            batch: if self.group() {
                0
            } else {
                (self.nhead_q * rows_q * columns) as i64
            },
            head: (rows_q * columns) as i64,
            row: columns as i64,
        };
        let cells = batches * self.nhead_q * rows_q * columns;
        let bias_at = if self.bias == Bias::Elementwise {
            let values: Vec<f32> = (0..cells).map(|_| r.float()).collect();
            blob.push(&encode(self.dtype, &values))
        } else {
            0
        };
        let dbias_at = if self.bias == Bias::Elementwise {
            blob.push(&vec![UNTOUCHED; cells * e])
        } else {
            0
        };
        let randval_at = if self.randval {
            blob.push(&vec![UNTOUCHED; cells])
        } else {
            0
        };
        let (alibi_at, alibi_stride) = match self.bias {
            Bias::Alibi(per_seq) => {
                let sets = if per_seq { batch } else { 1 };
                let slopes: Vec<f32> = (0..sets * self.nhead_q)
                    .map(|_| 0.5 * r.float().abs() + 0.05)
                    .collect();
                (
                    blob.push(&encode(QOLA_DTYPE_FP32, &slopes)),
                    if per_seq { self.nhead_q as i64 } else { 0 },
                )
            }
            _ => (0, 0),
        };
        let lse_strides = qola_matrix_strides {
            batch: if self.group() {
                0
            } else {
                (self.nhead_q * rows_q) as i64
            },
            head: rows_q as i64,
            row: 0,
        };
        let lse_at = blob.push(&vec![UNTOUCHED; batches * self.nhead_q * rows_q * 4]);

        // Sequence lengths.
        let ints = |blob: &mut Blob, v: Vec<i32>| {
            blob.push(&v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
        };
        let cumulative = |f: fn(&(usize, usize, usize, usize)) -> usize| {
            let mut acc = vec![0i32];
            for s in &self.seqs {
                acc.push(acc.last().unwrap() + f(s) as i32);
            }
            acc
        };
        let mut seqlens = qola_mha_seqlens {
            seqstart_q: ptr(0),
            seqstart_k: ptr(0),
            seqlen_q: ptr(0),
            seqlen_k: ptr(0),
            cu_seqlen_q: ptr(0),
            cu_seqlen_k: ptr(0),
        };
        let starts_q = cumulative(|s| s.2);
        let starts_k = cumulative(|s| s.3);
        match self.lengths {
            Lengths::Batch => {}
            Lengths::BatchPadded => {
                seqlens.cu_seqlen_q = ptr(ints(&mut blob, cumulative(|s| s.0)));
                seqlens.cu_seqlen_k = ptr(ints(&mut blob, cumulative(|s| s.1)));
            }
            Lengths::Group | Lengths::GroupPadded | Lengths::GroupCumulative => {
                seqlens.seqstart_q = ptr(ints(&mut blob, starts_q.clone()));
                seqlens.seqstart_k = ptr(ints(&mut blob, starts_k.clone()));
                if self.lengths == Lengths::GroupPadded {
                    seqlens.seqlen_q = ptr(ints(
                        &mut blob,
                        self.seqs.iter().map(|s| s.0 as i32).collect(),
                    ));
                    seqlens.seqlen_k = ptr(ints(
                        &mut blob,
                        self.seqs.iter().map(|s| s.1 as i32).collect(),
                    ));
                }
                if self.lengths == Lengths::GroupCumulative {
                    seqlens.cu_seqlen_q = ptr(ints(&mut blob, cumulative(|s| s.0)));
                    seqlens.cu_seqlen_k = ptr(ints(&mut blob, cumulative(|s| s.1)));
                }
            }
        }
        let mut dropout = qola_mha_dropout {
            p_drop: 0.0,
            seed_offset_on_device: 0,
            seed: 0,
            offset: 0,
            seed_ptr: ptr(0),
            offset_ptr: ptr(0),
        };
        if let Some(d) = self.dropout {
            dropout.p_drop = d.p_drop;
            if self.dropout_on_device {
                dropout.seed_offset_on_device = 1;
                dropout.seed_ptr = ptr(blob.push(&d.seed.to_le_bytes()));
                dropout.offset_ptr = ptr(blob.push(&d.offset.to_le_bytes()));
            } else {
                dropout.seed = d.seed;
                dropout.offset = d.offset;
            }
        }
        let problem = qola_mha_problem {
            dtype: self.dtype,
            mode: if self.group() {
                QOLA_MHA_MODE_GROUP
            } else {
                QOLA_MHA_MODE_BATCH
            },
            batch: batch as i32,
            nhead_q: self.nhead_q as i32,
            nhead_k: self.nhead_k as i32,
            seqlen_q: rows_q as i32,
            seqlen_k: rows_k as i32,
            max_seqlen_q: if self.group() { max_q as i32 } else { 0 },
            max_seqlen_k: if self.group() { max_k as i32 } else { 0 },
            hdim_q: self.hdim_q as i32,
            hdim_v: self.hdim_v as i32,
            mask_type: match self.mask.kind {
                MaskKind::None => QOLA_MHA_MASK_NONE,
                MaskKind::TopLeft => QOLA_MHA_MASK_TOP_LEFT,
                MaskKind::BottomRight => QOLA_MHA_MASK_BOTTOM_RIGHT,
            },
            window_left: self.mask.left as i32,
            window_right: self.mask.right as i32,
            bias_type: match self.bias {
                Bias::None => QOLA_MHA_BIAS_NONE,
                Bias::Elementwise => QOLA_MHA_BIAS_ELEMENTWISE,
                Bias::Alibi(_) => QOLA_MHA_BIAS_ALIBI,
            },
            scale: 1.0 / (self.hdim_q as f32).sqrt(),
            logits_soft_cap: self.soft_cap,
            seqlens,
            dropout,
        };
        let mut fwd = qola_mha_fwd_args::new();
        fwd.problem = problem;
        (fwd.q, fwd.q_strides) = (ptr(q.at), q.strides);
        (fwd.k, fwd.k_strides) = (ptr(k.at), k.strides);
        (fwd.v, fwd.v_strides) = (ptr(v.at), v.strides);
        (fwd.bias, fwd.bias_strides) = (ptr(bias_at), matrix);
        (fwd.alibi_slopes, fwd.alibi_slopes_batch_stride) = (ptr(alibi_at), alibi_stride);
        (fwd.o, fwd.o_strides) = (ptr(o.at), o.strides);
        if self.lse {
            (fwd.lse, fwd.lse_strides) = (ptr(lse_at), lse_strides);
        }
        if self.randval {
            (fwd.randval, fwd.randval_strides) = (ptr(randval_at), matrix);
        }
        let mut bwd = qola_mha_bwd_args::new();
        bwd.problem = problem;
        (bwd.q, bwd.q_strides) = (fwd.q, fwd.q_strides);
        (bwd.k, bwd.k_strides) = (fwd.k, fwd.k_strides);
        (bwd.v, bwd.v_strides) = (fwd.v, fwd.v_strides);
        (bwd.bias, bwd.bias_strides) = (fwd.bias, matrix);
        (bwd.alibi_slopes, bwd.alibi_slopes_batch_stride) = (fwd.alibi_slopes, alibi_stride);
        (bwd.o, bwd.o_strides) = (ptr(o.at), o.strides);
        (bwd.dout, bwd.dout_strides) = (ptr(dout.at), dout.strides);
        (bwd.lse, bwd.lse_strides) = (ptr(lse_at), lse_strides);
        (bwd.dq, bwd.dq_strides) = (ptr(dq.at), dq.strides);
        (bwd.dk, bwd.dk_strides) = (ptr(dk.at), dk.strides);
        (bwd.dv, bwd.dv_strides) = (ptr(dv.at), dv.strides);
        (bwd.dbias, bwd.dbias_strides) = (ptr(dbias_at), matrix);
        let workspace = batch * self.nhead_q * if self.group() { max_q } else { rows_q } * 4;
        bwd.workspace = ptr(blob.push(&vec![0; workspace]));
        let (q0, k0) = if self.group() {
            (
                starts_q.iter().map(|&x| x as usize).collect(),
                starts_k.iter().map(|&x| x as usize).collect(),
            )
        } else {
            (vec![0; batch + 1], vec![0; batch + 1])
        };
        Laid {
            fwd,
            bwd,
            blob,
            q,
            k,
            v,
            o,
            dout,
            dq,
            dk,
            dv,
            lse_at,
            bias_at,
            dbias_at,
            randval_at,
            q0,
            k0,
        }
    }
}

impl Laid {
    fn offset(
        &self,
        t: &Placed,
        b: usize,
        start: usize,
        row: usize,
        h: usize,
        group: bool,
    ) -> usize {
        let base = if group {
            (start + row) as i64 * t.strides.seq
        } else {
            b as i64 * t.strides.batch + row as i64 * t.strides.seq
        };
        (base + h as i64 * t.strides.head) as usize
    }

    /// Sequence b's rows of a tensor as contiguous `[rows, heads, hdim]` floats.
    fn gather(
        &self,
        c: &Case,
        t: &Placed,
        b: usize,
        q_like: bool,
        rows: usize,
        heads: usize,
    ) -> Vec<f64> {
        let start = if q_like { self.q0[b] } else { self.k0[b] };
        let e = c.elem();
        let mut out = Vec::with_capacity(rows * heads * t.hdim);
        for row in 0..rows {
            for h in 0..heads {
                let at = t.at + e * self.offset(t, b, start, row, h, c.group());
                out.extend(
                    decode(c.dtype, &self.blob.0[at..at + e * t.hdim])
                        .iter()
                        .map(|&x| x as f64),
                );
            }
        }
        out
    }

    /// Whether the physical rows past the logical ones of a written tensor kept their bytes.
    fn padding_untouched(
        &self,
        c: &Case,
        t: &Placed,
        b: usize,
        q_like: bool,
        heads: usize,
    ) -> bool {
        let (logical, physical) = if q_like {
            (c.seqs[b].0, c.seqs[b].2)
        } else {
            (c.seqs[b].1, c.seqs[b].3)
        };
        let start = if q_like { self.q0[b] } else { self.k0[b] };
        let e = c.elem();
        (logical..physical).all(|row| {
            (0..heads).all(|h| {
                let at = t.at + e * self.offset(t, b, start, row, h, c.group());
                self.blob.0[at..at + e * t.hdim]
                    .iter()
                    .all(|&x| x == UNTOUCHED)
            })
        })
    }

    fn matrix_at(&self, c: &Case, s: &qola_matrix_strides, b: usize, h: usize, i: usize) -> usize {
        let base = if c.group() {
            (self.q0[b] + i) as i64 * s.row
        } else {
            b as i64 * s.batch + i as i64 * s.row
        };
        (base + h as i64 * s.head) as usize
    }

    fn lse_of(&self, c: &Case, b: usize, h: usize, i: usize) -> usize {
        let s = &self.bwd.lse_strides;
        let base = if c.group() {
            (self.q0[b] + i) as i64
        } else {
            b as i64 * s.batch + i as i64
        };
        self.lse_at + 4 * (base + h as i64 * s.head) as usize
    }

    /// The reference's view of sequence b.
    pub fn sequence(&self, c: &Case, b: usize) -> reference::Sequence {
        let (lq, lk, _, _) = c.seqs[b];
        let e = c.elem();
        let bias = (c.bias == Bias::Elementwise).then(|| {
            let mut out = Vec::new();
            for h in 0..c.nhead_q {
                for i in 0..lq {
                    let at = self.bias_at + e * self.matrix_at(c, &self.fwd.bias_strides, b, h, i);
                    out.extend(
                        decode(c.dtype, &self.blob.0[at..at + e * lk])
                            .iter()
                            .map(|&x| x as f64),
                    );
                }
            }
            out
        });
        let alibi_slopes = match c.bias {
            Bias::Alibi(_) => {
                let at = self.fwd.alibi_slopes as usize
                    + 4 * b * self.fwd.alibi_slopes_batch_stride as usize;
                Some(
                    self.blob
                        .floats(at, c.nhead_q)
                        .iter()
                        .map(|&x| x as f64)
                        .collect(),
                )
            }
            _ => None,
        };
        reference::Sequence {
            index: b,
            lq,
            lk,
            q: self.gather(c, &self.q, b, true, lq, c.nhead_q),
            k: self.gather(c, &self.k, b, false, lk, c.nhead_k),
            v: self.gather(c, &self.v, b, false, lk, c.nhead_k),
            bias,
            alibi_slopes,
        }
    }
}

impl Case {
    pub fn reference(&self) -> reference::Problem {
        reference::Problem {
            nhead_q: self.nhead_q,
            nhead_k: self.nhead_k,
            hdim_q: self.hdim_q,
            hdim_v: self.hdim_v,
            mask: self.mask,
            scale: (1.0 / (self.hdim_q as f32).sqrt()) as f64,
            soft_cap: self.soft_cap as f64,
            dropout: self.dropout,
        }
    }
}

/// Runs one direction on some backend: (backward?, the args with offsets, the blob) → (status,
/// the blob afterwards).
pub type Runner<'r> = dyn FnMut(bool, &Laid) -> (i32, Blob) + 'r;

/// `‖got - want‖∞ / max(‖want‖∞, 1e-2)`, where -inf in both counts as equal. (Inputs are in
/// [-1, 1); the floor keeps gradients that cancel to about zero from turning float rounding
/// into a large relative error.)
fn relative_error(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let mut worst = 0.0f64;
    let mut scale = 1e-2f64;
    for (&g, &w) in got.iter().zip(want) {
        if w == f64::NEG_INFINITY && g == f64::NEG_INFINITY {
            continue;
        }
        worst = worst.max((g - w).abs());
        scale = scale.max(w.abs());
    }
    if worst.is_nan() {
        f64::INFINITY
    } else {
        worst / scale
    }
}

/// Runs a case forward and backward and compares every output with the reference: o, lse,
/// the random bytes, dq, dk, dv, dbias, and that padding rows stay untouched.
pub fn check(c: &Case, run: &mut Runner) -> Result<(), String> {
    let mut laid = c.lay_out();
    let (status, blob) = run(false, &laid);
    if status != 0 {
        return Err(format!(
            "{}: forward status {status}: {}",
            c.name,
            status_string(status)
        ));
    }
    laid.blob = blob;
    let p = c.reference();
    let tol = c.tolerance();
    let fail = |what: &str, b: usize, got: &[f64], want: &[f64]| -> Result<(), String> {
        let err = relative_error(got, want);
        if err <= tol {
            Ok(())
        } else {
            Err(format!(
                "{} (sequence {b}): {what} relative error {err:.2e} > {tol:.0e}",
                c.name
            ))
        }
    };
    let mut forwards = Vec::new();
    for b in 0..c.seqs.len() {
        let x = laid.sequence(c, b);
        let f = p.forward(&x);
        let o = laid.gather(c, &laid.o, b, true, x.lq, c.nhead_q);
        fail("o", b, &o, &f.o)?;
        if !laid.padding_untouched(c, &laid.o, b, true, c.nhead_q) {
            return Err(format!(
                "{} (sequence {b}): o's padding rows were written",
                c.name
            ));
        }
        if c.lse {
            let lse: Vec<f64> = (0..c.nhead_q)
                .flat_map(|h| (0..x.lq).map(move |i| (h, i)))
                .map(|(h, i)| laid.blob.floats(laid.lse_of(c, b, h, i), 1)[0] as f64)
                .collect();
            fail("lse", b, &lse, &f.lse)?;
        }
        if c.randval {
            let d = c.dropout.unwrap();
            for h in 0..c.nhead_q {
                for i in 0..x.lq {
                    let at =
                        laid.randval_at + laid.matrix_at(c, &laid.fwd.randval_strides, b, h, i);
                    for j in 0..x.lk {
                        if laid.blob.0[at + j] != d.byte(c.nhead_q, b, h, i, j) {
                            return Err(format!(
                                "{} (sequence {b}): random byte ({h}, {i}, {j}) differs",
                                c.name
                            ));
                        }
                    }
                }
            }
        }
        forwards.push((x, f, o));
    }
    // The backward reads the kernel's o (as stored) and, without a forward lse, the reference's.
    if !c.lse {
        for (b, (x, f, _)) in forwards.iter().enumerate() {
            for h in 0..c.nhead_q {
                for i in 0..x.lq {
                    let at = laid.lse_of(c, b, h, i);
                    laid.blob.0[at..at + 4]
                        .copy_from_slice(&(f.lse[h * x.lq + i] as f32).to_le_bytes());
                }
            }
        }
    }
    let (status, blob) = run(true, &laid);
    if status != 0 {
        return Err(format!(
            "{}: backward status {status}: {}",
            c.name,
            status_string(status)
        ));
    }
    laid.blob = blob;
    for (b, (x, f, o)) in forwards.iter().enumerate() {
        let dout = laid.gather(c, &laid.dout, b, true, x.lq, c.nhead_q);
        let g = p.backward(x, o, &f.lse, &dout);
        fail(
            "dq",
            b,
            &laid.gather(c, &laid.dq, b, true, x.lq, c.nhead_q),
            &g.dq,
        )?;
        fail(
            "dk",
            b,
            &laid.gather(c, &laid.dk, b, false, x.lk, c.nhead_k),
            &g.dk,
        )?;
        fail(
            "dv",
            b,
            &laid.gather(c, &laid.dv, b, false, x.lk, c.nhead_k),
            &g.dv,
        )?;
        for (t, q_like, heads) in [
            (&laid.dq, true, c.nhead_q),
            (&laid.dk, false, c.nhead_k),
            (&laid.dv, false, c.nhead_k),
        ] {
            if !laid.padding_untouched(c, t, b, q_like, heads) {
                return Err(format!(
                    "{} (sequence {b}): a gradient's padding rows were written",
                    c.name
                ));
            }
        }
        if c.bias == Bias::Elementwise {
            let e = c.elem();
            let mut dbias = Vec::new();
            for h in 0..c.nhead_q {
                for i in 0..x.lq {
                    let at =
                        laid.dbias_at + e * laid.matrix_at(c, &laid.bwd.dbias_strides, b, h, i);
                    dbias.extend(
                        decode(c.dtype, &laid.blob.0[at..at + e * x.lk])
                            .iter()
                            .map(|&v| v as f64),
                    );
                }
            }
            fail("dbias", b, &dbias, &g.dbias)?;
        }
    }
    Ok(())
}

/// A pointer that holds an offset into the blob, moved to `base` (null stays null).
fn moved<T>(p: *const T, base: usize) -> *const T {
    if p.is_null() {
        p
    } else {
        (base + p as usize) as *const T
    }
}

/// Moves each named pointer field of `$a` from a blob offset to `$base`.
macro_rules! move_fields {
    ($a:ident, $base:expr; $($field:ident),*) => {
        $( $a.$field = moved($a.$field as *const _, $base) as _; )*
    };
}

/// The pointer fields of the args, as offsets, moved to `base` (device memory holding the blob).
pub fn rebase_fwd(a: &qola_mha_fwd_args, base: usize) -> qola_mha_fwd_args {
    let mut a = *a;
    rebase_problem(&mut a.problem, base);
    move_fields!(a, base; q, k, v, bias, alibi_slopes, o, lse, randval);
    a
}

/// [`rebase_fwd`] for the backward.
pub fn rebase_bwd(a: &qola_mha_bwd_args, base: usize) -> qola_mha_bwd_args {
    let mut a = *a;
    rebase_problem(&mut a.problem, base);
    move_fields!(a, base; q, k, v, bias, alibi_slopes, o, dout, lse, dq, dk, dv, dbias, workspace);
    a
}

fn rebase_problem(p: &mut qola_mha_problem, base: usize) {
    let s = &mut p.seqlens;
    move_fields!(s, base; seqstart_q, seqstart_k, seqlen_q, seqlen_k, cu_seqlen_q, cu_seqlen_k);
    let d = &mut p.dropout;
    move_fields!(d, base; seed_ptr, offset_ptr);
}

/// The bytes of a `#[repr(C)]` struct.
pub fn struct_bytes<T: Copy>(value: &T) -> Vec<u8> {
    // SAFETY: T is a plain-data #[repr(C)] struct; its padding bytes are read as they are (the
    // args structs are created zeroed by `new()`, so padding is zero).
    unsafe {
        std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>())
    }
    .to_vec()
}

/// IEEE half from float, round to nearest even (as the kernels store it).
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = (x >> 16) & 0x8000;
    let raw_exp = (x >> 23) & 0xff;
    let mut mant = x & 0x7f_ffff;
    if raw_exp == 0xff {
        return (sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 }) as u16;
    }
    let exp = raw_exp as i32 - 127 + 15;
    if exp >= 31 {
        return (sign | 0x7c00) as u16;
    }
    if exp <= 0 {
        if exp < -10 {
            return sign as u16;
        }
        mant |= 0x80_0000;
        let shift = (14 - exp) as u32;
        let mut half = mant >> shift;
        let rem = mant & ((1 << shift) - 1);
        let halfway = 1 << (shift - 1);
        if rem > halfway || (rem == halfway && half & 1 == 1) {
            half += 1;
        }
        return (sign | half) as u16;
    }
    let mut half = sign | ((exp as u32) << 10) | (mant >> 13);
    let rem = mant & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && half & 1 == 1) {
        half += 1;
    }
    half as u16
}

/// Float from IEEE half.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if mant == 0 => sign,
        0 => {
            let (mut e, mut m) = (127 - 15 + 1, mant);
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x3ff) << 13)
        }
        31 => sign | 0x7f80_0000 | (mant << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (mant << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16 from float, round to nearest even.
pub fn f32_to_bf16(f: f32) -> u16 {
    let x = f.to_bits();
    if x & 0x7fff_ffff > 0x7f80_0000 {
        return ((x >> 16) | 0x40) as u16;
    }
    ((x + 0x7fff + ((x >> 16) & 1)) >> 16) as u16
}

/// Float from bfloat16.
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// The bytes of `values` in element type `dtype`.
pub fn encode(dtype: i32, values: &[f32]) -> Vec<u8> {
    match dtype {
        QOLA_DTYPE_FP32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        QOLA_DTYPE_FP16 => values
            .iter()
            .flat_map(|v| f32_to_f16(*v).to_le_bytes())
            .collect(),
        _ => values
            .iter()
            .flat_map(|v| f32_to_bf16(*v).to_le_bytes())
            .collect(),
    }
}

/// Floats from bytes in element type `dtype`.
pub fn decode(dtype: i32, bytes: &[u8]) -> Vec<f32> {
    match dtype {
        QOLA_DTYPE_FP32 => bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        QOLA_DTYPE_FP16 => bytes
            .chunks(2)
            .map(|c| f16_to_f32(u16::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        _ => bytes
            .chunks(2)
            .map(|c| bf16_to_f32(u16::from_le_bytes(c.try_into().unwrap())))
            .collect(),
    }
}
