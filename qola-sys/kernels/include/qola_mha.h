/* qola's attention API (C): multi-head attention forward and backward, served by qola's built-in
 * kernels or by AITER's CK and asm kernels (QOLA_KERNELS=aiter) behind the same functions.
 *
 * This header documents every field once; the Rust mirror (qola-sys) links here.
 *
 * Model. For each sequence b of the batch, query head h (kv head h / (nhead_q / nhead_k)), query
 * row i < Lq(b) and key row j < Lk(b) (the sequence's logical lengths):
 *
 *     x      = scale * dot(q[b,i,h,:], k[b,j,hk,:])
 *     s      = logits_soft_cap > 0 ? logits_soft_cap * tanh(x / logits_soft_cap) : x
 *     s     += bias[b,h,i,j]            (bias_type ELEMENTWISE)
 *     s     += alibi(b, h, i, j)        (bias_type ALIBI, see below)
 *     p      = exp(s - lse[b,h,i]),  lse = log(sum over visible j of exp(s))
 *     p'     = p * keep(b,h,i,j) / (1 - p_drop)   (dropout, see below; p' = p without it)
 *     o[b,i,h,:] = sum over visible j of p' * v[b,j,hk,:]
 *
 * A row that sees no key has o = 0 and lse = -inf. The backward writes dq, dk, dv (and dbias = the
 * gradient of s, when asked) of sum(o * dout); dk and dv of a kv head sum over its query heads.
 *
 * Masks (CK's, FlashAttention's left/right windows): with offset = 0 (TOP_LEFT) or
 * Lk(b) - Lq(b) (BOTTOM_RIGHT), query i sees key j when
 *     (window_left  < 0 || j >= i + offset - window_left) &&
 *     (window_right < 0 || j <= i + offset + window_right).
 * Causal is (window_left, window_right) = (-1, 0). NONE sees every key (both windows -1).
 *
 * ALiBi (CK's AlibiMode), slope = alibi_slopes[b * alibi_slopes_batch_stride + h]:
 *     causal mask ((-1, 0) windows):   + slope * j
 *     other windows, TOP_LEFT:         - slope * |i - j|
 *     other windows, BOTTOM_RIGHT,
 *     and no mask:                     - slope * |i + max(Lk-Lq, 0) - j - max(Lq-Lk, 0)|
 *
 * Dropout (CK's scheme, so both backends drop the same elements): element (i, j) of sequence b,
 * head h is kept when its random byte r <= floor((1 - p_drop) * 255). r is byte
 * 8 * ((i % 32) / 16) + i % 8 of Philox-4x32-7(key = seed, counter = (offset + (b * nhead_q + h)
 * * 64 + lane, subsequence = (i / 32) | (j / 32) << 32)), lane = 32 * ((i % 32) / 8 % 2) + j % 32,
 * its four 32-bit outputs read as 16 little-endian bytes.
 *
 * Layouts. Tensors are [batch, seqlen, nhead, hdim] in any layout whose hdim is contiguous: the
 * other strides are given in elements, all >= 0. In GROUP mode (packed variable-length sequences)
 * the batch strides are unused (set them to 0): sequence b starts at row seqstart_q[b] of q, o,
 * dout, dq, lse and of the rows of bias, dbias and randval, and at row seqstart_k[b] of k, v, dk,
 * dv. Elementwise bias, dbias and randval are [batch, nhead_q, seqlen_q, seqlen_k] with contiguous
 * columns. lse is float [batch, nhead_q, seqlen_q] with contiguous rows (GROUP: [nhead_q, rows]).
 *
 * Every function returns a status: 0 on success, a HIP error code (< 1000) from the runtime, or
 * QOLA_MHA_STATUS_INVALID + field / QOLA_MHA_STATUS_UNSUPPORTED + field, which
 * qola_mha_status_string names. Arguments are checked before anything is launched.
 */
#ifndef QOLA_MHA_H
#define QOLA_MHA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* hipStream_t is `struct ihipStream_t*`; declared here so this header needs no HIP headers. */
struct ihipStream_t;

