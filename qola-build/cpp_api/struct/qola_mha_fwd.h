// qola's C++ API over AITER: attention forward (library <ns>_libmha_fwd.so), for an AITER whose
// aiter::mha_fwd takes all of its options inside aiter::mha_fwd_args (the newer API; qola reads
// which one the tree has from its csrc/include/mha_fwd.h). The signature is QoLA's.
//
// QOLA_NS(mha_fwd)(args, stream_config) runs aiter::mha_fwd(args, stream_config) inside the
// library (whose own symbols the library does not export) and returns what it returns. The
// forward functions beyond it that the tree's mha_fwd.h declares (mha_fwd_calculate_num_splits,
// mha_fwd_workspace_size, mha_fwd_with_sink_supported) follow, under the tree's own condition.
#pragma once

#include <cstddef>

#include "mha_fwd.h"
#include "qola_common.h"

QOLA_NS_BEGIN

__attribute__((visibility("default"))) float mha_fwd(const aiter::mha_fwd_args& args,
                                                     const ck_tile::stream_config& stream_config);

QOLA_NS_END
