// qola_gemm.h's asm GEMM over AITER's (patch 0007): the f4gemm code objects of AITER's config
// list (asm_f4gemm_configs.hpp, which AITER's codegen writes for this build), picked by AITER's
// heuristic or by kernel_name.
#include "asm_f4gemm_configs.hpp"
#include "asm_gemm_a4w4.h"
#include "qola_aiter_gemm.hpp"

#include <string>

namespace {

bool out_ok(int32_t dtype) { return dtype == QOLA_GEMM_DTYPE_BF16; }

// What AITER's asm GEMM refuses beyond qola_gemm.h's rules: its config list read as its
// heuristic and its launch read it.
int check(const qola_gemm_a4w4_args* in, qola_gemm_a4w4_args* a) {
    if (int status = qola_gemm::check_common(in, a, out_ok)) return status;
    const qola_gemm_matrix& bias = a->bias;
    if (bias.data != nullptr &&
        (bias.dtype != QOLA_GEMM_DTYPE_FP32 || bias.rows != a->out.rows || bias.cols != a->out.cols ||
         bias.row_stride < bias.cols))
        return qola_gemm::invalid(QOLA_GEMM_FIELD_BIAS);
    if (bias.data != nullptr && !qola_gemm::fits(bias)) return qola_gemm::unsupported(QOLA_GEMM_FIELD_BIAS);
    if (a->b_preshuffled != 0 && a->b_preshuffled != 1) return qola_gemm::invalid(QOLA_GEMM_FIELD_B_PRESHUFFLED);
    const int64_t n = a->b.rows, k = 2 * a->a.cols;
    if (a->log2_k_split < -1 || a->log2_k_split > 16) return qola_gemm::invalid(QOLA_GEMM_FIELD_LOG2_K_SPLIT);
    const std::string name = qola_gemm::kernel_name(*a);
    if (!name.empty()) {
        auto it = cfg_f4gemm_bf16_per1x32Fp4.find(name);
        if (it == cfg_f4gemm_bf16_per1x32Fp4.end()) return qola_gemm::unsupported(QOLA_GEMM_FIELD_KERNEL_NAME);
        // A split-K kernel runs K in 2^log2_k_split parts (0 for none).
        const int split = a->log2_k_split < 0 ? 0 : a->log2_k_split;
        if (it->second.splitK == 1 && k % (int64_t{1} << split) != 0)
            return qola_gemm::invalid(QOLA_GEMM_FIELD_LOG2_K_SPLIT);
        return 0;
    }
    // The heuristic's candidates: this preshuffling, a split-K kernel exactly when a split is
    // asked (or either with -1), a tile that divides N.
    const bool split_asked = a->log2_k_split > 0;
    bool any = false;
    for (const auto& entry : cfg_f4gemm_bf16_per1x32Fp4) {
        const F4GemmConfig& cfg = entry.second;
        if (cfg.bpreshuffle != a->b_preshuffled) continue;
        if (a->log2_k_split >= 0 && cfg.splitK != (split_asked ? 1 : 0)) continue;
        if (n % cfg.tile_N != 0) continue;
        if (cfg.splitK == 1 && a->log2_k_split >= 0 && k % (int64_t{1} << a->log2_k_split) != 0) continue;
        any = true;
    }
    return any ? 0 : qola_gemm::unsupported(QOLA_GEMM_FIELD_B);
}

}  // namespace

QOLA_GEMM_API int qola_gemm_a4w4_asm_check(const qola_gemm_a4w4_args* in) {
    qola_gemm_a4w4_args a;
    return check(in, &a);
}

QOLA_GEMM_API int qola_gemm_a4w4_asm(const qola_gemm_a4w4_args* in, hipStream_t stream) {
    qola_gemm_a4w4_args a;
    if (int status = check(in, &a)) return status;
    aiter_tensor_t xa = qola_gemm::tensor(a.a, a.device), xb = qola_gemm::tensor(a.b, a.device);
    aiter_tensor_t sa = qola_gemm::tensor(a.a_scale, a.device), sb = qola_gemm::tensor(a.b_scale, a.device);
    aiter_tensor_t out = qola_gemm::tensor(a.out, a.device);
    aiter_tensor_t bias = qola_gemm::tensor(a.bias, a.device);
    return qola_gemm::call("qola_gemm_a4w4_asm", [&] {
        aiter::gemm_a4w4_asm(&xa, &xb, &sa, &sb, &out, qola_gemm::kernel_name(a), a.bias.data ? &bias : nullptr,
                             a.alpha, a.beta, a.b_preshuffled, a.log2_k_split, stream);
    });
}
