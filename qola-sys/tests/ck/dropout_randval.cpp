// CK's own host computation of dropout's random bytes (reference_batched_dropout_randval), for
// qola's test: argv nhead lq lk batch_index seed offset; writes nhead * lq * lk bytes.
#include "ck_tile/core.hpp"
#include "ck_tile/host/host_tensor.hpp"
#include "ck_tile/host/reference/reference_batched_dropout_randval.hpp"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    if (argc != 7) return 2;
    const ck_tile::index_t nhead = atoi(argv[1]), lq = atoi(argv[2]), lk = atoi(argv[3]), b = atoi(argv[4]);
    const uint64_t seed = strtoull(argv[5], nullptr, 0), offset = strtoull(argv[6], nullptr, 0);
    ck_tile::HostTensor<uint8_t> randval({nhead, lq, lk});
    ck_tile::reference_batched_dropout_randval(randval, b, seed, offset);
    for (ck_tile::index_t h = 0; h < nhead; ++h)
        for (ck_tile::index_t i = 0; i < lq; ++i)
            for (ck_tile::index_t j = 0; j < lk; ++j) putchar(randval(h, i, j));
    return 0;
}
