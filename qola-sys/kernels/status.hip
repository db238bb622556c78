// qola_mha_status_string: the names and rules of qola_mha.h's fields, from its one list.
#include "qola_mha.h"


namespace {

#define QOLA_MHA_INVALID_TEXT(name, value, text, rule) text ": invalid: " rule,
const char* const invalid_text[] = {QOLA_MHA_FIELDS(QOLA_MHA_INVALID_TEXT)};
#undef QOLA_MHA_INVALID_TEXT

#define QOLA_MHA_UNSUPPORTED_TEXT(name, value, text, rule) text ": not supported by this backend",
const char* const unsupported_text[] = {QOLA_MHA_FIELDS(QOLA_MHA_UNSUPPORTED_TEXT)};
#undef QOLA_MHA_UNSUPPORTED_TEXT

}  // namespace

extern "C" __attribute__((visibility("default"))) const char* qola_mha_status_string(int status) {
    if (status == QOLA_MHA_STATUS_SUCCESS) return "success";
    const int field = status % 1000;
    if (field < QOLA_MHA_FIELD_COUNT) {
        if (status / 1000 == QOLA_MHA_STATUS_INVALID / 1000) return invalid_text[field];
        if (status / 1000 == QOLA_MHA_STATUS_UNSUPPORTED / 1000) return unsupported_text[field];
    }
    if (status > 0 && status < QOLA_MHA_STATUS_INVALID) return "a HIP error (hipGetErrorString names it)";
    return "not a qola_mha status";
}
