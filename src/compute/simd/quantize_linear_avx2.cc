// The avx2 instantiation of quantize_linear_impl.h, compiled with -mavx2 -mfma -ffp-contract=off
// (a * b + c is not fused: the results are those of the scalar build).
#pragma GCC optimize("O3")
#include "compute/simd/quantize_linear_impl.h"

IL_QUANTIZE_LOOPS_INSTANTIATE(inferloop::simd::Isa::kAvx2)
