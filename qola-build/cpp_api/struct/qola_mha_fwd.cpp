// qola's C++ API over AITER (options inside aiter::mha_fwd_args): attention forward, forwarded
// to aiter::mha_fwd inside the library.
#include "qola_mha_fwd.h"

QOLA_NS_BEGIN

float mha_fwd(const aiter::mha_fwd_args& args, const ck_tile::stream_config& stream_config)
{
    return ::aiter::mha_fwd(args, stream_config);
}

QOLA_NS_END
