// Runs the kernels' per-row functions on the CPU (QOLA_CPU_EMULATION), for the numerics test on
// machines without a GPU. Reads a problem on stdin, writes the results on stdout, all little
// endian: header int32 dtype, batch, nhead, seqlen_q, seqlen_k, head_dim, causal; float scale;
// then float q, k, v, dout as contiguous [batch, seqlen, nhead, head_dim]. Writes float q, k, v,
// dout as the kernels read them (after rounding to the element type), then o, lse, dq, dk, dv.
// K and V are stored as [batch, nhead, seqlen, head_dim] to exercise the strides.
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "qola_mha_impl.hpp"

static void read_exact(void* p, size_t n) {
    if (fread(p, 1, n, stdin) != n) {
        fprintf(stderr, "short input\n");
        exit(2);
    }
}

static std::vector<float> read_floats(size_t n) {
    std::vector<float> v(n);
    read_exact(v.data(), n * sizeof(float));
    return v;
}

static void write_floats(const std::vector<float>& v) { fwrite(v.data(), sizeof(float), v.size(), stdout); }

template <typename E>
static void run(qola_mha_shape s) {
    using T = typename E::storage;
    const qola_tensor_strides bshd{(int64_t)s.seqlen_q * s.nhead * s.head_dim, (int64_t)s.nhead * s.head_dim, s.head_dim};
    const qola_tensor_strides kbshd{(int64_t)s.seqlen_k * s.nhead * s.head_dim, (int64_t)s.nhead * s.head_dim, s.head_dim};
    const qola_tensor_strides kbhsd{(int64_t)s.nhead * s.seqlen_k * s.head_dim, s.head_dim, (int64_t)s.seqlen_k * s.head_dim};
    const size_t nq = (size_t)s.batch * s.seqlen_q * s.nhead * s.head_dim;
    const size_t nk = (size_t)s.batch * s.seqlen_k * s.nhead * s.head_dim;
    // Scatter the [b, s, h, d] inputs into their layouts, rounded to the element type.
    auto put = [&](const std::vector<float>& in, const qola_tensor_strides& from, const qola_tensor_strides& to, int seqlen) {
        std::vector<T> out(in.size());
        for (int b = 0; b < s.batch; ++b)
            for (int p = 0; p < seqlen; ++p)
                for (int h = 0; h < s.nhead; ++h)
                    for (int c = 0; c < s.head_dim; ++c)
                        E::store(out.data(), qola::offset(to, b, p, h) + c, in[qola::offset(from, b, p, h) + c]);
        return out;
    };
    auto get = [&](const std::vector<T>& in, const qola_tensor_strides& from, const qola_tensor_strides& to, int seqlen) {
        std::vector<float> out(in.size());
        for (int b = 0; b < s.batch; ++b)
            for (int p = 0; p < seqlen; ++p)
                for (int h = 0; h < s.nhead; ++h)
                    for (int c = 0; c < s.head_dim; ++c)
                        out[qola::offset(to, b, p, h) + c] = E::load(in.data(), qola::offset(from, b, p, h) + c);
        return out;
    };
    std::vector<T> q = put(read_floats(nq), bshd, bshd, s.seqlen_q);
    std::vector<T> k = put(read_floats(nk), kbshd, kbhsd, s.seqlen_k);
    std::vector<T> v = put(read_floats(nk), kbshd, kbhsd, s.seqlen_k);
    std::vector<T> dout = put(read_floats(nq), bshd, bshd, s.seqlen_q);
    std::vector<T> o(nq), dq(nq), dk(nk), dv(nk);
    std::vector<float> lse((size_t)s.batch * s.nhead * s.seqlen_q), delta(lse.size());

    qola_mha_fwd_args f{s, q.data(), bshd, k.data(), kbhsd, v.data(), kbhsd, o.data(), bshd, lse.data()};
    for (int64_t r = 0; r < qola::rows(s, s.seqlen_q); ++r) qola::fwd_row<E>(f, r);
    qola_mha_bwd_args g{s, q.data(), bshd, k.data(), kbhsd, v.data(), kbhsd, o.data(), bshd, dout.data(), bshd,
                        lse.data(), dq.data(), bshd, dk.data(), kbhsd, dv.data(), kbhsd, delta.data()};
    for (int64_t r = 0; r < qola::rows(s, s.seqlen_q); ++r) qola::bwd_delta_row<E>(g, r);
    for (int64_t r = 0; r < qola::rows(s, s.seqlen_q); ++r) qola::bwd_dq_row<E>(g, r);
    for (int64_t r = 0; r < qola::rows(s, s.seqlen_k); ++r) qola::bwd_dkdv_row<E>(g, r);

    write_floats(get(q, bshd, bshd, s.seqlen_q));
    write_floats(get(k, kbhsd, kbshd, s.seqlen_k));
    write_floats(get(v, kbhsd, kbshd, s.seqlen_k));
    write_floats(get(dout, bshd, bshd, s.seqlen_q));
    write_floats(get(o, bshd, bshd, s.seqlen_q));
    write_floats(lse);
    write_floats(get(dq, bshd, bshd, s.seqlen_q));
    write_floats(get(dk, kbhsd, kbshd, s.seqlen_k));
    write_floats(get(dv, kbhsd, kbshd, s.seqlen_k));
}

int main() {
    int32_t header[7];
    read_exact(header, sizeof header);
    float scale;
    read_exact(&scale, sizeof scale);
    qola_mha_shape s{header[0], header[1], header[2], header[3], header[4], header[5], header[6], scale};
    switch (s.dtype) {
        case QOLA_DTYPE_FP32: run<qola::Fp32>(s); break;
        case QOLA_DTYPE_FP16: run<qola::Fp16>(s); break;
        case QOLA_DTYPE_BF16: run<qola::Bf16>(s); break;
        default: return 2;
    }
    return 0;
}
