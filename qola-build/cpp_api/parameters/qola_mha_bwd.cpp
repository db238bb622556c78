// qola's C++ API over AITER: attention backward, forwarded to aiter::mha_bwd inside the library
// (whose own symbols the library does not export).
#include "qola_mha_bwd.h"

QOLA_NS_BEGIN

float mha_bwd(aiter::mha_bwd_args args,
              const ck_tile::stream_config& stream_config,
              std::string q_dtype_str,
              bool is_group_mode,
              mask_enum mask_type,
              bias_enum bias_type,
              bool has_dbias,
              bool is_store_randval,
              bool deterministic,
              bool use_ext_asm,
              bool is_v3_atomic_fp32,
              int how_v3_bf16_cvt,
              const void* seqlen_q_padded,
              const void* seqlen_k_padded,
              bool is_v3_api_check)
{
    return ::aiter::mha_bwd(args,
                            stream_config,
                            q_dtype_str,
                            is_group_mode,
                            mask_type,
                            bias_type,
                            has_dbias,
                            is_store_randval,
                            deterministic,
                            use_ext_asm,
                            is_v3_atomic_fp32,
                            how_v3_bf16_cvt,
                            seqlen_q_padded,
                            seqlen_k_padded,
                            is_v3_api_check);
}

size_t mha_bwd_workspace_size(const fmha_bwd_traits& traits, const aiter::mha_bwd_args& args)
{
    const size_t rows = traits.is_group_mode ? (size_t)args.seqlen_q
                                             : (size_t)args.batch * (size_t)args.seqlen_q;
    const size_t kn0     = traits.hdim_q <= 128 ? 128 : 64;
    const size_t nsplits = traits.is_deterministic
                               ? ((size_t)args.max_seqlen_k + kn0 - 1) / kn0
                               : 1;
    return sizeof(float) * nsplits * rows * (size_t)args.nhead_q * (size_t)traits.hdim_q;
}

QOLA_NS_END
