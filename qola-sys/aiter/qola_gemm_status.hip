// qola_gemm_status_string: the names and rules of qola_gemm.h's fields, from its one list.
#include "qola_gemm.h"

namespace {

#define QOLA_GEMM_INVALID_TEXT(name, value, text, rule) text ": invalid: " rule,
const char* const invalid_text[] = {QOLA_GEMM_FIELDS(QOLA_GEMM_INVALID_TEXT)};
#undef QOLA_GEMM_INVALID_TEXT

#define QOLA_GEMM_UNSUPPORTED_TEXT(name, value, text, rule) text ": not supported by this build's kernels",
const char* const unsupported_text[] = {QOLA_GEMM_FIELDS(QOLA_GEMM_UNSUPPORTED_TEXT)};
#undef QOLA_GEMM_UNSUPPORTED_TEXT

}  // namespace

extern "C" __attribute__((visibility("default"))) const char* qola_gemm_status_string(int status) {
    if (status == QOLA_GEMM_STATUS_SUCCESS) return "success";
    if (status == QOLA_GEMM_STATUS_KERNEL_ERROR) return "the kernel refused the arguments (its message is on standard error)";
    const int field = status % 1000;
    if (field < QOLA_GEMM_FIELD_COUNT) {
        if (status / 1000 == QOLA_GEMM_STATUS_INVALID / 1000) return invalid_text[field];
        if (status / 1000 == QOLA_GEMM_STATUS_UNSUPPORTED / 1000) return unsupported_text[field];
    }
    if (status > 0 && status < QOLA_GEMM_STATUS_INVALID) return "a HIP error (hipGetErrorString names it)";
    return "not a qola_gemm status";
}
