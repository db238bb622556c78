// qola's C++ API over AITER (options inside aiter::mha_bwd_args): attention backward, forwarded
// to aiter::mha_bwd inside the library; the workspace CK's backward launcher reports.
#include "qola_mha_bwd.h"

QOLA_NS_BEGIN

float mha_bwd(const aiter::mha_bwd_args& args, const ck_tile::stream_config& stream_config)
{
    return ::aiter::mha_bwd(args, stream_config);
}

#if ENABLE_CK
size_t mha_bwd_workspace_size(const fmha_bwd_traits& traits)
{
    return ::fmha_bwd_launcher(traits).workspace_size;
}
#endif

QOLA_NS_END
