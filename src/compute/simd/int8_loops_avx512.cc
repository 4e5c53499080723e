// The avx512 instantiation of int8_loops_impl.h, compiled with simd_avx512.cc's -m flags and
// -ffp-contract=off (a * b + c is not fused: the results are those of the scalar build).
#pragma GCC optimize("O3")
#include "compute/simd/int8_loops_impl.h"

IL_INT8_LOOPS_INSTANTIATE(inferloop::simd::Isa::kAvx512)
