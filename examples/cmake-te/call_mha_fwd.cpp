// Calls the namespaced forward the way TransformerEngine does, with arguments no kernel serves
// (all sizes zero): the library answers with an error (a negative time or a thrown
// std::runtime_error), never by ending the process.
#include <cstdio>
#include <exception>

#include "qola_mha_fwd.h"

int main()
{
    aiter::mha_fwd_args args{};
    ck_tile::stream_config stream{};
    try
    {
        const float t = QOLA_NS(mha_fwd)(args,
                                         stream,
                                         "bf16",
                                         /*is_group_mode=*/false,
                                         mask_enum::no_mask,
                                         bias_enum::no_bias,
                                         /*has_lse=*/true,
                                         /*use_ext_asm=*/true);
        std::printf("returned %s\n", t < 0 ? "an error" : "a time");
    }
    catch(const std::exception& e)
    {
        std::printf("threw: %s\n", e.what());
    }
    return 0;
}
