// qola's built-in attention: the per-row computations shared by every translation unit.
//
// Each function computes one row (one query for the forward and dq, one key for dk/dv) in float,
// with an online softmax, so one GPU thread handles one row; it implements every feature of
// qola_mha.h (its "Model" section is the specification). The same functions compile for the
// host with QOLA_CPU_EMULATION (a plain C++ compiler), which is how their math is tested on
// machines without a GPU.
#pragma once

#include <stdint.h>

#include "qola_mha.h"

#ifdef QOLA_CPU_EMULATION
#define QOLA_HD inline
#include <math.h>
#else
#include <hip/hip_runtime.h>
#define QOLA_HD __host__ __device__ inline
#endif

namespace qola {

QOLA_HD float bits_to_float(uint32_t bits) {
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
}

QOLA_HD uint32_t float_to_bits(float f) {
    uint32_t bits;
    __builtin_memcpy(&bits, &f, sizeof bits);
    return bits;
}

QOLA_HD float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        if (mant == 0) return bits_to_float(sign);
        // Subnormal: normalize.
        exp = 127 - 15 + 1;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            exp--;
        }
        mant &= 0x3ffu;
        return bits_to_float(sign | (exp << 23) | (mant << 13));
    }
    if (exp == 31) return bits_to_float(sign | 0x7f800000u | (mant << 13));
    return bits_to_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

// Round to nearest, ties to even.
QOLA_HD uint16_t float_to_half(float f) {
    uint32_t x = float_to_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t raw_exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (raw_exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t exp = (int32_t)raw_exp - 127 + 15;
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half_mant = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) half_mant++;
        return (uint16_t)(sign | half_mant);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
    return (uint16_t)half;
}

QOLA_HD float bf16_to_float(uint16_t h) { return bits_to_float((uint32_t)h << 16); }

