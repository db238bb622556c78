// qola's built-in attention: the per-row computations shared by every translation unit.
//
// Each function computes one row (one query for the forward and dq, one key for dk/dv) in float,
// with an online softmax, so one GPU thread handles one row. The same functions compile for the
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

QOLA_HD int64_t offset(const qola_tensor_strides& s, int b, int pos, int h) {
    return (int64_t)b * s.batch + (int64_t)pos * s.seq + (int64_t)h * s.head;
}

// The number of keys query i sees.
QOLA_HD int visible_keys(const qola_mha_shape& s, int i) {
    if (!s.causal) return s.seqlen_k;
    int last = i + s.seqlen_k - s.seqlen_q;
    return last < 0 ? 0 : (last + 1 < s.seqlen_k ? last + 1 : s.seqlen_k);
}

// The first query that sees key j.
QOLA_HD int first_query(const qola_mha_shape& s, int j) {
    if (!s.causal) return 0;
    int first = j - (s.seqlen_k - s.seqlen_q);
    return first < 0 ? 0 : first;
}

QOLA_HD int64_t lse_index(const qola_mha_shape& s, int b, int h, int i) {
    return ((int64_t)b * s.nhead + h) * s.seqlen_q + i;
}

// Row r of [batch, nhead, n] as (b, h, pos).
QOLA_HD void split_row(const qola_mha_shape& s, int64_t r, int n, int* b, int* h, int* pos) {
    *pos = (int)(r % n);
    *h = (int)((r / n) % s.nhead);
    *b = (int)(r / ((int64_t)n * s.nhead));
}

template <typename E>
QOLA_HD float dot_rows(const typename E::storage* x, int64_t xo, const typename E::storage* y,
                       int64_t yo, int d) {
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) acc += E::load(x, xo + c) * E::load(y, yo + c);
    return acc;
}

// Forward for query row r of [batch, nhead, seqlen_q].
template <typename E>
QOLA_HD void fwd_row(const qola_mha_fwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_shape& s = a.shape;
    int b, h, i;
    split_row(s, r, s.seqlen_q, &b, &h, &i);
    const T* q = (const T*)a.q;
    const T* k = (const T*)a.k;
    const T* v = (const T*)a.v;
    T* o = (T*)a.o;
    const int d = s.head_dim;
    const int64_t qo = offset(a.q_strides, b, i, h);
    float acc[QOLA_MAX_HEAD_DIM];
    for (int c = 0; c < d; ++c) acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    const int keys = visible_keys(s, i);
    for (int j = 0; j < keys; ++j) {
        const float score = s.scale * dot_rows<E>(q, qo, k, offset(a.k_strides, b, j, h), d);
        const float m_new = score > m ? score : m;
        const float correction = expf(m - m_new);
        const float p = expf(score - m_new);
        l = l * correction + p;
        const int64_t vo = offset(a.v_strides, b, j, h);
        for (int c = 0; c < d; ++c) acc[c] = acc[c] * correction + p * E::load(v, vo + c);
        m = m_new;
    }
    const int64_t oo = offset(a.o_strides, b, i, h);
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int c = 0; c < d; ++c) E::store(o, oo + c, acc[c] * inv);
    if (a.lse) a.lse[lse_index(s, b, h, i)] = l > 0.0f ? m + logf(l) : -INFINITY;
}

// Backward, first pass: delta[row] = dot(dout, o) for query row r.
template <typename E>
QOLA_HD void bwd_delta_row(const qola_mha_bwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_shape& s = a.shape;
    int b, h, i;
    split_row(s, r, s.seqlen_q, &b, &h, &i);
    float* delta = (float*)a.workspace;
    delta[r] = dot_rows<E>((const T*)a.dout, offset(a.dout_strides, b, i, h), (const T*)a.o,
                           offset(a.o_strides, b, i, h), s.head_dim);
}

