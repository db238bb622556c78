// qola_mha.h's backward over AITER's mha_bwd (QOLA_KERNELS=aiter): every field mapped onto
// aiter::mha_bwd_args (CK's fmha_bwd_args). AITER picks its asm (v3) kernels where they apply
// and CK's otherwise, as its own flash-attention entry points ask it to: use_ext_asm with fp32
// atomic dq accumulation, except for a deterministic backward (CK, one dq accumulator per
// kN0 keys) and for padded sequences (CK). The caller's workspace holds what AITER's torch
// layer would allocate: d (rows of dout . o, laid out like lse), the fp32 dq accumulator and,
// for GQA/MQA, per-query-head dk and dv that a small kernel here sums into the caller's.
#include "mha_bwd.h"
#include "qola_aiter_common.hpp"
#include "qola_mha_impl.hpp"

namespace {

struct Layout {
    size_t d_bytes;      // d: float, the span of the lse strides
    size_t acc_offset;   // dq accumulator: float [splits, batch, nhead_q, rows_q, hdim_q]
    size_t acc_bytes;
    int64_t acc_rows;    // rows_q
    int64_t splits;
    size_t dk_offset;    // GQA/MQA: dk and dv per query head, [batch, rows_k, nhead_q, hdim]
    size_t dv_offset;
    size_t total;
};

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

Layout layout_of(const qola_mha_bwd_args& a) {
    const qola_mha_problem& p = a.problem;
    const bool group          = p.mode == QOLA_MHA_MODE_GROUP;
    const int64_t batches     = group ? 1 : p.batch;
    Layout w{};
    const int64_t d_elems = (batches - 1) * a.lse_strides.batch + (p.nhead_q - 1) * a.lse_strides.head + p.seqlen_q;
    w.d_bytes    = (size_t)d_elems * sizeof(float);
    w.acc_offset = align256(w.d_bytes);
    w.acc_rows   = p.seqlen_q;
    const int64_t kn0      = p.hdim_q <= 128 ? 128 : 64;
    const int64_t max_keys = group ? p.max_seqlen_k : p.seqlen_k;
    w.splits    = a.deterministic ? (max_keys + kn0 - 1) / kn0 : 1;
    w.acc_bytes = (size_t)(w.splits * batches * p.nhead_q * w.acc_rows * p.hdim_q) * sizeof(float);
    w.total     = align256(w.acc_offset + w.acc_bytes);
    if(p.nhead_q != p.nhead_k)
    {
        const size_t per_head = (size_t)(batches * p.seqlen_k * p.nhead_q) * 2; // fp16/bf16
        w.dk_offset = w.total;
        w.dv_offset = align256(w.dk_offset + per_head * p.hdim_q);
        w.total     = align256(w.dv_offset + per_head * p.hdim_v);
    }
    return w;
}

// The strides of a per-query-head [batch, rows_k, nhead_q, hdim] buffer.
qola_tensor_strides expanded(const qola_mha_problem& p, int hdim) {
    const int64_t row = (int64_t)p.nhead_q * hdim;
    return {p.mode == QOLA_MHA_MODE_GROUP ? 0 : p.seqlen_k * row, row, hdim};
}

// What AITER's backward cannot serve beyond qola's own rules.
int check(const qola_mha_bwd_args* in, qola_mha_bwd_args* a) {
    if (int status = qola_check::check_bwd(in, a)) return status;
    if (int status = qola_aiter::check_common(*a)) return status;
    // CK's backward has no soft cap.
    if (a->problem.logits_soft_cap > 0.0f) return qola_check::unsupported(QOLA_MHA_FIELD_LOGITS_SOFT_CAP);
    if (!qola_aiter::fits(a->dout_strides)) return qola_check::unsupported(QOLA_MHA_FIELD_DOUT_STRIDES);
    if (!qola_aiter::fits(a->dq_strides)) return qola_check::unsupported(QOLA_MHA_FIELD_DQ_STRIDES);
    if (!qola_aiter::fits(a->dk_strides)) return qola_check::unsupported(QOLA_MHA_FIELD_DK_STRIDES);
    if (!qola_aiter::fits(a->dv_strides)) return qola_check::unsupported(QOLA_MHA_FIELD_DV_STRIDES);
    if (!qola_aiter::fits(a->dbias_strides)) return qola_check::unsupported(QOLA_MHA_FIELD_DBIAS_STRIDES);
    const Layout w = layout_of(*a);
    if (w.acc_bytes / sizeof(float) > 2147483647u) return qola_check::unsupported(QOLA_MHA_FIELD_WORKSPACE);
    return qola_check::check_workspace(*a, w.total);
}

// dk (or dv) of kv head hk: the sum of its query heads' rows, in float.
template <typename E>
__global__ void sum_query_heads(qola_mha_bwd_args a, const void* from, qola_tensor_strides from_strides,
                                void* to, qola_tensor_strides to_strides, int hdim) {
    const qola_mha_problem& p = a.problem;
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= qola::k_rows(p)) return;
    int b, hk, j;
    qola::split_row(r, p.nhead_k, qola::max_rows_k(p), &b, &hk, &j);
    const qola::Seq s = qola::sequence(p, b);
    if (j >= s.lk) return;
    const int group = p.nhead_q / p.nhead_k;
    using T         = typename E::storage;
    const int64_t out = qola::offset(p, to_strides, b, s.k0, j, hk);
    for (int c = 0; c < hdim; ++c) {
        float sum = 0.0f;
        for (int h = hk * group; h < (hk + 1) * group; ++h)
            sum += E::load((const T*)from, qola::offset(p, from_strides, b, s.k0, j, h) + c);
        E::store((T*)to, out + c, sum);
    }
}

