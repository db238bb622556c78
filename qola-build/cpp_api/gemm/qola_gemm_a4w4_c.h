// The C interface's side of a4w4 wrapper (internal to the libraries, not installed): a
// qola_tensor_t made into the tree's aiter_tensor_t, and a call whose C++ errors become a
// status and a message in the caller's buffer.
#pragma once

#include <cstring>
#include <exception>
#include <string>

#include "aiter_tensor.h"
#include "qola_gemm_a4w4.h"

// Newer AITERs abort on a failed AITER_CHECK unless the calling thread allows it to throw
// (aiter_detail::g_aiter_can_throw, with aiter_ctypes_error.h); qola's port at 05a0d1f throws.
#if __has_include("aiter_ctypes_error.h")
#define QOLA_AITER_THROW_SWITCH 1
#endif

namespace qola_gemm_c {

// What qola refuses, as an exception the guard turns into status 1.
struct Refused : std::exception {
    std::string what_;
    explicit Refused(std::string what) : what_(std::move(what)) {}
    const char* what() const noexcept override { return what_.c_str(); }
};

inline void write_error(char* buf, size_t size, const char* message)
{
    if(buf == nullptr || size == 0)
        return;
    std::strncpy(buf, message, size - 1);
    buf[size - 1] = '\0';
}

inline AiterDtype aiter_dtype(const char* name, int32_t dtype)
{
    switch(dtype)
    {
    case QOLA_DTYPE_FP4X2: return AITER_DTYPE_fp4x2;
    case QOLA_DTYPE_E8M0: return AITER_DTYPE_fp8_e8m0;
    case QOLA_DTYPE_BF16: return AITER_DTYPE_bf16;
    case QOLA_DTYPE_FP16: return AITER_DTYPE_fp16;
    case QOLA_DTYPE_FP32: return AITER_DTYPE_fp32;
    case QOLA_DTYPE_U8: return AITER_DTYPE_u8;
    case QOLA_DTYPE_I8: return AITER_DTYPE_i8;
    default:
        throw Refused(std::string(name) + ": unknown dtype " + std::to_string(dtype) +
                      " (a qola_dtype_t is 0 to 6)");
    }
}

// `name`'s descriptor as AITER's tensor; a null one is refused.
inline aiter_tensor_t to_aiter(const char* name, const qola_tensor_t* t)
{
    if(t == nullptr)
        throw Refused(std::string("null tensor descriptor: ") + name);
    if(t->ndim < 0 || t->ndim > 8)
        throw Refused(std::string(name) + ": ndim " + std::to_string(t->ndim) +
                      " is outside 0..8");
    aiter_tensor_t a{};
    a.ptr       = t->ptr;
    a.ndim      = t->ndim;
    a.numel_    = t->ndim > 0 ? 1 : 0;
    for(int i = 0; i < t->ndim; ++i)
    {
        a.shape[i]   = t->shape[i];
        a.strides[i] = t->strides[i];
        a.numel_ *= static_cast<size_t>(t->shape[i]);
    }
    a.dtype_    = aiter_dtype(name, t->dtype);
    a.device_id = t->device_id;
    return a;
}

// Runs `call` (which returns AITER's status), every C++ error caught: 0, the status, or 1
// with the message written.
template <typename Call>
int guarded(char* err_buf, size_t err_buf_size, Call&& call)
{
#ifdef QOLA_AITER_THROW_SWITCH
    struct Allow {
        bool before = aiter_detail::g_aiter_can_throw;
        Allow() { aiter_detail::g_aiter_can_throw = true; }
        ~Allow() { aiter_detail::g_aiter_can_throw = before; }
    } allow;
#endif
    try
    {
        return call();
    }
    catch(const std::exception& e)
    {
        write_error(err_buf, err_buf_size, e.what());
    }
    catch(...)
    {
        write_error(err_buf, err_buf_size, "an error that is not a std::exception");
    }
    return 1;
}

} // namespace qola_gemm_c
