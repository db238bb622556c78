// The argument rules of qola_mha.h, checked on the host before anything is launched, shared by
// the built-in kernels, the AITER wrappers and the CPU emulator. Each rule names the field it
// guards (QOLA_MHA_FIELD_*); backends add what they cannot serve as QOLA_MHA_STATUS_UNSUPPORTED.
#pragma once

#include <math.h>
#include <string.h>

#include <algorithm>

#include "qola_mha.h"

namespace qola_check {

inline int invalid(qola_mha_field f) { return QOLA_MHA_STATUS_INVALID + (int)f; }
inline int unsupported(qola_mha_field f) { return QOLA_MHA_STATUS_UNSUPPORTED + (int)f; }

// Copies the caller's struct into `out` once its `size` is one this library knows. Today that is
// this header's only version; a later version appends fields, accepts this size too, and copies
// `size` bytes into a zeroed struct, so an older caller's missing fields read as zero ("off"). A
// size from a newer header is refused: its fields would be ignored silently.
template <typename Args>
int copy_sized(const Args* in, Args* out) {
    if (!in) return invalid(QOLA_MHA_FIELD_ARGS);
    if (in->size != sizeof(Args)) return invalid(QOLA_MHA_FIELD_SIZE);
    memcpy((void*)out, (const void*)in, sizeof(Args));
    return 0;
}

struct Dim {
    long long extent;
    long long stride;
};

// Whether distinct indices of the dims (extents >= 1, strides >= 0) give distinct offsets, with
// a dims' contiguous innermost dimension of `inner` elements: sorted by stride, each stride must
// pass the whole span of the smaller ones.
inline bool disjoint(Dim* dims, int n, long long inner) {
    std::sort(dims, dims + n, [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
    __int128 span = inner;
    for (int i = 0; i < n; ++i) {
        if (dims[i].extent <= 1) continue;
        if ((__int128)dims[i].stride < span) return false;
        span += (__int128)(dims[i].extent - 1) * dims[i].stride;
    }
    return span < ((__int128)1 << 62);
}

inline bool non_negative(const qola_tensor_strides& s) { return s.batch >= 0 && s.seq >= 0 && s.head >= 0; }
inline bool non_negative(const qola_matrix_strides& s) { return s.batch >= 0 && s.head >= 0 && s.row >= 0; }

inline bool group(const qola_mha_problem& p) { return p.mode == QOLA_MHA_MODE_GROUP; }

// An input tensor's strides: >= 0, no batch stride in group mode.
inline bool input_ok(const qola_mha_problem& p, const qola_tensor_strides& s) {
    return non_negative(s) && (!group(p) || s.batch == 0);
}

// An output [batch, rows, heads, hdim] tensor: additionally no two elements at one address.
inline bool output_ok(const qola_mha_problem& p, const qola_tensor_strides& s, int rows, int heads, int hdim) {
    if (!input_ok(p, s)) return false;
    Dim dims[3] = {{group(p) ? 1 : p.batch, s.batch}, {rows, s.seq}, {heads, s.head}};
    return disjoint(dims, 3, hdim);
}

// A [batch, nhead_q, seqlen_q, columns] matrix (bias, dbias, randval).
inline bool matrix_ok(const qola_mha_problem& p, const qola_matrix_strides& s, bool written) {
    if (!non_negative(s) || (group(p) && s.batch != 0)) return false;
    if (!written) return true;
    const int columns = group(p) ? p.max_seqlen_k : p.seqlen_k;
    Dim dims[3] = {{group(p) ? 1 : p.batch, s.batch}, {p.nhead_q, s.head}, {p.seqlen_q, s.row}};
    return disjoint(dims, 3, columns);
}

inline bool lse_ok(const qola_mha_problem& p, const qola_matrix_strides& s) {
    if (!non_negative(s) || s.row != 0 || (group(p) && s.batch != 0)) return false;
    Dim dims[2] = {{group(p) ? 1 : p.batch, s.batch}, {p.nhead_q, s.head}};
    return disjoint(dims, 2, p.seqlen_q);
}

inline bool finite(float x) { return x == x && x - x == 0.0f; }

// The rules of the problem itself.
inline int check_problem(const qola_mha_problem& p) {
    if (p.dtype < QOLA_DTYPE_FP32 || p.dtype > QOLA_DTYPE_BF16) return invalid(QOLA_MHA_FIELD_DTYPE);
    if (p.mode != QOLA_MHA_MODE_BATCH && p.mode != QOLA_MHA_MODE_GROUP) return invalid(QOLA_MHA_FIELD_MODE);
    if (p.batch < 1) return invalid(QOLA_MHA_FIELD_BATCH);
    if (p.nhead_k < 1) return invalid(QOLA_MHA_FIELD_NHEAD_K);
    if (p.nhead_q < 1 || p.nhead_q % p.nhead_k != 0) return invalid(QOLA_MHA_FIELD_NHEAD_Q);
    if (p.seqlen_q < 1) return invalid(QOLA_MHA_FIELD_SEQLEN_Q);
    if (p.seqlen_k < 1) return invalid(QOLA_MHA_FIELD_SEQLEN_K);
    if (group(p) ? (p.max_seqlen_q < 1 || p.max_seqlen_q > p.seqlen_q)
                 : (p.max_seqlen_q != 0 && p.max_seqlen_q != p.seqlen_q))
        return invalid(QOLA_MHA_FIELD_MAX_SEQLEN_Q);
    if (group(p) ? (p.max_seqlen_k < 1 || p.max_seqlen_k > p.seqlen_k)
                 : (p.max_seqlen_k != 0 && p.max_seqlen_k != p.seqlen_k))
        return invalid(QOLA_MHA_FIELD_MAX_SEQLEN_K);
    if (p.hdim_q < 1 || p.hdim_q > QOLA_MHA_MAX_HEAD_DIM) return invalid(QOLA_MHA_FIELD_HDIM_Q);
    if (p.hdim_v < 1 || p.hdim_v > QOLA_MHA_MAX_HEAD_DIM) return invalid(QOLA_MHA_FIELD_HDIM_V);
    if (p.mask_type < QOLA_MHA_MASK_NONE || p.mask_type > QOLA_MHA_MASK_BOTTOM_RIGHT)
        return invalid(QOLA_MHA_FIELD_MASK_TYPE);
    const bool masked = p.mask_type != QOLA_MHA_MASK_NONE;
    if (p.window_left < -1 || (!masked && p.window_left != -1)) return invalid(QOLA_MHA_FIELD_WINDOW_LEFT);
    if (p.window_right < -1 || (!masked && p.window_right != -1)) return invalid(QOLA_MHA_FIELD_WINDOW_RIGHT);
    if (p.bias_type < QOLA_MHA_BIAS_NONE || p.bias_type > QOLA_MHA_BIAS_ALIBI) return invalid(QOLA_MHA_FIELD_BIAS_TYPE);
    if (!finite(p.scale)) return invalid(QOLA_MHA_FIELD_SCALE);
    if (!finite(p.logits_soft_cap) || p.logits_soft_cap < 0.0f) return invalid(QOLA_MHA_FIELD_LOGITS_SOFT_CAP);
    const qola_mha_seqlens& s = p.seqlens;
    if (group(p) != (s.seqstart_q != nullptr)) return invalid(QOLA_MHA_FIELD_SEQSTART_Q);
    if (group(p) != (s.seqstart_k != nullptr)) return invalid(QOLA_MHA_FIELD_SEQSTART_K);
    if (s.seqlen_q && (!group(p) || s.cu_seqlen_q)) return invalid(QOLA_MHA_FIELD_SEQLEN_Q_PTR);
    if (s.seqlen_k && (!group(p) || s.cu_seqlen_k)) return invalid(QOLA_MHA_FIELD_SEQLEN_K_PTR);
    const qola_mha_dropout& d = p.dropout;
    if (!(d.p_drop >= 0.0f && d.p_drop < 1.0f)) return invalid(QOLA_MHA_FIELD_P_DROP);
    if (d.seed_offset_on_device != 0 && d.seed_offset_on_device != 1)
        return invalid(QOLA_MHA_FIELD_SEED_OFFSET_ON_DEVICE);
    const bool on_device = d.p_drop > 0.0f && d.seed_offset_on_device == 1;
    if (on_device != (d.seed_ptr != nullptr)) return invalid(QOLA_MHA_FIELD_SEED_PTR);
    if (on_device != (d.offset_ptr != nullptr)) return invalid(QOLA_MHA_FIELD_OFFSET_PTR);
    return 0;
}

// q, k, v, bias and ALiBi slopes: what forward and backward read alike.
template <typename Args>
int check_inputs(const Args& a) {
    const qola_mha_problem& p = a.problem;
    if (!a.q) return invalid(QOLA_MHA_FIELD_Q);
    if (!input_ok(p, a.q_strides)) return invalid(QOLA_MHA_FIELD_Q_STRIDES);
    if (!a.k) return invalid(QOLA_MHA_FIELD_K);
    if (!input_ok(p, a.k_strides)) return invalid(QOLA_MHA_FIELD_K_STRIDES);
    if (!a.v) return invalid(QOLA_MHA_FIELD_V);
    if (!input_ok(p, a.v_strides)) return invalid(QOLA_MHA_FIELD_V_STRIDES);
    if ((p.bias_type == QOLA_MHA_BIAS_ELEMENTWISE) != (a.bias != nullptr)) return invalid(QOLA_MHA_FIELD_BIAS);
    if (!matrix_ok(p, a.bias_strides, false)) return invalid(QOLA_MHA_FIELD_BIAS_STRIDES);
    if ((p.bias_type == QOLA_MHA_BIAS_ALIBI) != (a.alibi_slopes != nullptr))
        return invalid(QOLA_MHA_FIELD_ALIBI_SLOPES);
    if (a.alibi_slopes_batch_stride != 0 && a.alibi_slopes_batch_stride < p.nhead_q)
        return invalid(QOLA_MHA_FIELD_ALIBI_SLOPES_BATCH_STRIDE);
    return 0;
}

// Every rule of the forward; fills `a` from the caller's struct.
inline int check_fwd(const qola_mha_fwd_args* in, qola_mha_fwd_args* a) {
    int status = copy_sized(in, a);
    if (status) return status;
    const qola_mha_problem& p = a->problem;
    if ((status = check_problem(p)) || (status = check_inputs(*a))) return status;
    if (!a->o) return invalid(QOLA_MHA_FIELD_O);
    if (!output_ok(p, a->o_strides, p.seqlen_q, p.nhead_q, p.hdim_v)) return invalid(QOLA_MHA_FIELD_O_STRIDES);
    if (a->lse && !lse_ok(p, a->lse_strides)) return invalid(QOLA_MHA_FIELD_LSE_STRIDES);
    if (a->randval && p.dropout.p_drop == 0.0f) return invalid(QOLA_MHA_FIELD_RANDVAL);
    if (!matrix_ok(p, a->randval_strides, a->randval != nullptr)) return invalid(QOLA_MHA_FIELD_RANDVAL_STRIDES);
    return 0;
}

// Every rule of the backward; fills `a` from the caller's struct.
inline int check_bwd(const qola_mha_bwd_args* in, qola_mha_bwd_args* a) {
    int status = copy_sized(in, a);
    if (status) return status;
    const qola_mha_problem& p = a->problem;
    if ((status = check_problem(p))) return status;
    if (a->deterministic != 0 && a->deterministic != 1) return invalid(QOLA_MHA_FIELD_DETERMINISTIC);
    if ((status = check_inputs(*a))) return status;
    if (!a->o) return invalid(QOLA_MHA_FIELD_O);
    if (!input_ok(p, a->o_strides)) return invalid(QOLA_MHA_FIELD_O_STRIDES);
    if (!a->dout) return invalid(QOLA_MHA_FIELD_DOUT);
    if (!input_ok(p, a->dout_strides)) return invalid(QOLA_MHA_FIELD_DOUT_STRIDES);
    if (!a->lse) return invalid(QOLA_MHA_FIELD_LSE);
    if (!lse_ok(p, a->lse_strides)) return invalid(QOLA_MHA_FIELD_LSE_STRIDES);
    if (!a->dq) return invalid(QOLA_MHA_FIELD_DQ);
    if (!output_ok(p, a->dq_strides, p.seqlen_q, p.nhead_q, p.hdim_q)) return invalid(QOLA_MHA_FIELD_DQ_STRIDES);
    if (!a->dk) return invalid(QOLA_MHA_FIELD_DK);
    if (!output_ok(p, a->dk_strides, p.seqlen_k, p.nhead_k, p.hdim_q)) return invalid(QOLA_MHA_FIELD_DK_STRIDES);
    if (!a->dv) return invalid(QOLA_MHA_FIELD_DV);
    if (!output_ok(p, a->dv_strides, p.seqlen_k, p.nhead_k, p.hdim_v)) return invalid(QOLA_MHA_FIELD_DV_STRIDES);
    if (a->dbias && p.bias_type != QOLA_MHA_BIAS_ELEMENTWISE) return invalid(QOLA_MHA_FIELD_DBIAS);
    if (!matrix_ok(p, a->dbias_strides, a->dbias != nullptr)) return invalid(QOLA_MHA_FIELD_DBIAS_STRIDES);
    return 0;
}

// The workspace check, once its size is known.
inline int check_workspace(const qola_mha_bwd_args& a, size_t bytes) {
    return bytes != 0 && !a.workspace ? invalid(QOLA_MHA_FIELD_WORKSPACE) : 0;
}

}  // namespace qola_check
