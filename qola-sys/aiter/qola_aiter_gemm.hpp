// What qola's a4w4 GEMM wrappers share (QOLA_KERNELS=aiter): qola_gemm.h's rules, the matrices
// as AITER's aiter_tensor_t (patch 0007), and AITER's refusals as statuses.
#pragma once

#include "aiter_hip_common.h"
#include "aiter_tensor.h"
#include "qola_gemm.h"

#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstring>
#include <exception>

namespace qola_gemm {

inline int invalid(qola_gemm_field f) { return QOLA_GEMM_STATUS_INVALID + f; }
inline int unsupported(qola_gemm_field f) { return QOLA_GEMM_STATUS_UNSUPPORTED + f; }

// A matrix's own rules: data set, the dtype, at least one row and column, rows not overlapping.
inline bool valid(const qola_gemm_matrix& m, qola_gemm_dtype dtype) {
    return m.data != nullptr && m.dtype == dtype && m.rows >= 1 && m.cols >= 1 && m.row_stride >= m.cols;
}

// The kernels index in 32 bits (FP4X2 strides count values, twice the bytes).
inline bool fits(const qola_gemm_matrix& m) {
    const int64_t scale = m.dtype == QOLA_GEMM_DTYPE_FP4X2 ? 2 : 1;
    return m.rows <= 2147483647LL / scale && m.row_stride <= 2147483647LL / scale &&
           m.rows * m.row_stride <= 2147483647LL;
}

// The rules both GEMMs share; `out_ok` says which output dtypes the kernel serves. The caller's
// struct is copied into `a` once its size is known (qola_mha.h's scheme).
template <typename OutOk>
int check_common(const qola_gemm_a4w4_args* in, qola_gemm_a4w4_args* a, OutOk out_ok) {
    if (in == nullptr) return invalid(QOLA_GEMM_FIELD_ARGS);
    if (in->size != sizeof(qola_gemm_a4w4_args)) return invalid(QOLA_GEMM_FIELD_SIZE);
    std::memcpy((void*)a, (const void*)in, sizeof(*a));
    if (!valid(a->a, QOLA_GEMM_DTYPE_FP4X2)) return invalid(QOLA_GEMM_FIELD_A);
    if (!valid(a->b, QOLA_GEMM_DTYPE_FP4X2) || a->b.cols != a->a.cols) return invalid(QOLA_GEMM_FIELD_B);
    const int64_t m = a->a.rows, n = a->b.rows, k = 2 * a->a.cols;
    if (k % 32 != 0) return invalid(QOLA_GEMM_FIELD_K);
    if (!valid(a->a_scale, QOLA_GEMM_DTYPE_E8M0) || a->a_scale.rows < m || a->a_scale.cols < k / 32)
        return invalid(QOLA_GEMM_FIELD_A_SCALE);
    if (!valid(a->b_scale, QOLA_GEMM_DTYPE_E8M0) || a->b_scale.rows < n || a->b_scale.cols < k / 32)
        return invalid(QOLA_GEMM_FIELD_B_SCALE);
    const qola_gemm_matrix& out = a->out;
    if (out.data == nullptr || out.rows != m || out.cols != n || out.row_stride < out.cols)
        return invalid(QOLA_GEMM_FIELD_OUT);
    if (!out_ok(out.dtype)) return unsupported(QOLA_GEMM_FIELD_OUT);
    const struct {
        const qola_gemm_matrix* matrix;
        qola_gemm_field field;
    } matrices[] = {{&a->a, QOLA_GEMM_FIELD_A},
                    {&a->b, QOLA_GEMM_FIELD_B},
                    {&a->a_scale, QOLA_GEMM_FIELD_A_SCALE},
                    {&a->b_scale, QOLA_GEMM_FIELD_B_SCALE},
                    {&a->out, QOLA_GEMM_FIELD_OUT}};
    for (const auto& entry : matrices)
        if (!fits(*entry.matrix)) return unsupported(entry.field);
    return 0;
}

// The name the caller asked for ("" for none).
inline const char* kernel_name(const qola_gemm_a4w4_args& a) { return a.kernel_name ? a.kernel_name : ""; }

inline AiterDtype aiter_dtype(int32_t dtype) {
    switch (dtype) {
        case QOLA_GEMM_DTYPE_FP4X2: return AITER_DTYPE_fp4x2;
        case QOLA_GEMM_DTYPE_E8M0: return AITER_DTYPE_fp8_e8m0;
        case QOLA_GEMM_DTYPE_BF16: return AITER_DTYPE_bf16;
        case QOLA_GEMM_DTYPE_FP16: return AITER_DTYPE_fp16;
        default: return AITER_DTYPE_fp32;
    }
}

// A matrix as AITER's tensor: the caller's memory, two dimensions, on `device`.
inline aiter_tensor_t tensor(const qola_gemm_matrix& m, int32_t device) {
    aiter_tensor_t t{};
    t.ptr = m.data;
    t.ndim = 2;
    t.shape[0] = m.rows;
    t.shape[1] = m.cols;
    t.strides[0] = m.row_stride;
    t.strides[1] = 1;
    t.numel_ = (size_t)(m.rows * m.cols);
    t.dtype_ = aiter_dtype(m.dtype);
    t.device_id = device;
    return t;
}

// Runs an AITER call and returns its status: a failing HIP call (aiter_hip_error, qola's series)
// is its HIP error code, any other refusal (AITER_CHECK) QOLA_GEMM_STATUS_KERNEL_ERROR, its
// message on standard error.
template <typename Call>
int call(const char* what, Call run) {
    try {
        run();
        return (int)hipGetLastError();
    } catch (const aiter_hip_error& e) {
        return (int)e.code;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", what, e.what());
        return QOLA_GEMM_STATUS_KERNEL_ERROR;
    }
}

}  // namespace qola_gemm

#define QOLA_GEMM_API extern "C" __attribute__((visibility("default")))
