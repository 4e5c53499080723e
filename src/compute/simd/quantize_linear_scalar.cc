// The scalar instantiation of quantize_linear_impl.h, compiled with no -m flags (baseline x86-64).
// The loops are written for the auto-vectorizer: -O2's cheap cost model leaves them scalar.
#pragma GCC optimize("O3")
#include "compute/simd/quantize_linear_impl.h"

IL_QUANTIZE_LOOPS_INSTANTIATE(inferloop::simd::Isa::kScalar)
