// Backward attention, bf16: dk and dv.
#include "qola_mha_impl.hpp"

QOLA_ROW_KERNEL(qola_detail_bwd_dkdv_bf16, qola_mha_bwd_args, qola::k_rows, qola::bwd_dkdv_row<qola::Bf16>)
