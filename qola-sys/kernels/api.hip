// The C API: argument checks and dispatch by element type.
#include "qola_mha_impl.hpp"

#define QOLA_API extern "C" __attribute__((visibility("default")))

static bool shape_ok(const qola_mha_shape& s) {
    return s.dtype >= QOLA_DTYPE_FP32 && s.dtype <= QOLA_DTYPE_BF16 && s.batch > 0 &&
           s.nhead > 0 && s.seqlen_q > 0 && s.seqlen_k > 0 && s.head_dim > 0 &&
           s.head_dim <= QOLA_MAX_HEAD_DIM && (s.causal == 0 || s.causal == 1) &&
           s.scale == s.scale;
}

QOLA_API int qola_mha_fwd(const qola_mha_fwd_args* a, hipStream_t stream) {
    if (!a || !shape_ok(a->shape) || !a->q || !a->k || !a->v || !a->o) {
        return (int)hipErrorInvalidValue;
    }
    switch (a->shape.dtype) {
        case QOLA_DTYPE_FP32: return qola_detail_fwd_fp32(a, stream);
        case QOLA_DTYPE_FP16: return qola_detail_fwd_fp16(a, stream);
        default: return qola_detail_fwd_bf16(a, stream);
    }
}

QOLA_API size_t qola_mha_bwd_workspace_size(const qola_mha_bwd_args* a) {
    if (!a || !shape_ok(a->shape)) return 0;
    return (size_t)a->shape.batch * a->shape.nhead * a->shape.seqlen_q * sizeof(float);
}

QOLA_API int qola_mha_bwd(const qola_mha_bwd_args* a, hipStream_t stream) {
    if (!a || !shape_ok(a->shape) || !a->q || !a->k || !a->v || !a->o || !a->dout || !a->lse ||
        !a->dq || !a->dk || !a->dv || !a->workspace) {
        return (int)hipErrorInvalidValue;
    }
    int status;
    switch (a->shape.dtype) {
        case QOLA_DTYPE_FP32:
            if ((status = qola_detail_bwd_delta_fp32(a, stream))) return status;
            if ((status = qola_detail_bwd_dq_fp32(a, stream))) return status;
            return qola_detail_bwd_dkdv_fp32(a, stream);
        case QOLA_DTYPE_FP16:
            if ((status = qola_detail_bwd_delta_fp16(a, stream))) return status;
            if ((status = qola_detail_bwd_dq_fp16(a, stream))) return status;
            return qola_detail_bwd_dkdv_fp16(a, stream);
        default:
            if ((status = qola_detail_bwd_delta_bf16(a, stream))) return status;
            if ((status = qola_detail_bwd_dq_bf16(a, stream))) return status;
            return qola_detail_bwd_dkdv_bf16(a, stream);
    }
}