// Round to nearest, ties to even; NaN stays NaN.
QOLA_HD uint16_t float_to_bf16(float f) {
    uint32_t x = float_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

// Element types: how a value is stored and read as float.
struct Fp32 {
    using storage = float;
    static QOLA_HD float load(const storage* p, int64_t i) { return p[i]; }
    static QOLA_HD void store(storage* p, int64_t i, float v) { p[i] = v; }
};

struct Fp16 {
    using storage = uint16_t;
    static QOLA_HD float load(const storage* p, int64_t i) { return half_to_float(p[i]); }
    static QOLA_HD void store(storage* p, int64_t i, float v) { p[i] = float_to_half(v); }
};

struct Bf16 {
    using storage = uint16_t;
    static QOLA_HD float load(const storage* p, int64_t i) { return bf16_to_float(p[i]); }
    static QOLA_HD void store(storage* p, int64_t i, float v) { p[i] = float_to_bf16(v); }
};

// ---- Sequences: logical lengths and physical starts (qola_mha.h, "Layouts") ----

struct Seq {
    int lq, lk;         // logical lengths
    int64_t q0, k0;     // group mode: physical start rows; batch mode: 0
};

QOLA_HD int max_rows_q(const qola_mha_problem& p) { return p.mode == QOLA_MHA_MODE_GROUP ? p.max_seqlen_q : p.seqlen_q; }
QOLA_HD int max_rows_k(const qola_mha_problem& p) { return p.mode == QOLA_MHA_MODE_GROUP ? p.max_seqlen_k : p.seqlen_k; }

QOLA_HD int clamp_len(int len, int most) { return len < 0 ? 0 : (len > most ? most : len); }

QOLA_HD Seq sequence(const qola_mha_problem& p, int b) {
    const qola_mha_seqlens& s = p.seqlens;
    Seq q;
    int lq, lk;
    if (p.mode == QOLA_MHA_MODE_GROUP) {
        q.q0 = s.seqstart_q[b];
        q.k0 = s.seqstart_k[b];
        lq = s.seqlen_q ? s.seqlen_q[b] : s.cu_seqlen_q ? s.cu_seqlen_q[b + 1] - s.cu_seqlen_q[b] : s.seqstart_q[b + 1] - s.seqstart_q[b];
        lk = s.seqlen_k ? s.seqlen_k[b] : s.cu_seqlen_k ? s.cu_seqlen_k[b + 1] - s.cu_seqlen_k[b] : s.seqstart_k[b + 1] - s.seqstart_k[b];
    } else {
        q.q0 = q.k0 = 0;
        lq = s.cu_seqlen_q ? s.cu_seqlen_q[b + 1] - s.cu_seqlen_q[b] : p.seqlen_q;
        lk = s.cu_seqlen_k ? s.cu_seqlen_k[b + 1] - s.cu_seqlen_k[b] : p.seqlen_k;
    }
    q.lq = clamp_len(lq, max_rows_q(p));
    q.lk = clamp_len(lk, max_rows_k(p));
    return q;
}

// Element offset of (sequence b starting at physical row `start`, row, head) in a tensor.
QOLA_HD int64_t offset(const qola_mha_problem& p, const qola_tensor_strides& s, int b, int64_t start, int row, int h) {
    const int64_t base = p.mode == QOLA_MHA_MODE_GROUP ? (start + row) * s.seq : (int64_t)b * s.batch + (int64_t)row * s.seq;
    return base + (int64_t)h * s.head;
}

// Element offset of (b, h, row i, column 0) in a [batch, nhead_q, rows, columns] matrix.
QOLA_HD int64_t matrix_offset(const qola_mha_problem& p, const qola_matrix_strides& s, int b, int64_t start, int i, int h) {
    const int64_t base = p.mode == QOLA_MHA_MODE_GROUP ? (start + i) * s.row : (int64_t)b * s.batch + (int64_t)i * s.row;
    return base + (int64_t)h * s.head;
}

QOLA_HD int64_t lse_offset(const qola_mha_problem& p, const qola_matrix_strides& s, int b, int64_t start, int i, int h) {
    const int64_t base = p.mode == QOLA_MHA_MODE_GROUP ? start + i : (int64_t)b * s.batch + i;
    return base + (int64_t)h * s.head;
}

// ---- Masks, ALiBi, soft cap (qola_mha.h, "Model") ----

QOLA_HD bool visible(const qola_mha_problem& p, const Seq& q, int i, int j) {
    if (p.mask_type == QOLA_MHA_MASK_NONE) return true;
    const int off = p.mask_type == QOLA_MHA_MASK_BOTTOM_RIGHT ? q.lk - q.lq : 0;
    if (p.window_left >= 0 && j < i + off - p.window_left) return false;
    if (p.window_right >= 0 && j > i + off + p.window_right) return false;
    return true;
}

QOLA_HD float alibi(const qola_mha_problem& p, float slope, const Seq& q, int i, int j) {
    const bool causal = p.mask_type != QOLA_MHA_MASK_NONE && p.window_left < 0 && p.window_right == 0;
    if (causal) return slope * (float)j;
    int up = 0, down = 0;
    if (p.mask_type != QOLA_MHA_MASK_TOP_LEFT) {
        up = q.lq > q.lk ? q.lq - q.lk : 0;
        down = q.lk > q.lq ? q.lk - q.lq : 0;
    }
    const int d = i + down - (j + up);
    return -slope * (float)(d < 0 ? -d : d);
}

// ---- Dropout: CK's Philox-4x32-7 stream and keep-mask layout ----

struct Philox4 {
    uint32_t w[4];
};

QOLA_HD Philox4 philox(uint64_t seed, uint64_t counter, uint64_t subsequence) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = (uint32_t)subsequence, c3 = (uint32_t)(subsequence >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 7; ++round) {
        if (round) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint64_t m0 = (uint64_t)0xD2511F53u * c0;
        const uint64_t m1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t n0 = (uint32_t)(m1 >> 32) ^ c1 ^ k0;
        const uint32_t n2 = (uint32_t)(m0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)m1;
        c3 = (uint32_t)m0;
        c0 = n0;
        c2 = n2;
    }
    return Philox4{{c0, c1, c2, c3}};
}

struct Dropout {
    bool on;
    uint64_t seed, offset;
    uint8_t threshold;  // kept when the byte is <= threshold
    float rescale;      // 1 / (1 - p_drop)
};

QOLA_HD Dropout dropout_of(const qola_mha_problem& p) {
    const qola_mha_dropout& d = p.dropout;
    Dropout out{d.p_drop > 0.0f, 0, 0, 255, 1.0f};
    if (!out.on) return out;
    out.seed = d.seed_offset_on_device ? *d.seed_ptr : d.seed;
    out.offset = d.seed_offset_on_device ? *d.offset_ptr : d.offset;
    const float undrop = (float)(1.0 - (double)d.p_drop);
    out.threshold = (uint8_t)floorf(undrop * 255.0f);
    out.rescale = (float)(1.0 / (double)undrop);
    return out;
}

