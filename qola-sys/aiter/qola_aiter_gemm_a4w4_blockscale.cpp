// qola_gemm.h's blockscale GEMM over AITER's (patch 0007): composable_kernel's MX instances this
// build generated, picked by AITER's dispatch (the shape's tuned instance, else the default) or
// by kernel_name.
#include "gemm_a4w4_blockscale.h"
#include "qola_aiter_gemm.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace {

bool out_ok(int32_t dtype) { return dtype == QOLA_GEMM_DTYPE_BF16 || dtype == QOLA_GEMM_DTYPE_FP16; }

// What AITER's blockscale GEMM refuses beyond qola_gemm.h's rules.
int check(const qola_gemm_a4w4_args* in, qola_gemm_a4w4_args* a) {
    if (int status = qola_gemm::check_common(in, a, out_ok)) return status;
    // CK splits K into 2^log2_k_split batches.
    if (a->log2_k_split < 0 || a->log2_k_split > 16 || (2 * a->a.cols) % (int64_t{1} << a->log2_k_split) != 0)
        return qola_gemm::invalid(QOLA_GEMM_FIELD_LOG2_K_SPLIT);
    if (a->bias.data != nullptr) return qola_gemm::unsupported(QOLA_GEMM_FIELD_BIAS);
    const std::string name = qola_gemm::kernel_name(*a);
    if (!name.empty()) {
        static const std::vector<std::string> instances = aiter::gemm_a4w4_blockscale_instances();
        if (std::find(instances.begin(), instances.end(), name) == instances.end())
            return qola_gemm::unsupported(QOLA_GEMM_FIELD_KERNEL_NAME);
    }
    return 0;
}

}  // namespace

QOLA_GEMM_API int qola_gemm_a4w4_blockscale_check(const qola_gemm_a4w4_args* in) {
    qola_gemm_a4w4_args a;
    return check(in, &a);
}

QOLA_GEMM_API int qola_gemm_a4w4_blockscale(const qola_gemm_a4w4_args* in, hipStream_t stream) {
    qola_gemm_a4w4_args a;
    if (int status = check(in, &a)) return status;
    aiter_tensor_t xq = qola_gemm::tensor(a.a, a.device), wq = qola_gemm::tensor(a.b, a.device);
    aiter_tensor_t xs = qola_gemm::tensor(a.a_scale, a.device), ws = qola_gemm::tensor(a.b_scale, a.device);
    aiter_tensor_t y = qola_gemm::tensor(a.out, a.device);
    return qola_gemm::call("qola_gemm_a4w4_blockscale", [&] {
        aiter::gemm_a4w4_blockscale(xq, wq, xs, ws, y, a.log2_k_split, stream, qola_gemm::kernel_name(a));
    });
}
