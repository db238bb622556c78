/* qola's GEMM API (C): AITER's a4w4 (FP4) GEMMs for gfx950, served with QOLA_KERNELS=aiter when
 * the manifest's modules include libgemm_a4w4_blockscale (composable_kernel's MX instances) and
 * libgemm_a4w4_asm (AITER's f4gemm code objects); see qola-sys's docs.
 *
 * Model. out[m, n] = sum over k of A(m, k) * B(n, k), where A(m, k) = fp4(a, m, k) *
 * 2^(a_scale[m, k / 32] - 127) and B likewise with b and b_scale (one e8m0 scale per 32 values of
 * a row); the asm GEMM computes alpha * that + beta * bias[m, n] (bias fp32, or none).
 *
 * Layouts. Every matrix is row-major in device memory: `rows` x `cols` elements, `row_stride`
 * elements from one row to the next (>= cols), contiguous columns. An FP4X2 element is one byte
 * holding two e2m1 values (the low nibble first), so a and b are [M, K/2] and [N, K/2]; b is in
 * the preshuffled layout AITER's shuffle_weight writes (the blockscale GEMM always, the asm GEMM
 * when b_preshuffled is 1). a_scale and b_scale are E8M0 [>= M, K/32] and [>= N, K/32] (AITER
 * pads and shuffles them), out is [M, N].
 *
 * Every function returns a status: 0 on success, a HIP error code (< 1000) from the runtime,
 * QOLA_GEMM_STATUS_INVALID + field / QOLA_GEMM_STATUS_UNSUPPORTED + field, which
 * qola_gemm_status_string names, or QOLA_GEMM_STATUS_KERNEL_ERROR (AITER refused at the call;
 * its message is written to standard error). Arguments are checked before anything is launched.
 */
#ifndef QOLA_GEMM_H
#define QOLA_GEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* hipStream_t is `struct ihipStream_t*`; declared here so this header needs no HIP headers. */
struct ihipStream_t;

/* Element types. */
typedef enum qola_gemm_dtype {
    QOLA_GEMM_DTYPE_FP4X2 = 0, /* two e2m1 values in a byte */
    QOLA_GEMM_DTYPE_E8M0 = 1,  /* a power-of-two scale, biased by 127 */
    QOLA_GEMM_DTYPE_BF16 = 2,
    QOLA_GEMM_DTYPE_FP16 = 3,
    QOLA_GEMM_DTYPE_FP32 = 4,
} qola_gemm_dtype;

/* A row-major matrix in device memory (see Layouts). */
typedef struct qola_gemm_matrix {
    void* data;
    int64_t rows;
    int64_t cols;
    int64_t row_stride; /* in elements, >= cols */
    int32_t dtype;      /* a qola_gemm_dtype */
} qola_gemm_matrix;

/* The arguments of both a4w4 GEMMs; set `size` with QOLA_GEMM_A4W4_ARGS_INIT. */
typedef struct qola_gemm_a4w4_args {
    uint32_t size; /* sizeof(qola_gemm_a4w4_args) as the caller was compiled (QOLA_GEMM_A4W4_ARGS_INIT) */
    qola_gemm_matrix a;       /* [M, K/2] FP4X2 */
    qola_gemm_matrix b;       /* [N, K/2] FP4X2 */
    qola_gemm_matrix a_scale; /* [>= M, >= K/32] E8M0 */
    qola_gemm_matrix b_scale; /* [>= N, >= K/32] E8M0 */
    qola_gemm_matrix out;     /* [M, N]: BF16 or FP16 (blockscale), BF16 (asm) */
    qola_gemm_matrix bias;    /* asm only, data NULL for none: [M, N] FP32 */
    float alpha;              /* asm only */
    float beta;               /* asm only */
    int32_t b_preshuffled;    /* asm only: 1 when b is preshuffled, else 0 */
    int32_t log2_k_split;     /* K in 2^log2_k_split batches; asm: -1 lets the heuristic choose */
    const char* kernel_name;  /* NULL or "": the tuned or heuristic choice; else one of this build's */
    int32_t device;           /* the device holding the data; -1: the current one */
} qola_gemm_a4w4_args;

