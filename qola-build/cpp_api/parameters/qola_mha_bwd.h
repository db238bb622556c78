// qola's C++ API over AITER: attention backward (library <ns>_libmha_bwd.so), for an AITER whose
// aiter::mha_bwd takes its options as parameters (AITER 05a0d1f, qola's pin).
//
// QOLA_NS(mha_bwd) takes exactly what aiter::mha_bwd takes at the AITER commit the library was
// built from (see csrc/include/mha_bwd.h of the prepared tree) and returns what it returns.
// Errors are thrown, never an exit(): a failing HIP call, or a code object neither embedded for
// the device's architecture nor found under AITER_ASM_DIR, throws a std::runtime_error whose
// message names the call or the code object.
#pragma once

#include <string>

#include "mha_bwd.h"
#include "qola_common.h"

QOLA_NS_BEGIN

__attribute__((visibility("default"))) float mha_bwd(aiter::mha_bwd_args args,
                                                     const ck_tile::stream_config& stream_config,
                                                     std::string q_dtype_str,
                                                     bool is_group_mode,
                                                     mask_enum mask_type,
                                                     bias_enum bias_type,
                                                     bool has_dbias,
                                                     bool is_store_randval,
                                                     bool deterministic,
                                                     bool use_ext_asm,
                                                     bool is_v3_atomic_fp32,
                                                     int how_v3_bf16_cvt,
                                                     const void* seqlen_q_padded = nullptr,
                                                     const void* seqlen_k_padded = nullptr,
                                                     bool is_v3_api_check        = false);

// The bytes of the dq accumulator (float) a QOLA_NS(mha_bwd) call with these traits and
// arguments needs at args.dq_acc_ptr, sized as AITER sizes it at this commit: one split, or for
// a deterministic backward ceil(max_seqlen_k / kN0) splits (kN0 = 128 for hdim_q <= 128, else
// 64), each of (batch x seqlen_q, or total_q in group mode) x nhead_q x hdim_q values. At this
// commit CK's backward has no launcher that owns its workspace: the caller allocates it, and
// zeroes it for a deterministic backward or any mask (blocks a mask skips are not written).
__attribute__((visibility("default"))) size_t
mha_bwd_workspace_size(const fmha_bwd_traits& traits, const aiter::mha_bwd_args& args);

QOLA_NS_END
