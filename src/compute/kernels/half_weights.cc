// HalfWeights::Expand (dnnl_common.h): float16 weights widened to float32 with F16C / AVX-512
// conversions, chosen by simd::ActiveIsa().
// GCC 12 reports _mm512_cvtph_ps's own _mm512_undefined_ps() pass-through operand as
// maybe-uninitialized; it is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "base/float_types.h"
#include "compute/kernels/dnnl_common.h"
#include "compute/simd/cpu_isa.h"

namespace inferloop {
namespace dnnl_kernels {

namespace {

__attribute__((target("avx512f"))) void HalfToFloatAvx512(const uint16_t* h, float* f, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i)));
    const __m512 b = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i + 16)));
    _mm512_storeu_ps(f + i, a);
    _mm512_storeu_ps(f + i + 16, b);
  }
  for (; i < n; ++i) f[i] = HalfToFloat(h[i]);
}

__attribute__((target("avx2,f16c"))) void HalfToFloatF16c(const uint16_t* h, float* f, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  for (; i < n; ++i) f[i] = HalfToFloat(h[i]);
}

}  // namespace

void HalfWeights::Expand(float* out) const {
  const size_t n = data.size();
  switch (simd::ActiveIsa()) {
    case simd::Isa::kAvx512: HalfToFloatAvx512(data.data(), out, n); return;
    case simd::Isa::kAvx2:
      if (__builtin_cpu_supports("f16c")) {
        HalfToFloatF16c(data.data(), out, n);
        return;
      }
      break;
    default: break;
  }
  for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(data[i]);
}

}  // namespace dnnl_kernels
}  // namespace inferloop