/* Element types of q, k, v, o, bias and the gradients. lse, ALiBi slopes are float. */
typedef enum qola_dtype {
    QOLA_DTYPE_FP32 = 0,
    QOLA_DTYPE_FP16 = 1,
    QOLA_DTYPE_BF16 = 2
} qola_dtype;

typedef enum qola_mha_mode {
    QOLA_MHA_MODE_BATCH = 0, /* every sequence has seqlen_q / seqlen_k rows (cu_seqlen may shorten) */
    QOLA_MHA_MODE_GROUP = 1  /* packed sequences: seqstart_q / seqstart_k */
} qola_mha_mode;

/* The values of CK's mask_enum. */
typedef enum qola_mha_mask_type {
    QOLA_MHA_MASK_NONE = 0,
    QOLA_MHA_MASK_TOP_LEFT = 1,
    QOLA_MHA_MASK_BOTTOM_RIGHT = 2
} qola_mha_mask_type;

/* The values of CK's bias_enum. */
typedef enum qola_mha_bias_type {
    QOLA_MHA_BIAS_NONE = 0,
    QOLA_MHA_BIAS_ELEMENTWISE = 1,
    QOLA_MHA_BIAS_ALIBI = 2
} qola_mha_bias_type;

/* The largest hdim_q and hdim_v. */
#define QOLA_MHA_MAX_HEAD_DIM 256

/* Strides, in elements, of the batch, sequence and head dimensions (hdim is contiguous). */
typedef struct qola_tensor_strides {
    int64_t batch;
    int64_t seq;
    int64_t head;
} qola_tensor_strides;

/* Strides, in elements, of a [batch, nhead, rows, columns] matrix (columns contiguous); lse uses
 * batch and head only (rows contiguous). */
typedef struct qola_matrix_strides {
    int64_t batch;
    int64_t head;
    int64_t row;
} qola_matrix_strides;

/* Sequence lengths held in device memory (int32). Batch mode: cu_seqlen_q / cu_seqlen_k
 * ([batch + 1], cumulative logical lengths) may shorten each sequence; the others are NULL. Group
 * mode: seqstart_q / seqstart_k ([batch + 1], physical start rows, ascending) are required; a
 * sequence's logical length is seqlen_q[b] if given, else cu_seqlen_q[b+1] - cu_seqlen_q[b] if
 * given (not both), else its physical length (padding rows stay untouched). */
typedef struct qola_mha_seqlens {
    const int32_t* seqstart_q;
    const int32_t* seqstart_k;
    const int32_t* seqlen_q;
    const int32_t* seqlen_k;
    const int32_t* cu_seqlen_q;
    const int32_t* cu_seqlen_k;
} qola_mha_seqlens;

/* Dropout of the attention probabilities: p_drop in [0, 1), 0 = none. The Philox seed and offset
 * come by value, or (seed_offset_on_device = 1) from two device uint64 (seed_ptr, offset_ptr), as
 * an RNG state on the device gives them. */
typedef struct qola_mha_dropout {
    float p_drop;
    int32_t seed_offset_on_device;
    uint64_t seed;
    uint64_t offset;
    const uint64_t* seed_ptr;
    const uint64_t* offset_ptr;
} qola_mha_dropout;