// The random byte of element (i, j) of sequence b, head h.
QOLA_HD uint8_t dropout_byte(const Dropout& d, int nhead, int b, int h, int i, int j) {
    const int ii = i % 32, jj = j % 32;
    const int lane = 32 * ((ii / 8) % 2) + jj;
    const int r = 8 * (ii / 16) + ii % 8;
    const uint64_t counter = d.offset + ((uint64_t)b * nhead + h) * 64 + lane;
    const Philox4 x = philox(d.seed, counter, (uint64_t)(i / 32) | (uint64_t)(j / 32) << 32);
    return (uint8_t)(x.w[r / 4] >> (8 * (r % 4)));
}

// ---- Scores ----

// What a row needs to score its keys, and the soft cap's derivative.
template <typename E, typename Args>
struct Scorer {
    const Args& a;
    const qola_mha_problem& p;
    Seq q;
    int b, h, hk;
    float slope;

    QOLA_HD Scorer(const Args& args, int b_, int h_) : a(args), p(args.problem), q(sequence(args.problem, b_)), b(b_), h(h_) {
        hk = h / (p.nhead_q / p.nhead_k);
        slope = p.bias_type == QOLA_MHA_BIAS_ALIBI ? a.alibi_slopes[(int64_t)b * a.alibi_slopes_batch_stride + h] : 0.0f;
    }

    // The score of (i, j); *dcap = d(capped)/d(uncapped).
    QOLA_HD float score(int i, int j, float* dcap) const {
        using T = typename E::storage;
        const int64_t qo = offset(p, a.q_strides, b, q.q0, i, h);
        const int64_t ko = offset(p, a.k_strides, b, q.k0, j, hk);
        float x = 0.0f;
        for (int c = 0; c < p.hdim_q; ++c) x += E::load((const T*)a.q, qo + c) * E::load((const T*)a.k, ko + c);
        x *= p.scale;
        *dcap = 1.0f;
        if (p.logits_soft_cap > 0.0f) {
            const float t = tanhf(x / p.logits_soft_cap);
            x = p.logits_soft_cap * t;
            *dcap = 1.0f - t * t;
        }
        if (p.bias_type == QOLA_MHA_BIAS_ELEMENTWISE)
            x += E::load((const T*)a.bias, matrix_offset(p, a.bias_strides, b, q.q0, i, h) + j);
        else if (p.bias_type == QOLA_MHA_BIAS_ALIBI)
            x += alibi(p, slope, q, i, j);
        return x;
    }
};

template <typename E>
QOLA_HD float dot_rows(const typename E::storage* x, int64_t xo, const typename E::storage* y, int64_t yo, int d) {
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) acc += E::load(x, xo + c) * E::load(y, yo + c);
    return acc;
}

// Rows of [batch, nhead, n] as (b, h, pos).
QOLA_HD void split_row(int64_t r, int nhead, int n, int* b, int* h, int* pos) {
    *pos = (int)(r % n);
    *h = (int)((r / n) % nhead);
    *b = (int)(r / ((int64_t)n * nhead));
}

QOLA_HD int64_t q_rows(const qola_mha_problem& p) { return (int64_t)p.batch * p.nhead_q * max_rows_q(p); }
QOLA_HD int64_t k_rows(const qola_mha_problem& p) { return (int64_t)p.batch * p.nhead_k * max_rows_k(p); }

// ---- Forward, one query row r of [batch, nhead_q, max rows] ----

template <typename E>
QOLA_HD void fwd_row(const qola_mha_fwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_problem& p = a.problem;
    int b, h, i;
    split_row(r, p.nhead_q, max_rows_q(p), &b, &h, &i);
    const Scorer<E, qola_mha_fwd_args> sc(a, b, h);
    if (i >= sc.q.lq) return;
    const Dropout drop = dropout_of(p);
    float acc[QOLA_MHA_MAX_HEAD_DIM];
    for (int c = 0; c < p.hdim_v; ++c) acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f, dcap;
    const int64_t rv = a.randval ? matrix_offset(p, a.randval_strides, b, sc.q.q0, i, h) : 0;
    for (int j = 0; j < sc.q.lk; ++j) {
        uint8_t byte = 0;
        if (drop.on) byte = dropout_byte(drop, p.nhead_q, b, h, i, j);
        if (a.randval) a.randval[rv + j] = byte;
        if (!visible(p, sc.q, i, j)) continue;
        const float s = sc.score(i, j, &dcap);
        if (s == -INFINITY) continue;
        const float m_new = s > m ? s : m;
        const float correction = expf(m - m_new);
        const float e = expf(s - m_new);
        l = l * correction + e;
        const float kept = drop.on ? (byte <= drop.threshold ? e * drop.rescale : 0.0f) : e;
        const int64_t vo = offset(p, a.v_strides, b, sc.q.k0, j, sc.hk);
        for (int c = 0; c < p.hdim_v; ++c) acc[c] = acc[c] * correction + kept * E::load((const T*)a.v, vo + c);
        m = m_new;
    }
    const int64_t oo = offset(p, a.o_strides, b, sc.q.q0, i, h);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = 0; c < p.hdim_v; ++c) E::store((T*)a.o, oo + c, acc[c] * inv);
    if (a.lse) a.lse[lse_offset(p, a.lse_strides, b, sc.q.q0, i, h)] = l > 0.0f ? m + logf(l) : -INFINITY;
}

