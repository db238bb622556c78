/* qola's built-in attention kernels: the C API.
 *
 * Tensors are [batch, seqlen, nhead, head_dim] in any layout whose head_dim is contiguous: the
 * strides of the other three dimensions are given in elements. Every function returns a HIP
 * status (0 = hipSuccess); invalid arguments give hipErrorInvalidValue (1).
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

/* Element types of q, k, v, o and their gradients. Softmax statistics are always float. */
typedef enum qola_dtype {
    QOLA_DTYPE_FP32 = 0,
    QOLA_DTYPE_FP16 = 1,
    QOLA_DTYPE_BF16 = 2
} qola_dtype;

/* The largest head_dim the built-in kernels take. */
#define QOLA_MAX_HEAD_DIM 128

/* Strides, in elements, of the batch, sequence and head dimensions. */
typedef struct qola_tensor_strides {
    int64_t batch;
    int64_t seq;
    int64_t head;
} qola_tensor_strides;

/* Sizes shared by forward and backward. With causal = 1, query i sees the keys
 * j <= i + seqlen_k - seqlen_q (aligned to the bottom right, as FlashAttention does). */
typedef struct qola_mha_shape {
    int32_t dtype; /* qola_dtype */
    int32_t batch;
    int32_t nhead;
    int32_t seqlen_q;
    int32_t seqlen_k;
    int32_t head_dim; /* 1 .. QOLA_MAX_HEAD_DIM */
    int32_t causal;   /* 0 or 1 */
    float scale;      /* softmax scale, usually 1 / sqrt(head_dim) */
} qola_mha_shape;

typedef struct qola_mha_fwd_args {
    qola_mha_shape shape;
    const void* q;
    qola_tensor_strides q_strides;
    const void* k;
    qola_tensor_strides k_strides;
    const void* v;
    qola_tensor_strides v_strides;
    void* o;
    qola_tensor_strides o_strides;
    /* log-sum-exp of each query row, [batch, nhead, seqlen_q] contiguous; may be NULL. */
    float* lse;
} qola_mha_fwd_args;

typedef struct qola_mha_bwd_args {
    qola_mha_shape shape;
    const void* q;
    qola_tensor_strides q_strides;
    const void* k;
    qola_tensor_strides k_strides;
    const void* v;
    qola_tensor_strides v_strides;
    const void* o;
    qola_tensor_strides o_strides;
    const void* dout; /* gradient of o */
    qola_tensor_strides dout_strides;
    const float* lse; /* from qola_mha_fwd, [batch, nhead, seqlen_q] contiguous */
    void* dq;
    qola_tensor_strides dq_strides;
    void* dk;
    qola_tensor_strides dk_strides;
    void* dv;
    qola_tensor_strides dv_strides;
    /* qola_mha_bwd_workspace_size(args) bytes of device memory. */
    void* workspace;
} qola_mha_bwd_args;

/* o = softmax(scale * q k^T [+ causal mask]) v, and lse when it is not NULL. */
int qola_mha_fwd(const qola_mha_fwd_args* args, struct ihipStream_t* stream);

/* Bytes of device workspace qola_mha_bwd needs for these arguments. */
size_t qola_mha_bwd_workspace_size(const qola_mha_bwd_args* args);

/* dq, dk, dv of the forward above, given o, its gradient and lse. */
int qola_mha_bwd(const qola_mha_bwd_args* args, struct ihipStream_t* stream);

#ifdef __cplusplus
}
#endif

#endif /* QOLA_MHA_H */
