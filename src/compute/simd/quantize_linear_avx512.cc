// The avx512 instantiation of quantize_linear_impl.h, compiled with simd_avx512.cc's -m flags and
// -ffp-contract=off (a * b + c is not fused: the results are those of the scalar build).
#pragma GCC optimize("O3")
#include "compute/simd/quantize_linear_impl.h"

IL_QUANTIZE_LOOPS_INSTANTIATE(inferloop::simd::Isa::kAvx512)