// ---- Backward ----

QOLA_HD int64_t delta_index(const qola_mha_problem& p, int b, int h, int i) {
    return ((int64_t)b * p.nhead_q + h) * max_rows_q(p) + i;
}

// delta = dot(dout, o) of query row r, into the workspace.
template <typename E>
QOLA_HD void bwd_delta_row(const qola_mha_bwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_problem& p = a.problem;
    int b, h, i;
    split_row(r, p.nhead_q, max_rows_q(p), &b, &h, &i);
    const Seq q = sequence(p, b);
    if (i >= q.lq) return;
    ((float*)a.workspace)[delta_index(p, b, h, i)] =
        dot_rows<E>((const T*)a.dout, offset(p, a.dout_strides, b, q.q0, i, h), (const T*)a.o,
                    offset(p, a.o_strides, b, q.q0, i, h), p.hdim_v);
}

// For query i and key j: the probability as the forward kept it (dropped and rescaled), the
// undropped one, and the gradient of the score.
struct Grad {
    float kept;  // p' of qola_mha.h
    float ds;    // d loss / d s
    float dx;    // d loss / d (scale * q.k)
};

template <typename E>
QOLA_HD Grad grad(const Scorer<E, qola_mha_bwd_args>& sc, const Dropout& drop, int i, int j, float lse) {
    using T = typename E::storage;
    const qola_mha_bwd_args& a = sc.a;
    const qola_mha_problem& p = sc.p;
    float dcap;
    const float s = sc.score(i, j, &dcap);
    const float prob = s == -INFINITY ? 0.0f : expf(s - lse);
    float dp = dot_rows<E>((const T*)a.dout, offset(p, a.dout_strides, sc.b, sc.q.q0, i, sc.h), (const T*)a.v,
                           offset(p, a.v_strides, sc.b, sc.q.k0, j, sc.hk), p.hdim_v);
    float keep = 1.0f;
    if (drop.on) keep = dropout_byte(drop, p.nhead_q, sc.b, sc.h, i, j) <= drop.threshold ? drop.rescale : 0.0f;
    const float delta = ((const float*)a.workspace)[delta_index(p, sc.b, sc.h, i)];
    const float ds = prob * (keep * dp - delta);
    return Grad{prob * keep, ds, ds * dcap};
}

// dq (and the dbias row) of query row r.
template <typename E>
QOLA_HD void bwd_dq_row(const qola_mha_bwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_problem& p = a.problem;
    int b, h, i;
    split_row(r, p.nhead_q, max_rows_q(p), &b, &h, &i);
    const Scorer<E, qola_mha_bwd_args> sc(a, b, h);
    if (i >= sc.q.lq) return;
    const Dropout drop = dropout_of(p);
    float acc[QOLA_MHA_MAX_HEAD_DIM];
    for (int c = 0; c < p.hdim_q; ++c) acc[c] = 0.0f;
    const float lse = a.lse[lse_offset(p, a.lse_strides, b, sc.q.q0, i, h)];
    const int64_t db = a.dbias ? matrix_offset(p, a.dbias_strides, b, sc.q.q0, i, h) : 0;
    for (int j = 0; j < sc.q.lk; ++j) {
        const bool seen = lse != -INFINITY && visible(p, sc.q, i, j);
        const Grad g = seen ? grad(sc, drop, i, j, lse) : Grad{0.0f, 0.0f, 0.0f};
        if (a.dbias) E::store((T*)a.dbias, db + j, g.ds);
        if (!seen) continue;
        const int64_t ko = offset(p, a.k_strides, b, sc.q.k0, j, sc.hk);
        for (int c = 0; c < p.hdim_q; ++c) acc[c] += g.dx * E::load((const T*)a.k, ko + c);
    }
    const int64_t out = offset(p, a.dq_strides, b, sc.q.q0, i, h);
    for (int c = 0; c < p.hdim_q; ++c) E::store((T*)a.dq, out + c, acc[c] * p.scale);
}

