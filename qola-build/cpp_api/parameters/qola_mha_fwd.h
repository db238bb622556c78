// qola's C++ API over AITER: attention forward (library <ns>_libmha_fwd.so), for an AITER whose
// aiter::mha_fwd takes its options as parameters (AITER 05a0d1f, qola's pin; qola reads which
// API the tree has from its csrc/include/mha_fwd.h).
//
// QOLA_NS(mha_fwd) takes exactly what aiter::mha_fwd takes at the AITER commit the library was
// built from (see csrc/include/mha_fwd.h of the prepared tree) and returns what it returns: the
// kernel time in milliseconds when stream_config asks for timing, a negative value when no
// kernel serves the arguments.
// Errors are thrown, never an exit(): a failing HIP call, or a code object neither embedded for
// the device's architecture nor found under AITER_ASM_DIR, throws a std::runtime_error whose
// message names the call or the code object.
#pragma once

#include <string>

#include "mha_fwd.h"
#include "qola_common.h"

QOLA_NS_BEGIN

__attribute__((visibility("default"))) float mha_fwd(aiter::mha_fwd_args args,
                                                     const ck_tile::stream_config& stream_config,
                                                     std::string q_dtype_str,
                                                     bool is_group_mode,
                                                     mask_enum mask_type,
                                                     bias_enum bias_type,
                                                     bool has_lse,
                                                     bool use_ext_asm,
                                                     int how_v3_bf16_cvt                = 1,
                                                     const void* seqstart_q_padding_ptr = nullptr,
                                                     const void* seqstart_k_padding_ptr = nullptr,
                                                     bool is_v3_api_check               = false);

QOLA_NS_END
