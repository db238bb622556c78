// qola's C++ API over AITER, shared part: the namespace of the API and the export macros
// (QoLA's names: QOLA_NS, QOLA_NS_BEGIN/END, QOLA_EXPORT, QOLA_C, QOLA_C_BEGIN/END).
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

// What the library exports: qola's API, by default visibility (the version script keeps only
// qola::* global).
#define QOLA_EXPORT __attribute__((visibility("default")))

// C-linkage names cannot live in a namespace: the namespace becomes a prefix instead.
// QOLA_C(mha_fwd) is qola_te_mha_fwd with QOLA_NAMESPACE te, qola_mha_fwd without one.
#define QOLA_C_JOIN_(a, b) a##b
#define QOLA_C_JOIN(a, b) QOLA_C_JOIN_(a, b)
#ifdef QOLA_NAMESPACE
#define QOLA_C(name) QOLA_C_JOIN(QOLA_C_JOIN(qola_, QOLA_NAMESPACE), QOLA_C_JOIN(_, name))
#else
#define QOLA_C(name) QOLA_C_JOIN(qola_, name)
#endif

#ifdef __cplusplus
#define QOLA_C_BEGIN extern "C" {
#define QOLA_C_END }
#else
#define QOLA_C_BEGIN
#define QOLA_C_END
#endif
