// qola_mha.h's forward over AITER's mha_fwd (QOLA_KERNELS=aiter): every field mapped onto
// aiter::mha_fwd_args (CK's fmha_fwd_args); AITER picks its asm (v3) kernel where one applies
// and CK's otherwise, as its own flash-attention entry points ask it to (use_ext_asm).
#include "mha_fwd.h"
#include "qola_aiter_common.hpp"

namespace {

// What AITER's forward cannot serve beyond qola's own rules.
int check(const qola_mha_fwd_args* in, qola_mha_fwd_args* a) {
    if (int status = qola_check::check_fwd(in, a)) return status;
    if (int status = qola_aiter::check_common(*a)) return status;
    // CK applies the soft cap only without a bias.
    if (a->problem.logits_soft_cap > 0.0f && a->problem.bias_type != QOLA_MHA_BIAS_NONE)
        return qola_check::unsupported(QOLA_MHA_FIELD_LOGITS_SOFT_CAP);
    if (!qola_aiter::fits(a->randval_strides)) return qola_check::unsupported(QOLA_MHA_FIELD_RANDVAL_STRIDES);
    return 0;
}

}  // namespace

#define QOLA_API extern "C" __attribute__((visibility("default")))

QOLA_API int qola_mha_fwd_check(const qola_mha_fwd_args* in) {
    qola_mha_fwd_args a;
    return check(in, &a);
}

QOLA_API int qola_mha_fwd(const qola_mha_fwd_args* in, hipStream_t stream) {
    qola_mha_fwd_args a;
    if (int status = check(in, &a)) return status;
    const qola_mha_problem& p = a.problem;
    using qola_aiter::idx;

    aiter::mha_fwd_args args{};
    qola_aiter::fill_problem(p, args);
    qola_aiter::fill_tensors(a, args);
    args.rand_val_ptr    = a.randval;
    args.lse_ptr         = a.lse;
    args.scale_s         = p.scale;
    args.scale_p         = 1.0f; // fp8 only
    args.scale_o         = 1.0f; // fp8 only
    args.logits_soft_cap = p.logits_soft_cap;
    args.stride_randval       = idx(a.randval_strides.row);
    args.nhead_stride_randval = idx(a.randval_strides.head);
    args.batch_stride_randval = idx(a.randval_strides.batch);
    args.nhead_stride_lse     = idx(a.lse_strides.head);
    args.batch_stride_lse     = idx(a.lse_strides.batch);
    args.min_seqlen_q         = 0;
    args.s_randval            = a.randval != nullptr;

    ck_tile::stream_config config{stream};
    const bool group = p.mode == QOLA_MHA_MODE_GROUP;
    return qola_aiter::call([&] {
        return aiter::mha_fwd(args,
                              config,
                              qola_aiter::dtype(p),
                              group,
                              qola_aiter::mask(p),
                              qola_aiter::bias(p),
                              /*has_lse=*/a.lse != nullptr,
                              /*use_ext_asm=*/!qola_aiter::padded(p),
                              /*how_v3_bf16_cvt=*/1);
    });
}
