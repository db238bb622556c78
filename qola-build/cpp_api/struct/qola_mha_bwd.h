// qola's C++ API over AITER: attention backward (library <ns>_libmha_bwd.so), for an AITER whose
// aiter::mha_bwd takes all of its options inside aiter::mha_bwd_args (the newer API; qola reads
// which one the tree has from its csrc/include/mha_bwd.h). The signatures are QoLA's.
//
// QOLA_NS(mha_bwd)(args, stream_config) runs aiter::mha_bwd(args, stream_config) inside the
// library and returns what it returns. With composable_kernel (ENABLE_CK),
// QOLA_NS(mha_bwd_workspace_size)(traits) gives the device workspace CK's backward launcher
// needs for these traits, computed on the host: the launcher's own symbols are local to the
// library, so the question is asked through it.
#pragma once

#include <cstddef>

#include "mha_bwd.h"
#include "qola_common.h"
#if ENABLE_CK
#include "fmha_bwd.hpp"
#endif

QOLA_NS_BEGIN

__attribute__((visibility("default"))) float mha_bwd(const aiter::mha_bwd_args& args,
                                                     const ck_tile::stream_config& stream_config);

#if ENABLE_CK
__attribute__((visibility("default"))) size_t mha_bwd_workspace_size(const fmha_bwd_traits& traits);
#endif

QOLA_NS_END
