// qola's C++ API over AITER: attention backward (library <ns>_libmha_bwd.so).
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

QOLA_NS_END
