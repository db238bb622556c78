// qola_mha.h's backward over AITER's mha_bwd (QOLA_KERNELS=aiter): the asm v3 kernels where
// they apply, CK's otherwise, as AITER's own torch binding calls them (non-deterministic, dq
// accumulated atomically in fp32).
#include "mha_bwd.h"
#include "qola_aiter_common.hpp"

#include <utility>

namespace {

// The workspace: the row sums d = rowsum(dout * o), float [batch, nhead, seqlen_q] (the layout
// of lse, which CK assumes d shares), then 256-byte aligned the fp32 dq accumulator,
// [1, batch, seqlen_q, nhead, head_dim].
struct workspace_layout
{
    size_t d_bytes;
    size_t dq_acc_offset;
    size_t dq_acc_bytes;
};

workspace_layout layout_of(const qola_mha_shape& s)
{
    const size_t rows = (size_t)s.batch * s.nhead * s.seqlen_q;
    const size_t d_bytes = rows * sizeof(float);
    const size_t offset  = (d_bytes + 255) / 256 * 256;
    return {d_bytes, offset, rows * (size_t)s.head_dim * sizeof(float)};
}

} // namespace

extern "C" __attribute__((visibility("default"))) size_t
qola_mha_bwd_workspace_size(const qola_mha_bwd_args* a)
{
    if(!a || !qola_aiter_shape_ok(a->shape))
        return 0;
    const workspace_layout w = layout_of(a->shape);
    return w.dq_acc_offset + w.dq_acc_bytes;
}

extern "C" __attribute__((visibility("default"))) int qola_mha_bwd(const qola_mha_bwd_args* a,
                                                                   hipStream_t stream)
{
    if(!a || !qola_aiter_shape_ok(a->shape) || !a->q || !a->k || !a->v || !a->o || !a->dout ||
       !a->lse || !a->dq || !a->dk || !a->dv || !a->workspace)
        return (int)hipErrorInvalidValue;
    const qola_mha_shape& s = a->shape;
    const workspace_layout w = layout_of(s);
    char* workspace          = static_cast<char*>(a->workspace);
    void* d                  = workspace;
    void* dq_acc             = workspace + w.dq_acc_offset;
    // Atomic fp32 accumulation starts from zero.
    if(hipError_t e = hipMemsetAsync(dq_acc, 0, w.dq_acc_bytes, stream); e != hipSuccess)
        return (int)e;

    const auto idx = [](int64_t v) { return (ck_tile::index_t)v; };
    const ck_tile::index_t rows_per_batch = s.nhead * s.seqlen_q;
    const qola_aiter_mask mask            = qola_aiter_mask_of(s);

    aiter::mha_bwd_args args{};
    args.q_ptr        = a->q;
    args.k_ptr        = a->k;
    args.v_ptr        = a->v;
    args.bias_ptr     = nullptr;
    args.o_ptr        = a->o;
    args.lse_ptr      = a->lse;
    args.do_ptr       = a->dout;
    args.d_ptr        = d;
    args.rand_val_ptr = nullptr;
    args.dq_ptr       = a->dq;
    args.dk_ptr       = a->dk;
    args.dv_ptr       = a->dv;
    args.dbias_ptr    = nullptr;
    args.dq_acc_ptr   = dq_acc;

    args.seqlen_q     = s.seqlen_q;
    args.seqlen_k     = s.seqlen_k;
    args.batch        = s.batch;
    args.max_seqlen_q = s.seqlen_q;
    args.max_seqlen_k = s.seqlen_k;
    args.hdim_q       = s.head_dim;
    args.hdim_v       = s.head_dim;
    args.nhead_q      = s.nhead;
    args.nhead_k      = s.nhead;
    args.scale        = s.scale;

    args.stride_q       = idx(a->q_strides.seq);
    args.stride_k       = idx(a->k_strides.seq);
    args.stride_v       = idx(a->v_strides.seq);
    args.stride_o       = idx(a->o_strides.seq);
    args.stride_do      = idx(a->dout_strides.seq);
    args.stride_dq_acc  = s.nhead * s.head_dim;
    args.stride_dq      = idx(a->dq_strides.seq);
    args.stride_dk      = idx(a->dk_strides.seq);
    args.stride_dv      = idx(a->dv_strides.seq);
    args.nhead_stride_q = idx(a->q_strides.head);
    args.nhead_stride_k = idx(a->k_strides.head);
    args.nhead_stride_v = idx(a->v_strides.head);
    args.nhead_stride_o = idx(a->o_strides.head);
    args.nhead_stride_do     = idx(a->dout_strides.head);
    args.nhead_stride_lsed   = s.seqlen_q;
    args.nhead_stride_dq_acc = s.head_dim;
    args.nhead_stride_dq     = idx(a->dq_strides.head);
    args.nhead_stride_dk     = idx(a->dk_strides.head);
    args.nhead_stride_dv     = idx(a->dv_strides.head);
    args.batch_stride_q      = idx(a->q_strides.batch);
    args.batch_stride_k      = idx(a->k_strides.batch);
    args.batch_stride_v      = idx(a->v_strides.batch);
    args.batch_stride_o      = idx(a->o_strides.batch);
    args.batch_stride_do     = idx(a->dout_strides.batch);
    args.batch_stride_lsed   = rows_per_batch;
    args.batch_stride_dq_acc = s.seqlen_q * s.nhead * s.head_dim;
    args.batch_stride_dq     = idx(a->dq_strides.batch);
    args.batch_stride_dk     = idx(a->dk_strides.batch);
    args.batch_stride_dv     = idx(a->dv_strides.batch);
    args.split_stride_dq_acc = s.batch * s.seqlen_q * s.nhead * s.head_dim;

    args.window_size_left  = mask.left;
    args.window_size_right = mask.right;
    args.mask_type         = (ck_tile::index_t)mask.type;
    args.p_drop            = 0.0f;
    args.p_undrop          = 1.0f;
    args.drop_seed_offset  = std::make_pair(uint64_t{0}, uint64_t{0});

    ck_tile::stream_config config{stream};
    return qola_aiter_call([&] {
        return aiter::mha_bwd(args,
                              config,
                              qola_aiter_dtype(s),
                              /*is_group_mode=*/false,
                              mask.type,
                              bias_enum::no_bias,
                              /*has_dbias=*/false,
                              /*is_store_randval=*/false,
                              /*deterministic=*/false,
                              /*use_ext_asm=*/true,
                              /*is_v3_atomic_fp32=*/true,
                              /*how_v3_bf16_cvt=*/1);
    });
}
