// The scalar instantiation of int8_loops_impl.h, compiled with no -m flags (baseline x86-64).
// The loops are written for the auto-vectorizer: -O2's cheap cost model leaves them scalar.
#pragma GCC optimize("O3")
#include "compute/simd/int8_loops_impl.h"

IL_INT8_LOOPS_INSTANTIATE(inferloop::simd::Isa::kScalar)
