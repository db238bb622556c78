// Calls the namespaced forward as TransformerEngine's ck_fused_attn_fwd.cpp does (AITER
// 05a0d1f's generation of the API: the options as parameters).
#include "qola_mha_fwd.h"

float te_shaped_forward(aiter::mha_fwd_args& args, const ck_tile::stream_config& stream)
{
    return QOLA_NS(mha_fwd)(args,
                            stream,
                            "bf16",
                            /*is_group_mode=*/false,
                            mask_enum::no_mask,
                            bias_enum::no_bias,
                            /*has_lse=*/true,
                            /*use_ext_asm=*/true);
}
