// qola's C++ API wrapper of AITER's a4w4 asm GEMM (see qola_gemm_a4w4_asm.h).
#include "qola_gemm_a4w4_asm.h"

#include "asm_gemm_a4w4.h"

QOLA_NS_BEGIN

void gemm_a4w4_asm(aiter_tensor_t* A,
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
                   hipStream_t stream)
{
    ::aiter::gemm_a4w4_asm(
        A, B, A_scale, B_scale, out, kernelName, bias, alpha, beta, bpreshuffle, log2_k_split, stream);
}

QOLA_NS_END
