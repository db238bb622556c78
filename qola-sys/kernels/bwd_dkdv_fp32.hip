// Backward attention, fp32: dk and dv.
#include "qola_mha_impl.hpp"

QOLA_ROW_KERNEL(qola_detail_bwd_dkdv_fp32, qola_mha_bwd_args, qola::k_rows, qola::bwd_dkdv_row<qola::Fp32>)
