// Runs the built-in kernels' per-row functions on the CPU (QOLA_CPU_EMULATION), for the numerics
// tests on machines without a GPU: the same argument checks and the same row loops as the
// launchers. Input on stdin: one byte (0 forward, 1 backward), the args struct as qola_mha.h lays
// it out with every pointer an offset into the data that follows (0 = NULL), then that data.
// Output on stdout: the int32 status, then the data as the rows left it.
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "qola_mha_check.hpp"
#include "qola_mha_impl.hpp"

static std::vector<unsigned char> read_all() {
    std::vector<unsigned char> in;
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) in.insert(in.end(), chunk, chunk + n);
    return in;
}

template <typename P>
static void rebase(P*& ptr, unsigned char* base) {
    if (ptr) ptr = (P*)(base + (uintptr_t)ptr);
}

static void rebase_problem(qola_mha_problem& p, unsigned char* base) {
    rebase(p.seqlens.seqstart_q, base);
    rebase(p.seqlens.seqstart_k, base);
    rebase(p.seqlens.seqlen_q, base);
    rebase(p.seqlens.seqlen_k, base);
    rebase(p.seqlens.cu_seqlen_q, base);
    rebase(p.seqlens.cu_seqlen_k, base);
    rebase(p.dropout.seed_ptr, base);
    rebase(p.dropout.offset_ptr, base);
}

template <typename E>
static void forward(const qola_mha_fwd_args& a) {
    for (int64_t r = 0; r < qola::q_rows(a.problem); ++r) qola::fwd_row<E>(a, r);
}

template <typename E>
static void backward(const qola_mha_bwd_args& a) {
    for (int64_t r = 0; r < qola::q_rows(a.problem); ++r) qola::bwd_delta_row<E>(a, r);
    for (int64_t r = 0; r < qola::q_rows(a.problem); ++r) qola::bwd_dq_row<E>(a, r);
    for (int64_t r = 0; r < qola::k_rows(a.problem); ++r) qola::bwd_dkdv_row<E>(a, r);
}

template <typename Args>
static void dispatch(const Args& a, void (*fp32)(const Args&), void (*fp16)(const Args&), void (*bf16)(const Args&)) {
    switch (a.problem.dtype) {
        case QOLA_DTYPE_FP32: fp32(a); break;
        case QOLA_DTYPE_FP16: fp16(a); break;
        default: bf16(a); break;
    }
}

int main() {
    std::vector<unsigned char> in = read_all();
    if (in.empty()) return 2;
    const bool bwd = in[0] == 1;
    const size_t size = bwd ? sizeof(qola_mha_bwd_args) : sizeof(qola_mha_fwd_args);
    if (in.size() < 1 + size) return 2;
    std::vector<unsigned char> data(in.begin() + 1 + size, in.end());
    unsigned char* base = data.data();
    int status;
    if (bwd) {
        qola_mha_bwd_args raw, a;
        memcpy(&raw, in.data() + 1, size);
        status = qola_check::check_bwd(&raw, &a);
        if (!status) status = qola_check::check_workspace(a, qola::bwd_workspace_bytes(a.problem));
        if (!status) {
            rebase_problem(a.problem, base);
            rebase(a.q, base), rebase(a.k, base), rebase(a.v, base), rebase(a.bias, base);
            rebase(a.alibi_slopes, base), rebase(a.o, base), rebase(a.dout, base), rebase(a.lse, base);
            rebase(a.dq, base), rebase(a.dk, base), rebase(a.dv, base), rebase(a.dbias, base);
            rebase(a.workspace, base);
            dispatch<qola_mha_bwd_args>(a, backward<qola::Fp32>, backward<qola::Fp16>, backward<qola::Bf16>);
        }
    } else {
        qola_mha_fwd_args raw, a;
        memcpy(&raw, in.data() + 1, size);
        status = qola_check::check_fwd(&raw, &a);
        if (!status) {
            rebase_problem(a.problem, base);
            rebase(a.q, base), rebase(a.k, base), rebase(a.v, base), rebase(a.bias, base);
            rebase(a.alibi_slopes, base), rebase(a.o, base), rebase(a.lse, base), rebase(a.randval, base);
            dispatch<qola_mha_fwd_args>(a, forward<qola::Fp32>, forward<qola::Fp16>, forward<qola::Bf16>);
        }
    }
    fwrite(&status, sizeof status, 1, stdout);
    fwrite(data.data(), 1, data.size(), stdout);
    return 0;
}