/* What forward and backward share. */
typedef struct qola_mha_problem {
    int32_t dtype;        /* qola_dtype */
    int32_t mode;         /* qola_mha_mode */
    int32_t batch;        /* number of sequences, >= 1 */
    int32_t nhead_q;      /* query heads, a multiple of nhead_k (GQA / MQA) */
    int32_t nhead_k;      /* key/value heads, >= 1 */
    int32_t seqlen_q;     /* BATCH: rows per sequence; GROUP: rows of the packed q (all sequences) */
    int32_t seqlen_k;     /* the same for k and v */
    int32_t max_seqlen_q; /* GROUP: the longest logical query sequence; BATCH: 0 or seqlen_q */
    int32_t max_seqlen_k; /* GROUP: the longest logical key sequence; BATCH: 0 or seqlen_k */
    int32_t hdim_q;       /* head dim of q and k, 1 .. QOLA_MHA_MAX_HEAD_DIM */
    int32_t hdim_v;       /* head dim of v and o, 1 .. QOLA_MHA_MAX_HEAD_DIM */
    int32_t mask_type;    /* qola_mha_mask_type */
    int32_t window_left;  /* >= -1; -1 = unlimited (NONE: must be -1) */
    int32_t window_right; /* >= -1; -1 = unlimited (NONE: must be -1) */
    int32_t bias_type;    /* qola_mha_bias_type */
    float scale;          /* softmax scale, finite, usually 1 / sqrt(hdim_q) */
    float logits_soft_cap; /* 0 = none, > 0: the cap */
    qola_mha_seqlens seqlens;
    qola_mha_dropout dropout;
} qola_mha_problem;

/* Forward arguments. Pointers are device pointers. */
typedef struct qola_mha_fwd_args {
    uint32_t size; /* sizeof(qola_mha_fwd_args) as the caller was compiled (QOLA_MHA_FWD_ARGS_INIT) */
    qola_mha_problem problem;
    const void* q;
    qola_tensor_strides q_strides;
    const void* k;
    qola_tensor_strides k_strides;
    const void* v;
    qola_tensor_strides v_strides;
    const void* bias; /* ELEMENTWISE: dtype values; NULL otherwise */
    qola_matrix_strides bias_strides;
    const float* alibi_slopes; /* ALIBI: [batch or 1, nhead_q]; NULL otherwise */
    int64_t alibi_slopes_batch_stride; /* 0 (one set for every sequence) or >= nhead_q */
    void* o;
    qola_tensor_strides o_strides;
    float* lse; /* may be NULL (not written) */
    qola_matrix_strides lse_strides; /* batch (0 in GROUP mode) and head; row is unused, 0 */
    uint8_t* randval; /* dropout only, may be NULL: each element's random byte (CK's s_randval) */
    qola_matrix_strides randval_strides;
} qola_mha_fwd_args;

/* Backward arguments. Pointers are device pointers. */
typedef struct qola_mha_bwd_args {
    uint32_t size; /* sizeof(qola_mha_bwd_args) as the caller was compiled (QOLA_MHA_BWD_ARGS_INIT) */
    qola_mha_problem problem;
    int32_t deterministic; /* 0 or 1: the same bits on every run (AITER: split dq accumulation) */
    const void* q;
    qola_tensor_strides q_strides;
    const void* k;
    qola_tensor_strides k_strides;
    const void* v;
    qola_tensor_strides v_strides;
    const void* bias;
    qola_matrix_strides bias_strides;
    const float* alibi_slopes;
    int64_t alibi_slopes_batch_stride;
    const void* o; /* the forward's output */
    qola_tensor_strides o_strides;
    const void* dout; /* gradient of o */
    qola_tensor_strides dout_strides;
    const float* lse; /* the forward's lse, required */
    qola_matrix_strides lse_strides;
    void* dq;
    qola_tensor_strides dq_strides;
    void* dk;
    qola_tensor_strides dk_strides;
    void* dv;
    qola_tensor_strides dv_strides;
    void* dbias; /* ELEMENTWISE only, may be NULL: the gradient of the bias, full (no broadcast) */
    qola_matrix_strides dbias_strides;
    void* workspace; /* qola_mha_bwd_workspace_size bytes (NULL when that is 0) */
} qola_mha_bwd_args;

#define QOLA_MHA_FWD_ARGS_INIT {sizeof(qola_mha_fwd_args)}
#define QOLA_MHA_BWD_ARGS_INIT {sizeof(qola_mha_bwd_args)}

/* Statuses: 0, a HIP error (< 1000), or a base below plus the field (QOLA_MHA_FIELD_*). */
#define QOLA_MHA_STATUS_SUCCESS 0
#define QOLA_MHA_STATUS_INVALID 1000     /* the field's value breaks the rules documented above */
#define QOLA_MHA_STATUS_UNSUPPORTED 2000 /* valid, but this backend cannot serve it */