// dk and dv of key row r of [batch, nhead_k, max rows]: the sum over the kv head's query heads.
template <typename E>
QOLA_HD void bwd_dkdv_row(const qola_mha_bwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_problem& p = a.problem;
    int b, hk, j;
    split_row(r, p.nhead_k, max_rows_k(p), &b, &hk, &j);
    const Seq q = sequence(p, b);
    if (j >= q.lk) return;
    const Dropout drop = dropout_of(p);
    float dk[QOLA_MHA_MAX_HEAD_DIM], dv[QOLA_MHA_MAX_HEAD_DIM];
    for (int c = 0; c < p.hdim_q; ++c) dk[c] = 0.0f;
    for (int c = 0; c < p.hdim_v; ++c) dv[c] = 0.0f;
    const int group = p.nhead_q / p.nhead_k;
    for (int h = hk * group; h < (hk + 1) * group; ++h) {
        const Scorer<E, qola_mha_bwd_args> sc(a, b, h);
        for (int i = 0; i < q.lq; ++i) {
            const float lse = a.lse[lse_offset(p, a.lse_strides, b, q.q0, i, h)];
            if (lse == -INFINITY || !visible(p, q, i, j)) continue;
            const Grad g = grad(sc, drop, i, j, lse);
            const int64_t qo = offset(p, a.q_strides, b, q.q0, i, h);
            const int64_t go = offset(p, a.dout_strides, b, q.q0, i, h);
            for (int c = 0; c < p.hdim_v; ++c) dv[c] += g.kept * E::load((const T*)a.dout, go + c);
            for (int c = 0; c < p.hdim_q; ++c) dk[c] += g.dx * E::load((const T*)a.q, qo + c);
        }
    }
    const int64_t dko = offset(p, a.dk_strides, b, q.k0, j, hk);
    const int64_t dvo = offset(p, a.dv_strides, b, q.k0, j, hk);
    for (int c = 0; c < p.hdim_q; ++c) E::store((T*)a.dk, dko + c, dk[c] * p.scale);
    for (int c = 0; c < p.hdim_v; ++c) E::store((T*)a.dv, dvo + c, dv[c]);
}

// Bytes of workspace the built-in backward needs: delta, one float per query row.
QOLA_HD size_t bwd_workspace_bytes(const qola_mha_problem& p) { return (size_t)q_rows(p) * sizeof(float); }

}  // namespace qola

#ifndef QOLA_CPU_EMULATION

// Threads per block of every kernel: one thread per row.
#define QOLA_BLOCK 64

// Launchers shared between translation units; hidden, and made local when the library is linked.
#define QOLA_LAUNCHER __attribute__((visibility("hidden")))

QOLA_LAUNCHER int qola_detail_fwd_fp32(const qola_mha_fwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_fwd_fp16(const qola_mha_fwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_fwd_bf16(const qola_mha_fwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_delta_fp32(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_delta_fp16(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_delta_bf16(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_dq_fp32(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_dq_fp16(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_dq_bf16(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_dkdv_fp32(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_dkdv_fp16(const qola_mha_bwd_args* a, hipStream_t stream);
QOLA_LAUNCHER int qola_detail_bwd_dkdv_bf16(const qola_mha_bwd_args* a, hipStream_t stream);

inline dim3 qola_grid(int64_t rows) { return dim3((unsigned)((rows + QOLA_BLOCK - 1) / QOLA_BLOCK)); }

// Defines a kernel over rows (in an anonymous namespace: its symbol stays local) and a launcher.
// `rows` is qola::q_rows or qola::k_rows.
#define QOLA_ROW_KERNEL(launcher, args_t, rows, body)                                        \
    namespace {                                                                              \
    __global__ void launcher##_kernel(args_t a) {                                            \
        const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;                    \
        if (r < rows(a.problem)) body(a, r);                                                 \
    }                                                                                        \
    }                                                                                        \
    QOLA_LAUNCHER int launcher(const args_t* a, hipStream_t stream) {                        \
        const int64_t n = rows(a->problem);                                                  \
        hipLaunchKernelGGL(launcher##_kernel, qola_grid(n), dim3(QOLA_BLOCK), 0, stream, *a); \
        return (int)hipGetLastError();                                                       \
    }

#endif
