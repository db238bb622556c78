// What qola's AITER wrappers share: the rules AITER's kernels add to qola_mha.h's (statuses
// QOLA_MHA_STATUS_UNSUPPORTED + field), and the mapping of qola's fields onto AITER's
// (README "AITER backend": the table of our field -> theirs).
#pragma once

#include "aiter_hip_common.h"
#include "bias.hpp"
#include "mask.hpp"
#include "qola_mha.h"
#include "qola_mha_check.hpp"

#include <hip/hip_runtime.h>

#include <exception>
#include <utility>

namespace qola_aiter {

using qola_check::unsupported;

// CK's index_t is 32-bit: every stride and every element offset must fit.
inline bool fits(int64_t v) { return v >= -2147483648LL && v <= 2147483647LL; }
inline bool fits(const qola_tensor_strides& s) { return fits(s.batch) && fits(s.seq) && fits(s.head); }
inline bool fits(const qola_matrix_strides& s) { return fits(s.batch) && fits(s.head) && fits(s.row); }

// What the forward and the backward cannot serve alike.
template <typename Args>
int check_common(const Args& a) {
    const qola_mha_problem& p = a.problem;
    // AITER's kernels are fp16 and bf16 (fp32 is not built by any receipt qola uses).
    if (p.dtype == QOLA_DTYPE_FP32) return unsupported(QOLA_MHA_FIELD_DTYPE);
    if (!fits(a.q_strides)) return unsupported(QOLA_MHA_FIELD_Q_STRIDES);
    if (!fits(a.k_strides)) return unsupported(QOLA_MHA_FIELD_K_STRIDES);
    if (!fits(a.v_strides)) return unsupported(QOLA_MHA_FIELD_V_STRIDES);
    if (!fits(a.bias_strides)) return unsupported(QOLA_MHA_FIELD_BIAS_STRIDES);
    if (!fits(a.o_strides)) return unsupported(QOLA_MHA_FIELD_O_STRIDES);
    if (!fits(a.lse_strides)) return unsupported(QOLA_MHA_FIELD_LSE_STRIDES);
    if (!fits(a.alibi_slopes_batch_stride)) return unsupported(QOLA_MHA_FIELD_ALIBI_SLOPES_BATCH_STRIDE);
    return 0;
}

inline const char* dtype(const qola_mha_problem& p) { return p.dtype == QOLA_DTYPE_FP16 ? "fp16" : "bf16"; }

// qola_mha_mask_type and qola_mha_bias_type take CK's enum values.
inline mask_enum mask(const qola_mha_problem& p) { return (mask_enum)p.mask_type; }
inline bias_enum bias(const qola_mha_problem& p) { return (bias_enum)p.bias_type; }

inline ck_tile::index_t idx(int64_t v) { return (ck_tile::index_t)v; }

// AITER's asm (v3) kernels take padded sequences only through their own arguments, not CK's
// seqlen / cu_seqlen pointers: with those, only CK's kernels are asked.
inline bool padded(const qola_mha_problem& p) {
    const qola_mha_seqlens& s = p.seqlens;
    return s.seqlen_q || s.seqlen_k || s.cu_seqlen_q || s.cu_seqlen_k;
}

// The fields CK's forward and backward args share: sizes, sequences, masks, dropout.
template <typename CkArgs>
void fill_problem(const qola_mha_problem& p, CkArgs& args) {
    args.seqstart_q_ptr  = p.seqlens.seqstart_q;
    args.seqstart_k_ptr  = p.seqlens.seqstart_k;
    args.seqlen_q_ptr    = p.seqlens.seqlen_q;
    args.seqlen_k_ptr    = p.seqlens.seqlen_k;
    args.cu_seqlen_q_ptr = p.seqlens.cu_seqlen_q;
    args.cu_seqlen_k_ptr = p.seqlens.cu_seqlen_k;
    args.seqlen_q        = p.seqlen_q;
    args.seqlen_k        = p.seqlen_k;
    args.batch           = p.batch;
    args.max_seqlen_q    = p.mode == QOLA_MHA_MODE_GROUP ? p.max_seqlen_q : p.seqlen_q;
    args.hdim_q          = p.hdim_q;
    args.hdim_v          = p.hdim_v;
    args.nhead_q         = p.nhead_q;
    args.nhead_k         = p.nhead_k;
    args.window_size_left  = p.window_left;
    args.window_size_right = p.window_right;
    args.mask_type         = p.mask_type;
    args.p_drop            = p.dropout.p_drop;
    if(p.dropout.seed_offset_on_device)
        args.drop_seed_offset = std::make_pair((const void*)p.dropout.seed_ptr, (const void*)p.dropout.offset_ptr);
    else
        args.drop_seed_offset = std::make_pair(p.dropout.seed, p.dropout.offset);
}

// What CK's forward and backward args share beyond the problem: q, k, v, o and the bias (for
// ALiBi, CK reads slope [b * stride_bias + h] from bias_ptr).
template <typename Args, typename CkArgs>
void fill_tensors(const Args& a, CkArgs& args) {
    args.q_ptr          = a.q;
    args.k_ptr          = a.k;
    args.v_ptr          = a.v;
    args.o_ptr          = a.o;
    args.stride_q       = idx(a.q_strides.seq);
    args.stride_k       = idx(a.k_strides.seq);
    args.stride_v       = idx(a.v_strides.seq);
    args.stride_o       = idx(a.o_strides.seq);
    args.nhead_stride_q = idx(a.q_strides.head);
    args.nhead_stride_k = idx(a.k_strides.head);
    args.nhead_stride_v = idx(a.v_strides.head);
    args.nhead_stride_o = idx(a.o_strides.head);
    args.batch_stride_q = idx(a.q_strides.batch);
    args.batch_stride_k = idx(a.k_strides.batch);
    args.batch_stride_v = idx(a.v_strides.batch);
    args.batch_stride_o = idx(a.o_strides.batch);
    if (a.problem.bias_type == QOLA_MHA_BIAS_ALIBI) {
        args.bias_ptr    = a.alibi_slopes;
        args.stride_bias = idx(a.alibi_slopes_batch_stride);
    } else {
        args.bias_ptr          = a.bias;
        args.stride_bias       = idx(a.bias_strides.row);
        args.nhead_stride_bias = idx(a.bias_strides.head);
        args.batch_stride_bias = idx(a.bias_strides.batch);
    }
}

// The status of an AITER launch: its launchers return a time, negative when no kernel of this
// build serves the arguments ("traits": build more variants).
inline int status(float time) {
    return time < 0 ? QOLA_MHA_STATUS_UNSUPPORTED + QOLA_MHA_FIELD_TRAITS : (int)hipGetLastError();
}

// Runs an AITER launch and returns its status. qola's series makes AITER throw instead of
// ending the process (aiter_hip_error: a failing HIP call, a code object neither embedded for
// this GPU nor under AITER_ASM_DIR); the C API returns that as the HIP error code.
template <typename Launch>
int call(Launch launch) {
    try {
        return status(launch());
    } catch (const aiter_hip_error& e) {
        return (int)e.code;
    } catch (const std::exception&) {
        return (int)hipErrorUnknown;
    }
}

}  // namespace qola_aiter