/* The fields a status names; qola_mha_status_string gives the name and the rule. */
#define QOLA_MHA_FIELDS(X)                                                                    \
    X(ARGS, 0, "args", "must not be NULL")                                                    \
    X(SIZE, 1, "size", "must be sizeof the args struct of a qola version this library knows") \
    X(DTYPE, 2, "problem.dtype", "must be a qola_dtype")                                      \
    X(MODE, 3, "problem.mode", "must be a qola_mha_mode")                                     \
    X(BATCH, 4, "problem.batch", "must be >= 1")                                              \
    X(NHEAD_Q, 5, "problem.nhead_q", "must be >= 1 and a multiple of nhead_k")                \
    X(NHEAD_K, 6, "problem.nhead_k", "must be >= 1")                                          \
    X(SEQLEN_Q, 7, "problem.seqlen_q", "must be >= 1")                                        \
    X(SEQLEN_K, 8, "problem.seqlen_k", "must be >= 1")                                        \
    X(MAX_SEQLEN_Q, 9, "problem.max_seqlen_q", "BATCH: 0 or seqlen_q; GROUP: 1 .. seqlen_q")  \
    X(MAX_SEQLEN_K, 10, "problem.max_seqlen_k", "BATCH: 0 or seqlen_k; GROUP: 1 .. seqlen_k") \
    X(HDIM_Q, 11, "problem.hdim_q", "must be 1 .. QOLA_MHA_MAX_HEAD_DIM")                     \
    X(HDIM_V, 12, "problem.hdim_v", "must be 1 .. QOLA_MHA_MAX_HEAD_DIM")                     \
    X(MASK_TYPE, 13, "problem.mask_type", "must be a qola_mha_mask_type")                     \
    X(WINDOW_LEFT, 14, "problem.window_left", "must be >= -1, and -1 without a mask")         \
    X(WINDOW_RIGHT, 15, "problem.window_right", "must be >= -1, and -1 without a mask")       \
    X(BIAS_TYPE, 16, "problem.bias_type", "must be a qola_mha_bias_type")                     \
    X(SCALE, 17, "problem.scale", "must be finite")                                           \
    X(LOGITS_SOFT_CAP, 18, "problem.logits_soft_cap", "must be 0 or finite and > 0")          \
    X(SEQSTART_Q, 19, "problem.seqlens.seqstart_q", "required in GROUP mode, NULL in BATCH")  \
    X(SEQSTART_K, 20, "problem.seqlens.seqstart_k", "required in GROUP mode, NULL in BATCH")  \
    X(SEQLEN_Q_PTR, 21, "problem.seqlens.seqlen_q", "GROUP mode only, not with cu_seqlen_q")  \
    X(SEQLEN_K_PTR, 22, "problem.seqlens.seqlen_k", "GROUP mode only, not with cu_seqlen_k")  \
    X(CU_SEQLEN_Q, 23, "problem.seqlens.cu_seqlen_q", "optional device int32 [batch + 1]")    \
    X(CU_SEQLEN_K, 24, "problem.seqlens.cu_seqlen_k", "optional device int32 [batch + 1]")    \
    X(P_DROP, 25, "problem.dropout.p_drop", "must be in [0, 1)")                              \
    X(SEED_OFFSET_ON_DEVICE, 26, "problem.dropout.seed_offset_on_device", "must be 0 or 1")   \
    X(SEED_PTR, 27, "problem.dropout.seed_ptr", "required when on device, NULL otherwise")    \
    X(OFFSET_PTR, 28, "problem.dropout.offset_ptr", "required when on device, NULL otherwise") \
    X(Q, 29, "q", "required")                                                                 \
    X(Q_STRIDES, 30, "q_strides", "must be >= 0 (batch 0 in GROUP mode)")                     \
    X(K, 31, "k", "required")                                                                 \
    X(K_STRIDES, 32, "k_strides", "must be >= 0 (batch 0 in GROUP mode)")                     \
    X(V, 33, "v", "required")                                                                 \
    X(V_STRIDES, 34, "v_strides", "must be >= 0 (batch 0 in GROUP mode)")                     \
    X(BIAS, 35, "bias", "required with an ELEMENTWISE bias, NULL otherwise")                  \
    X(BIAS_STRIDES, 36, "bias_strides", "must be >= 0 (batch 0 in GROUP mode)")               \
    X(ALIBI_SLOPES, 37, "alibi_slopes", "required with an ALIBI bias, NULL otherwise")        \
    X(ALIBI_SLOPES_BATCH_STRIDE, 38, "alibi_slopes_batch_stride", "must be 0 or >= nhead_q")  \
    X(O, 39, "o", "required")                                                                 \
    X(O_STRIDES, 40, "o_strides", "rows and heads must not overlap (batch 0 in GROUP mode)")  \
    X(LSE, 41, "lse", "required in the backward")                                             \
    X(LSE_STRIDES, 42, "lse_strides", "heads and sequences must not overlap; row 0")          \
    X(RANDVAL, 43, "randval", "dropout only")                                                 \
    X(RANDVAL_STRIDES, 44, "randval_strides", "rows and heads must not overlap")              \
    X(DETERMINISTIC, 45, "deterministic", "must be 0 or 1")                                   \
    X(DOUT, 46, "dout", "required")                                                           \
    X(DOUT_STRIDES, 47, "dout_strides", "must be >= 0 (batch 0 in GROUP mode)")               \
    X(DQ, 48, "dq", "required")                                                               \
    X(DQ_STRIDES, 49, "dq_strides", "rows and heads must not overlap (batch 0 in GROUP mode)") \
    X(DK, 50, "dk", "required")                                                               \
    X(DK_STRIDES, 51, "dk_strides", "rows and heads must not overlap (batch 0 in GROUP mode)") \
    X(DV, 52, "dv", "required")                                                               \
    X(DV_STRIDES, 53, "dv_strides", "rows and heads must not overlap (batch 0 in GROUP mode)") \
    X(DBIAS, 54, "dbias", "ELEMENTWISE bias only")                                            \
    X(DBIAS_STRIDES, 55, "dbias_strides", "rows and heads must not overlap")                  \
    X(WORKSPACE, 56, "workspace", "required when qola_mha_bwd_workspace_size is not 0")       \
    X(TRAITS, 57, "traits", "a combination no kernel of this build serves")

