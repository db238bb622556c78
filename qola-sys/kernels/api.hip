// The C API of the built-in kernels: the checks of qola_mha_check.hpp, then dispatch by element
// type. Every dtype, mode, mask, bias, dropout and head-dim combination qola_mha.h allows is
// served, so no status here is QOLA_MHA_STATUS_UNSUPPORTED.
#include "qola_mha_check.hpp"
#include "qola_mha_impl.hpp"

#define QOLA_API extern "C" __attribute__((visibility("default")))

QOLA_API int qola_mha_fwd_check(const qola_mha_fwd_args* in) {
    qola_mha_fwd_args a;
    return qola_check::check_fwd(in, &a);
}

QOLA_API int qola_mha_fwd(const qola_mha_fwd_args* in, hipStream_t stream) {
    qola_mha_fwd_args a;
    if (int status = qola_check::check_fwd(in, &a)) return status;
    switch (a.problem.dtype) {
        case QOLA_DTYPE_FP32: return qola_detail_fwd_fp32(&a, stream);
        case QOLA_DTYPE_FP16: return qola_detail_fwd_fp16(&a, stream);
        default: return qola_detail_fwd_bf16(&a, stream);
    }
}

QOLA_API int qola_mha_bwd_workspace_size(const qola_mha_bwd_args* in, size_t* bytes) {
    qola_mha_bwd_args a;
    if (int status = qola_check::check_bwd(in, &a)) return status;
    if (bytes) *bytes = qola::bwd_workspace_bytes(a.problem);
    return 0;
}

QOLA_API int qola_mha_bwd_check(const qola_mha_bwd_args* in) {
    qola_mha_bwd_args a;
    if (int status = qola_check::check_bwd(in, &a)) return status;
    return qola_check::check_workspace(a, qola::bwd_workspace_bytes(a.problem));
}

QOLA_API int qola_mha_bwd(const qola_mha_bwd_args* in, hipStream_t stream) {
    if (int status = qola_mha_bwd_check(in)) return status;
    const qola_mha_bwd_args& a = *in;
    int status;
    switch (a.problem.dtype) {
        case QOLA_DTYPE_FP32:
            if ((status = qola_detail_bwd_delta_fp32(&a, stream))) return status;
            if ((status = qola_detail_bwd_dq_fp32(&a, stream))) return status;
            return qola_detail_bwd_dkdv_fp32(&a, stream);
        case QOLA_DTYPE_FP16:
            if ((status = qola_detail_bwd_delta_fp16(&a, stream))) return status;
            if ((status = qola_detail_bwd_dq_fp16(&a, stream))) return status;
            return qola_detail_bwd_dkdv_fp16(&a, stream);
        default:
            if ((status = qola_detail_bwd_delta_bf16(&a, stream))) return status;
            if ((status = qola_detail_bwd_dq_bf16(&a, stream))) return status;
            return qola_detail_bwd_dkdv_bf16(&a, stream);
    }
}