template <typename E>
int sum_heads(const qola_mha_bwd_args& a, const Layout& w, hipStream_t stream) {
    char* base = (char*)a.workspace;
    const qola_mha_problem& p = a.problem;
    const int64_t n = qola::k_rows(p);
    const dim3 grid((unsigned)((n + 63) / 64));
    hipLaunchKernelGGL(sum_query_heads<E>, grid, dim3(64), 0, stream, a, base + w.dk_offset,
                       expanded(p, p.hdim_q), a.dk, a.dk_strides, p.hdim_q);
    hipLaunchKernelGGL(sum_query_heads<E>, grid, dim3(64), 0, stream, a, base + w.dv_offset,
                       expanded(p, p.hdim_v), a.dv, a.dv_strides, p.hdim_v);
    return (int)hipGetLastError();
}

}  // namespace

#define QOLA_API extern "C" __attribute__((visibility("default")))

QOLA_API int qola_mha_bwd_check(const qola_mha_bwd_args* in) {
    qola_mha_bwd_args a;
    return check(in, &a);
}

QOLA_API int qola_mha_bwd_workspace_size(const qola_mha_bwd_args* in, size_t* bytes) {
    qola_mha_bwd_args a;
    if (int status = qola_check::check_bwd(in, &a)) return status;
    if (bytes) *bytes = layout_of(a).total;
    return 0;
}

QOLA_API int qola_mha_bwd(const qola_mha_bwd_args* in, hipStream_t stream) {
    qola_mha_bwd_args a;
    if (int status = check(in, &a)) return status;
    const qola_mha_problem& p = a.problem;
    const Layout w            = layout_of(a);
    const bool group          = p.mode == QOLA_MHA_MODE_GROUP;
    const bool gqa            = p.nhead_q != p.nhead_k;
    char* workspace           = static_cast<char*>(a.workspace);
    // Atomic fp32 accumulation starts from zero.
    if (hipError_t e = hipMemsetAsync(workspace + w.acc_offset, 0, w.acc_bytes, stream); e != hipSuccess)
        return (int)e;
    using qola_aiter::idx;
    const qola_tensor_strides dk_strides = gqa ? expanded(p, p.hdim_q) : a.dk_strides;
    const qola_tensor_strides dv_strides = gqa ? expanded(p, p.hdim_v) : a.dv_strides;

    aiter::mha_bwd_args args{};
    qola_aiter::fill_problem(p, args);
    qola_aiter::fill_tensors(a, args);
    args.max_seqlen_k = group ? p.max_seqlen_k : p.seqlen_k;
    args.lse_ptr      = a.lse;
    args.do_ptr       = a.dout;
    args.d_ptr        = workspace;
    args.rand_val_ptr = nullptr;
    args.dq_ptr       = a.dq;
    args.dk_ptr       = gqa ? workspace + w.dk_offset : a.dk;
    args.dv_ptr       = gqa ? workspace + w.dv_offset : a.dv;
    args.dbias_ptr    = a.dbias;
    args.dq_acc_ptr   = workspace + w.acc_offset;
    args.scale        = p.scale;

    const int64_t acc_head  = w.acc_rows * p.hdim_q;
    const int64_t acc_batch = group ? 0 : p.nhead_q * acc_head;
    args.stride_do           = idx(a.dout_strides.seq);
    args.stride_dq_acc       = p.hdim_q;
    args.stride_dq           = idx(a.dq_strides.seq);
    args.stride_dk           = idx(dk_strides.seq);
    args.stride_dv           = idx(dv_strides.seq);
    args.stride_dbias        = idx(a.dbias_strides.row);
    args.nhead_stride_do     = idx(a.dout_strides.head);
    args.nhead_stride_lsed   = idx(a.lse_strides.head);
    args.nhead_stride_dq_acc = idx(acc_head);
    args.nhead_stride_dq     = idx(a.dq_strides.head);
    args.nhead_stride_dk     = idx(dk_strides.head);
    args.nhead_stride_dv     = idx(dv_strides.head);
    args.nhead_stride_dbias  = idx(a.dbias_strides.head);
    args.batch_stride_do     = idx(a.dout_strides.batch);
    args.batch_stride_lsed   = idx(a.lse_strides.batch);
    args.batch_stride_dq_acc = idx(acc_batch);
    args.batch_stride_dq     = idx(a.dq_strides.batch);
    args.batch_stride_dk     = idx(dk_strides.batch);
    args.batch_stride_dv     = idx(dv_strides.batch);
    args.batch_stride_dbias  = idx(a.dbias_strides.batch);
    args.split_stride_dq_acc = idx(group ? p.nhead_q * acc_head : p.batch * acc_batch);
    args.p_undrop = 1.0f - p.dropout.p_drop;

    ck_tile::stream_config config{stream};
    const bool asm_path = !a.deterministic && !qola_aiter::padded(p);
    const int status    = qola_aiter::call([&] {
        return aiter::mha_bwd(args,
                              config,
                              qola_aiter::dtype(p),
                              group,
                              qola_aiter::mask(p),
                              qola_aiter::bias(p),
                              /*has_dbias=*/a.dbias != nullptr,
                              /*is_store_randval=*/false,
                              a.deterministic != 0,
                              /*use_ext_asm=*/asm_path,
                              /*is_v3_atomic_fp32=*/true,
                              /*how_v3_bf16_cvt=*/1);
    });
    if (status || !gqa) return status;
    return p.dtype == QOLA_DTYPE_FP16 ? sum_heads<qola::Fp16>(a, w, stream) : sum_heads<qola::Bf16>(a, w, stream);
}
