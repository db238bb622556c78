// qola's C++ API over AITER, shared part: the namespace of the API.
//
// Written by `qola build` into <output-dir>/include with qola_config.h, which holds the
// manifest's `[qola] namespace`. With a namespace `te` the API is qola::te::mha_fwd and
// QOLA_NS(mha_fwd) names it; without one it is qola::mha_fwd. Libraries built with different
// namespaces load into one process side by side.
#pragma once

#include <hip/hip_runtime.h>

#include "qola_config.h"

#ifdef QOLA_NAMESPACE
#define QOLA_NS_BEGIN \
    namespace qola {  \
    namespace QOLA_NAMESPACE {
#define QOLA_NS_END \
    }               \
    }
#define QOLA_NS(name) ::qola::QOLA_NAMESPACE::name
#else
#define QOLA_NS_BEGIN namespace qola {
#define QOLA_NS_END }
#define QOLA_NS(name) ::qola::name
#endif
