// qola's C++ API over AITER's a4w4 (FP4) blockscale GEMM (composable_kernel's MX instances,
// gfx950), QoLA's declaration: Y = XQ * WQ^T with per-1x32 e8m0 block scales. XQ [M, K/2] and
// WQ [N, K/2] fp4x2 (WQ preshuffled), x_scale [M, K/32] and w_scale [N, K/32] e8m0, Y [M, N]
// bf16 or fp16; splitK: log2 of the K batches; kernelName: an instance of the library by name,
// empty for the shape's tuned one. Errors throw std::runtime_error. `aiter_tensor.h` is the
// tree's (csrc/include of the prepared AITER).
#pragma once

#include <string>

#include "aiter_tensor.h"
#include "qola_common.h"

QOLA_NS_BEGIN

QOLA_EXPORT aiter_tensor_t& gemm_a4w4_blockscale(aiter_tensor_t& XQ,
                                                 aiter_tensor_t& WQ,
                                                 aiter_tensor_t& x_scale,
                                                 aiter_tensor_t& w_scale,
                                                 aiter_tensor_t& Y,
                                                 int splitK,
                                                 hipStream_t stream,
                                                 std::string kernelName = "");

QOLA_NS_END