#define QOLA_GEMM_A4W4_ARGS_INIT {sizeof(qola_gemm_a4w4_args)}

/* Statuses: 0, a HIP error (< 1000), a base below plus the field (QOLA_GEMM_FIELD_*), or the
 * kernel's own refusal. A matrix whose offsets do not fit in 32 bits (the kernels' index) is
 * UNSUPPORTED + its field. */
#define QOLA_GEMM_STATUS_SUCCESS 0
#define QOLA_GEMM_STATUS_INVALID 1000     /* the field's value breaks the rules documented above */
#define QOLA_GEMM_STATUS_UNSUPPORTED 2000 /* valid, but no kernel of this build serves it */
#define QOLA_GEMM_STATUS_KERNEL_ERROR 3000

/* The fields a status names; qola_gemm_status_string gives the name and the rule. */
#define QOLA_GEMM_FIELDS(X)                                                                     \
    X(ARGS, 0, "args", "must not be NULL")                                                      \
    X(SIZE, 1, "size", "must be sizeof the args struct of a qola version this library knows")   \
    X(A, 2, "a", "FP4X2, data set, rows and cols >= 1, row_stride >= cols")                     \
    X(B, 3, "b", "FP4X2, data set, cols = a.cols, rows >= 1, row_stride >= cols")               \
    X(K, 4, "a.cols", "K = 2 * a.cols must be a multiple of 32 (one scale per 32 values)")       \
    X(A_SCALE, 5, "a_scale", "E8M0, data set, rows >= M, cols >= K/32, row_stride >= cols")      \
    X(B_SCALE, 6, "b_scale", "E8M0, data set, rows >= N, cols >= K/32, row_stride >= cols")      \
    X(OUT, 7, "out", "data set, rows = M, cols = N, row_stride >= cols")                        \
    X(BIAS, 8, "bias", "data NULL, or FP32 with rows = M, cols = N, row_stride >= cols")        \
    X(B_PRESHUFFLED, 9, "b_preshuffled", "must be 0 or 1")                                      \
    X(LOG2_K_SPLIT, 10, "log2_k_split", ">= 0 (asm: or -1), and 2^log2_k_split must divide K") \
    X(KERNEL_NAME, 11, "kernel_name", "NULL, empty, or a kernel of this build")

#define QOLA_GEMM_FIELD_ENUM(name, value, text, rule) QOLA_GEMM_FIELD_##name = value,
typedef enum qola_gemm_field { QOLA_GEMM_FIELDS(QOLA_GEMM_FIELD_ENUM) QOLA_GEMM_FIELD_COUNT } qola_gemm_field;
#undef QOLA_GEMM_FIELD_ENUM

/* out = A * B^T with block scales, by composable_kernel's instances (the tuned one for the
 * shape, the default one, or kernel_name). bias, alpha, beta and b_preshuffled are not read. */
int qola_gemm_a4w4_blockscale(const qola_gemm_a4w4_args* args, struct ihipStream_t* stream);

/* The status qola_gemm_a4w4_blockscale would return before launching anything. */
int qola_gemm_a4w4_blockscale_check(const qola_gemm_a4w4_args* args);

/* out = alpha * A * B^T + beta * bias, by AITER's f4gemm code objects (the heuristic's choice
 * for the shape and this GPU, or kernel_name). */
int qola_gemm_a4w4_asm(const qola_gemm_a4w4_args* args, struct ihipStream_t* stream);

/* The status qola_gemm_a4w4_asm would return before launching anything. */
int qola_gemm_a4w4_asm_check(const qola_gemm_a4w4_args* args);

/* A static string: "success", "<field>: invalid: <rule>", "<field>: not supported by this
 * build's kernels", the kernel's refusal, or, for a HIP error, a note that hipGetErrorString
 * names it. */
const char* qola_gemm_status_string(int status);

#ifdef __cplusplus
}
#endif

#endif /* QOLA_GEMM_H */
