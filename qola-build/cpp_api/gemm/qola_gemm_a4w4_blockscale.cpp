// qola's a4w4 blockscale GEMM over AITER's: the C++ API (qola_gemm_a4w4_blockscale.h) and the
// C interface (qola_gemm_a4w4.h). AITER's `aiter::gemm_a4w4_blockscale` is the same call at
// 05a0d1f (qola's port, patch 0007) and in newer trees (AITER's own torch-free port).
#include "qola_gemm_a4w4_blockscale.h"

#include "gemm_a4w4_blockscale.h"
#include "qola_gemm_a4w4_c.h"

QOLA_NS_BEGIN

aiter_tensor_t& gemm_a4w4_blockscale(aiter_tensor_t& XQ,
                                     aiter_tensor_t& WQ,
                                     aiter_tensor_t& x_scale,
                                     aiter_tensor_t& w_scale,
                                     aiter_tensor_t& Y,
                                     int splitK,
                                     hipStream_t stream,
                                     std::string kernelName)
{
    return ::aiter::gemm_a4w4_blockscale(
        XQ, WQ, x_scale, w_scale, Y, splitK, stream, std::move(kernelName));
}

QOLA_NS_END

QOLA_C_BEGIN

QOLA_EXPORT int QOLA_C(gemm_a4w4_blockscale)(const qola_tensor_t* XQ,
                                             const qola_tensor_t* WQ,
                                             const qola_tensor_t* x_scale,
                                             const qola_tensor_t* w_scale,
                                             const qola_tensor_t* Y,
                                             int split_k,
                                             const char* kernel_name,
                                             hipStream_t stream,
                                             char* err_buf,
                                             size_t err_buf_size)
{
    using namespace qola_gemm_c;
    return guarded(err_buf, err_buf_size, [&]() {
        aiter_tensor_t xq = to_aiter("XQ", XQ), wq = to_aiter("WQ", WQ),
                       xs = to_aiter("x_scale", x_scale), ws = to_aiter("w_scale", w_scale),
                       y = to_aiter("Y", Y);
        ::aiter::gemm_a4w4_blockscale(
            xq, wq, xs, ws, y, split_k, stream, kernel_name == nullptr ? "" : kernel_name);
        return 0;
    });
}

QOLA_C_END
