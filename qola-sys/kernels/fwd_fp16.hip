// Forward attention, fp16.
#include "qola_mha_impl.hpp"

QOLA_ROW_KERNEL(qola_detail_fwd_fp16, qola_mha_fwd_args, qola::q_rows, qola::fwd_row<qola::Fp16>)
