//! Problems and comparisons shared by the numerics tests.

#![allow(dead_code)] // each test binary uses a part

use qola_sys::reference::{self, Shape};

/// A problem: its shape, element type and float inputs (contiguous `[b, s, h, d]`).
pub struct Problem {
    pub shape: Shape,
    pub dtype: i32,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub dout: Vec<f32>,
}

fn pseudo_random(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

impl Problem {
    pub fn new(
        dtype: i32,
        causal: bool,
        seqlen_q: usize,
        seqlen_k: usize,
        head_dim: usize,
    ) -> Problem {
        let shape = Shape {
            batch: 2,
            nhead: 3,
            seqlen_q,
            seqlen_k,
            head_dim,
            causal,
            scale: 1.0 / (head_dim as f64).sqrt(),
        };
        let seed = (dtype as u64) << 8 | (causal as u64) << 4 | head_dim as u64;
        Problem {
            q: pseudo_random(shape.q_len(), seed + 1),
            k: pseudo_random(shape.k_len(), seed + 2),
            v: pseudo_random(shape.k_len(), seed + 3),
            dout: pseudo_random(shape.q_len(), seed + 4),
            shape,
            dtype,
        }
    }

    /// Every combination the tests cover: each type, masked or not, small and full head dims,
    /// seqlen_q != seqlen_k (the causal alignment matters).
    pub fn all() -> Vec<Problem> {
        let mut out = Vec::new();
        for dtype in [
            qola_sys::QOLA_DTYPE_FP32,
            qola_sys::QOLA_DTYPE_FP16,
            qola_sys::QOLA_DTYPE_BF16,
        ] {
            for causal in [false, true] {
                out.push(Problem::new(dtype, causal, 5, 7, 16));
                out.push(Problem::new(dtype, causal, 9, 4, 128));
            }
        }
        out
    }

    /// Relative tolerance: 1e-2 for fp16/bf16, 1e-4 for fp32.
    pub fn tolerance(&self) -> f64 {
        if self.dtype == qola_sys::QOLA_DTYPE_FP32 {
            1e-4
        } else {
            1e-2
        }
    }

    pub fn name(&self) -> String {
        format!(
            "dtype {} causal {} q{} k{} d{}",
            self.dtype,
            self.shape.causal,
            self.shape.seqlen_q,
            self.shape.seqlen_k,
            self.shape.head_dim
        )
    }
}

fn wide(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

/// Results of running a problem: the inputs as the kernels read them, and the outputs.
pub struct Results {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub dout: Vec<f32>,
    pub o: Vec<f32>,
    pub lse: Vec<f32>,
    pub dq: Vec<f32>,
    pub dk: Vec<f32>,
    pub dv: Vec<f32>,
}

/// `‖got - want‖∞ / max(‖want‖∞, 1e-3)`, ignoring positions where `want` is -inf and `got` too.
fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let mut worst = 0.0f64;
    let mut scale = 1e-3f64;
    for (&g, &w) in got.iter().zip(want) {
        if w == f64::NEG_INFINITY && g == f32::NEG_INFINITY {
            continue;
        }
        worst = worst.max((g as f64 - w).abs());
        scale = scale.max(w.abs());
    }
    worst / scale
}

/// Compares `results` with the float64 reference computed from the inputs the kernels read.
pub fn check(problem: &Problem, results: &Results) {
    let s = &problem.shape;
    let (q, k, v, dout) = (
        wide(&results.q),
        wide(&results.k),
        wide(&results.v),
        wide(&results.dout),
    );
    let (o, lse) = reference::forward(s, &q, &k, &v);
    // The backward is checked against the reference fed the kernels' own o (as stored).
    let (dq, dk, dv) = reference::backward(s, &q, &k, &v, &wide(&results.o), &dout, &lse);
    let tol = problem.tolerance();
    for (what, got, want) in [
        ("o", &results.o, &o),
        ("lse", &results.lse, &lse),
        ("dq", &results.dq, &dq),
        ("dk", &results.dk, &dk),
        ("dv", &results.dv, &dv),
    ] {
        let err = relative_error(got, want);
        assert!(
            err <= tol,
            "{}: {what} relative error {err:.2e} > {tol:.0e}",
            problem.name()
        );
    }
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
        qola_sys::QOLA_DTYPE_FP32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        qola_sys::QOLA_DTYPE_FP16 => values
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
        qola_sys::QOLA_DTYPE_FP32 => bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        qola_sys::QOLA_DTYPE_FP16 => bytes
            .chunks(2)
            .map(|c| f16_to_f32(u16::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        _ => bytes
            .chunks(2)
            .map(|c| bf16_to_f32(u16::from_le_bytes(c.try_into().unwrap())))
            .collect(),
    }
}
