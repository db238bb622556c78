// qola_mha.h's forward over AITER's mha_fwd (QOLA_KERNELS=aiter): the same C ABI as the
// built-in kernels, served by the CK and asm kernels of the prepared AITER tree.
#include "mha_fwd.h"
#include "qola_aiter_common.hpp"

#include <utility>

extern "C" __attribute__((visibility("default"))) int qola_mha_fwd(const qola_mha_fwd_args* a,
                                                                   hipStream_t stream)
{
    if(!a || !qola_aiter_shape_ok(a->shape) || !a->q || !a->k || !a->v || !a->o)
        return (int)hipErrorInvalidValue;
    const qola_mha_shape& s = a->shape;
    const qola_aiter_mask mask = qola_aiter_mask_of(s);

    aiter::mha_fwd_args args{};
    args.q_ptr        = a->q;
    args.k_ptr        = a->k;
    args.v_ptr        = a->v;
    args.bias_ptr     = nullptr;
    args.rand_val_ptr = nullptr;
    args.lse_ptr      = a->lse;
    args.o_ptr        = a->o;

    args.seqlen_q     = s.seqlen_q;
    args.seqlen_k     = s.seqlen_k;
    args.batch        = s.batch;
    args.max_seqlen_q = s.seqlen_q;
    args.hdim_q       = s.head_dim;
    args.hdim_v       = s.head_dim;
    args.nhead_q      = s.nhead;
    args.nhead_k      = s.nhead;

    args.scale_s         = s.scale;
    args.scale_p         = 1.0f;
    args.scale_o         = 1.0f;
    args.logits_soft_cap = 0.0f;

    args.stride_q             = (ck_tile::index_t)a->q_strides.seq;
    args.stride_k             = (ck_tile::index_t)a->k_strides.seq;
    args.stride_v             = (ck_tile::index_t)a->v_strides.seq;
    args.stride_bias          = 0;
    args.stride_randval       = 0;
    args.stride_o             = (ck_tile::index_t)a->o_strides.seq;
    args.nhead_stride_q       = (ck_tile::index_t)a->q_strides.head;
    args.nhead_stride_k       = (ck_tile::index_t)a->k_strides.head;
    args.nhead_stride_v       = (ck_tile::index_t)a->v_strides.head;
    args.nhead_stride_bias    = 0;
    args.nhead_stride_randval = 0;
    args.nhead_stride_lse     = s.seqlen_q;
    args.nhead_stride_o       = (ck_tile::index_t)a->o_strides.head;
    args.batch_stride_q       = (ck_tile::index_t)a->q_strides.batch;
    args.batch_stride_k       = (ck_tile::index_t)a->k_strides.batch;
    args.batch_stride_v       = (ck_tile::index_t)a->v_strides.batch;
    args.batch_stride_bias    = 0;
    args.batch_stride_randval = 0;
    args.batch_stride_lse     = s.nhead * s.seqlen_q;
    args.batch_stride_o       = (ck_tile::index_t)a->o_strides.batch;

    args.window_size_left  = mask.left;
    args.window_size_right = mask.right;
    args.mask_type         = (ck_tile::index_t)mask.type;
    args.min_seqlen_q      = 0;
    args.p_drop            = 0.0f;
    args.s_randval         = false;
    args.drop_seed_offset  = std::make_pair(uint64_t{0}, uint64_t{0});

    ck_tile::stream_config config{stream};
    return qola_aiter_call([&] {
        return aiter::mha_fwd(args,
                              config,
                              qola_aiter_dtype(s),
                              /*is_group_mode=*/false,
                              mask.type,
                              bias_enum::no_bias,
                              /*has_lse=*/a->lse != nullptr,
                              /*use_ext_asm=*/true);
    });
}
