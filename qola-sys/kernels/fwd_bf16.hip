// Forward attention, bf16.
#include "qola_mha_impl.hpp"

QOLA_ROW_KERNEL(qola_detail_fwd_bf16, qola_mha_fwd_args, qola::q_rows, qola::fwd_row<qola::Bf16>)
