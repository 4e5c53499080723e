// The avx2 instantiation of int8_loops_impl.h, compiled with -mavx2 -mfma -ffp-contract=off
// (a * b + c is not fused: the results are those of the scalar build).
#pragma GCC optimize("O3")
#include "compute/simd/int8_loops_impl.h"

IL_INT8_LOOPS_INSTANTIATE(inferloop::simd::Isa::kAvx2)
