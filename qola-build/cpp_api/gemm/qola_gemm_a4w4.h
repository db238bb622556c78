/* qola's C interface over AITER's a4w4 (FP4) GEMMs, QoLA's newest form: plain C types, an
 * `int` status and a caller's error buffer, so a caller needs neither AITER's headers nor
 * C++ exceptions. The blockscale GEMM is in libgemm_a4w4_blockscale (composable_kernel's MX
 * instances), the asm GEMM in libgemm_a4w4_asm (the f4gemm code objects); both gfx950.
 *
 * Every function returns 0 on success and 1 on failure: what qola refuses (a null descriptor, a
 * dtype or rank it does not know) and every error AITER raises or reports; the reason is
 * written, NUL-terminated and cut to fit, into err_buf when err_buf is not NULL and
 * err_buf_size is not 0.
 *
 * With a namespace `te` the functions are qola_te_gemm_a4w4_blockscale and
 * qola_te_gemm_a4w4_asm (QOLA_C). A C++ caller that also has the prepared tree's csrc/include
 * on its include path gets qola's C++ API of these GEMMs from this header too (the one TE's
 * callers before its C interface use: qola_gemm_a4w4_blockscale.h, qola_gemm_a4w4_asm.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "qola_common.h"

/* The element types (values are the ABI: callers compare them with their own). */
typedef enum {
    QOLA_DTYPE_FP4X2 = 0, /* two FP4 (E2M1) values per byte */
    QOLA_DTYPE_E8M0 = 1,  /* an 8-bit exponent-only microscale */
    QOLA_DTYPE_BF16 = 2,
    QOLA_DTYPE_FP16 = 3,
    QOLA_DTYPE_FP32 = 4,
    QOLA_DTYPE_U8 = 5,
    QOLA_DTYPE_I8 = 6,
} qola_dtype_t;

/* A tensor in device memory: up to 8 dimensions, sizes and strides in elements (an FP4X2
 * element is a byte). The layout is the ABI: 152 bytes, no padding. */
typedef struct {
    void *ptr;
    int32_t ndim;
    int32_t dtype; /* a qola_dtype_t */
    int32_t device_id;
    int32_t reserved; /* 0 */
    int64_t shape[8];
    int64_t strides[8];
} qola_tensor_t;

QOLA_C_BEGIN

/* Y = XQ * WQ^T with per-1x32 e8m0 block scales: XQ [M, K/2] and WQ [N, K/2] FP4X2 (WQ
 * preshuffled), x_scale [M, K/32] and w_scale [N, K/32] E8M0, Y [M, N] BF16 or FP16, written in
 * place. split_k: log2 of the K batches. kernel_name: NULL or "" for the shape's tuned instance,
 * else an instance of the library by name. */
QOLA_EXPORT int QOLA_C(gemm_a4w4_blockscale)(const qola_tensor_t *XQ, const qola_tensor_t *WQ,
                                             const qola_tensor_t *x_scale,
                                             const qola_tensor_t *w_scale, const qola_tensor_t *Y,
                                             int split_k, const char *kernel_name,
                                             hipStream_t stream, char *err_buf,
                                             size_t err_buf_size);

/* out = alpha * A * B^T + beta * bias: A [M, K/2] and B [N, K/2] FP4X2 (B preshuffled when
 * bpreshuffle), a_scale [M, K/32] and b_scale [N, K/32] E8M0 (padded), out [M, N] BF16, bias
 * [M, N] FP32 or NULL. kernel_name NULL or "" and log2_k_split < 0: the heuristic's choice. */
QOLA_EXPORT int QOLA_C(gemm_a4w4_asm)(const qola_tensor_t *A, const qola_tensor_t *B,
                                      const qola_tensor_t *a_scale, const qola_tensor_t *b_scale,
                                      const qola_tensor_t *out, const qola_tensor_t *bias,
                                      const char *kernel_name, float alpha, float beta,
                                      int bpreshuffle, int log2_k_split, hipStream_t stream,
                                      char *err_buf, size_t err_buf_size);

QOLA_C_END

#if defined(__cplusplus) && defined(__has_include)
#if __has_include("aiter_tensor.h")
#include "qola_gemm_a4w4_asm.h"
#include "qola_gemm_a4w4_blockscale.h"
#endif
#endif