#define QOLA_MHA_FIELD_ENUM(name, value, text, rule) QOLA_MHA_FIELD_##name = value,
typedef enum qola_mha_field { QOLA_MHA_FIELDS(QOLA_MHA_FIELD_ENUM) QOLA_MHA_FIELD_COUNT } qola_mha_field;
#undef QOLA_MHA_FIELD_ENUM

/* o = attention(q, k, v) as described above, and lse when it is not NULL. */
int qola_mha_fwd(const qola_mha_fwd_args* args, struct ihipStream_t* stream);

/* The status qola_mha_fwd would return for these arguments before launching anything. */
int qola_mha_fwd_check(const qola_mha_fwd_args* args);

/* Bytes of device workspace qola_mha_bwd needs for these arguments, in *bytes. */
int qola_mha_bwd_workspace_size(const qola_mha_bwd_args* args, size_t* bytes);

/* dq, dk, dv (and dbias) of the forward above, given its o and lse and the gradient of o. */
int qola_mha_bwd(const qola_mha_bwd_args* args, struct ihipStream_t* stream);

/* The status qola_mha_bwd would return for these arguments before launching anything. */
int qola_mha_bwd_check(const qola_mha_bwd_args* args);

/* A static string: "success", "<field>: invalid: <rule>", "<field>: not supported by this
 * backend", or, for a HIP error, a note that hipGetErrorString names it. */
const char* qola_mha_status_string(int status);

#ifdef __cplusplus
}
#endif

#endif /* QOLA_MHA_H */