// Backward, for query i and key j: the probability p = exp(scale q.k - lse) and the score
// gradient ds = p * (dout.v - delta).
template <typename E>
QOLA_HD void p_and_ds(const qola_mha_bwd_args& a, int b, int h, int i, int j, float lse, float* p,
                      float* ds) {
    using T = typename E::storage;
    const qola_mha_shape& s = a.shape;
    const int d = s.head_dim;
    const float score = s.scale * dot_rows<E>((const T*)a.q, offset(a.q_strides, b, i, h),
                                              (const T*)a.k, offset(a.k_strides, b, j, h), d);
    const float dp = dot_rows<E>((const T*)a.dout, offset(a.dout_strides, b, i, h), (const T*)a.v,
                                 offset(a.v_strides, b, j, h), d);
    const float delta = ((const float*)a.workspace)[lse_index(s, b, h, i)];
    *p = expf(score - lse);
    *ds = *p * (dp - delta);
}

// Backward: dq for query row r.
template <typename E>
QOLA_HD void bwd_dq_row(const qola_mha_bwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_shape& s = a.shape;
    int b, h, i;
    split_row(s, r, s.seqlen_q, &b, &h, &i);
    const T* k = (const T*)a.k;
    const int d = s.head_dim;
    float acc[QOLA_MAX_HEAD_DIM];
    for (int c = 0; c < d; ++c) acc[c] = 0.0f;
    const float lse = a.lse[lse_index(s, b, h, i)];
    const int keys = lse == -INFINITY ? 0 : visible_keys(s, i);
    for (int j = 0; j < keys; ++j) {
        float p, ds;
        p_and_ds<E>(a, b, h, i, j, lse, &p, &ds);
        const int64_t ko = offset(a.k_strides, b, j, h);
        for (int c = 0; c < d; ++c) acc[c] += ds * E::load(k, ko + c);
    }
    const int64_t out = offset(a.dq_strides, b, i, h);
    for (int c = 0; c < d; ++c) E::store((T*)a.dq, out + c, acc[c] * s.scale);
}

// Backward: dk and dv for key row r of [batch, nhead, seqlen_k].
template <typename E>
QOLA_HD void bwd_dkdv_row(const qola_mha_bwd_args& a, int64_t r) {
    using T = typename E::storage;
    const qola_mha_shape& s = a.shape;
    int b, h, j;
    split_row(s, r, s.seqlen_k, &b, &h, &j);
    const T* q = (const T*)a.q;
    const T* dout = (const T*)a.dout;
    const int d = s.head_dim;
    float dk[QOLA_MAX_HEAD_DIM], dv[QOLA_MAX_HEAD_DIM];
    for (int c = 0; c < d; ++c) dk[c] = dv[c] = 0.0f;
    for (int i = first_query(s, j); i < s.seqlen_q; ++i) {
        const float lse = a.lse[lse_index(s, b, h, i)];
        if (lse == -INFINITY) continue;
        float p, ds;
        p_and_ds<E>(a, b, h, i, j, lse, &p, &ds);
        const int64_t qo = offset(a.q_strides, b, i, h);
        const int64_t go = offset(a.dout_strides, b, i, h);
        for (int c = 0; c < d; ++c) {
            dv[c] += p * E::load(dout, go + c);
            dk[c] += ds * E::load(q, qo + c);
        }
    }
    const int64_t dko = offset(a.dk_strides, b, j, h);
    const int64_t dvo = offset(a.dv_strides, b, j, h);
    for (int c = 0; c < d; ++c) {
        E::store((T*)a.dk, dko + c, dk[c] * s.scale);
        E::store((T*)a.dv, dvo + c, dv[c]);
    }
}

QOLA_HD int64_t rows(const qola_mha_shape& s, int n) { return (int64_t)s.batch * s.nhead * n; }

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
#define QOLA_ROW_KERNEL(launcher, args_t, n_of, body)                                        \
    namespace {                                                                              \
    __global__ void launcher##_kernel(args_t a) {                                            \
        const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;                    \
        if (r < qola::rows(a.shape, a.shape.n_of)) body(a, r);                               \
    }                                                                                        \
    }                                                                                        \
    QOLA_LAUNCHER int launcher(const args_t* a, hipStream_t stream) {                        \
        const int64_t n = qola::rows(a->shape, a->shape.n_of);                               \
        hipLaunchKernelGGL(launcher##_kernel, qola_grid(n), dim3(QOLA_BLOCK), 0, stream, *a); \
        return (int)hipGetLastError();                                                       \
    }

#endif
