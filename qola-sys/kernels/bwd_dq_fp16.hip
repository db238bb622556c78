// Backward attention, fp16: the per-row delta = dot(dout, o), then dq.
#include "qola_mha_impl.hpp"

QOLA_ROW_KERNEL(qola_detail_bwd_delta_fp16, qola_mha_bwd_args, qola::q_rows, qola::bwd_delta_row<qola::Fp16>)
QOLA_ROW_KERNEL(qola_detail_bwd_dq_fp16, qola_mha_bwd_args, qola::q_rows, qola::bwd_dq_row<qola::Fp16>)
