// qola's a4w4 asm GEMM over AITER's: the C++ API (qola_gemm_a4w4_asm.h) and the C interface
// (qola_gemm_a4w4.h). AITER's entry point differs by tree: at 05a0d1f, qola's port (patch 0007)
// declares the C++ `aiter::gemm_a4w4_asm` in asm_gemm_a4w4.h, which throws; newer trees define
// the C entry point `gemm_a4w4_asm` in asm_gemm_a4w4.cu (no header), which returns a status
// and keeps its message for `aiter_get_last_error`.
#include "qola_gemm_a4w4_asm.h"

#include <stdexcept>

#include "qola_gemm_a4w4_c.h"

#if __has_include("asm_gemm_a4w4.h")
#include "asm_gemm_a4w4.h"
#else
extern "C" int gemm_a4w4_asm(aiter_tensor_t* A,
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
extern "C" const char* aiter_get_last_error();
#endif

QOLA_NS_BEGIN

// AITER's call as the tree has it; AITER's errors as exceptions.
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
#if __has_include("asm_gemm_a4w4.h")
    ::aiter::gemm_a4w4_asm(
        A, B, A_scale, B_scale, out, kernelName, bias, alpha, beta, bpreshuffle, log2_k_split, stream);
#else
    int status = ::gemm_a4w4_asm(
        A, B, A_scale, B_scale, out, kernelName, bias, alpha, beta, bpreshuffle, log2_k_split, stream);
    if(status != 0)
    {
        const char* why = aiter_get_last_error();
        throw std::runtime_error(why != nullptr ? why : "AITER's gemm_a4w4_asm failed");
    }
#endif
}

QOLA_NS_END

QOLA_C_BEGIN

QOLA_EXPORT int QOLA_C(gemm_a4w4_asm)(const qola_tensor_t* A,
                                      const qola_tensor_t* B,
                                      const qola_tensor_t* a_scale,
                                      const qola_tensor_t* b_scale,
                                      const qola_tensor_t* out,
                                      const qola_tensor_t* bias,
                                      const char* kernel_name,
                                      float alpha,
                                      float beta,
                                      int bpreshuffle,
                                      int log2_k_split,
                                      hipStream_t stream,
                                      char* err_buf,
                                      size_t err_buf_size)
{
    using namespace qola_gemm_c;
    return guarded(err_buf, err_buf_size, [&]() {
        aiter_tensor_t a = to_aiter("A", A), b = to_aiter("B", B),
                       as = to_aiter("a_scale", a_scale), bs = to_aiter("b_scale", b_scale),
                       o    = to_aiter("out", out);
        aiter_tensor_t c{};
        if(bias != nullptr)
            c = to_aiter("bias", bias);
        QOLA_NS(gemm_a4w4_asm)(&a,
                               &b,
                               &as,
                               &bs,
                               &o,
                               kernel_name == nullptr ? "" : kernel_name,
                               bias == nullptr ? nullptr : &c,
                               alpha,
                               beta,
                               bpreshuffle,
                               log2_k_split,
                               stream);
        return 0;
    });
}

QOLA_C_END
