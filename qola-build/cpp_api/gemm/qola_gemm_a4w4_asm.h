// qola's C++ API over AITER's a4w4 (FP4) asm GEMM (the f4gemm code objects, gfx950), QoLA's
// declaration: out = alpha * A * B^T + beta * bias. A [M, K/2] and B [N, K/2] fp4x2 (B
// preshuffled when bpreshuffle), A_scale [M, K/32] and B_scale [N, K/32] e8m0 (padded), out
// [M, N] bf16, bias [M, N] fp32 or nullptr; kernelName empty (or nullptr) and log2_k_split < 0:
// the heuristic's choice. Errors throw std::runtime_error. `aiter_tensor.h` is the tree's
// (csrc/include of the prepared AITER).
#pragma once

#include "aiter_tensor.h"
#include "qola_common.h"

QOLA_NS_BEGIN

QOLA_EXPORT void gemm_a4w4_asm(aiter_tensor_t* A,
                               aiter_tensor_t* B,
                               aiter_tensor_t* A_scale,
                               aiter_tensor_t* B_scale,
                               aiter_tensor_t* out,
                               const char* kernelName,
                               aiter_tensor_t* bias,
                               float alpha,
                               float beta,
                               int bpreshuffle,
                               int log2_k_split,
                               hipStream_t stream);

QOLA_NS_END
