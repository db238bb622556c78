// qola's C++ API over AITER's a4w4 (FP4) GEMMs under QoLA's newest name: the blockscale GEMM
// (libgemm_a4w4_blockscale) and the asm GEMM (libgemm_a4w4_asm); see each header.
#pragma once

#include "qola_gemm_a4w4_asm.h"
#include "qola_gemm_a4w4_blockscale.h"
