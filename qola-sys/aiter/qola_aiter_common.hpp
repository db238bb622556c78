// What qola's AITER wrappers share: the shapes AITER's receipt-700 kernels take, and the mapping
// of qola_mha_shape onto AITER's dtype string and causal mask.
#pragma once

#include "aiter_hip_common.h"
#include "mask.hpp"
#include "qola_mha.h"

#include <hip/hip_runtime.h>

#include <exception>

// fp16 and bf16 only (receipt 700 builds no fp32 or fp8 kernel), positive sizes, causal 0/1.
static inline bool qola_aiter_shape_ok(const qola_mha_shape& s)
{
    return (s.dtype == QOLA_DTYPE_FP16 || s.dtype == QOLA_DTYPE_BF16) && s.batch > 0 &&
           s.nhead > 0 && s.seqlen_q > 0 && s.seqlen_k > 0 && s.head_dim > 0 &&
           (s.causal == 0 || s.causal == 1) && s.scale == s.scale;
}

static inline const char* qola_aiter_dtype(const qola_mha_shape& s)
{
    return s.dtype == QOLA_DTYPE_FP16 ? "fp16" : "bf16";
}

// Causal is aligned to the bottom right, as qola_mha.h documents: (-1, 0) windows.
struct qola_aiter_mask
{
    mask_enum type;
    int left;
    int right;
};

static inline qola_aiter_mask qola_aiter_mask_of(const qola_mha_shape& s)
{
    return s.causal ? qola_aiter_mask{mask_enum::mask_bottom_right, -1, 0}
                    : qola_aiter_mask{mask_enum::no_mask, -1, -1};
}

// The status of an AITER launch: its launchers return a time, negative when no kernel of this
// build handles the arguments.
static inline int qola_aiter_status(float time)
{
    return time < 0 ? (int)hipErrorInvalidValue : (int)hipGetLastError();
}

// Runs an AITER launch and returns its status. qola's series makes AITER throw instead of
// ending the process (aiter_hip_error: a failing HIP call, a code object neither embedded for
// this GPU nor under AITER_ASM_DIR); the C API returns that as the HIP error code.
template <typename Launch>
static inline int qola_aiter_call(Launch launch)
{
    try
    {
        return qola_aiter_status(launch());
    }
    catch(const aiter_hip_error& e)
    {
        return (int)e.code;
    }
    catch(const std::exception&)
    {
        return (int)hipErrorUnknown;
    }
}
