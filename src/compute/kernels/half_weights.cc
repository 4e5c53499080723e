// HalfWeights::Expand (dnnl_common.h): float16 weights widened to float32 with F16C / AVX-512
// conversions, chosen by simd::ActiveIsa(). Why per call: oneDNN 2.6 has no f16-weight (nor f16)
// convolution / matmul / inner product on this CPU (probed: every such primitive descriptor is
// unimplemented). Cost measured on this machine, one thread, AVX-512 loop: 0.5 ms for a
// 3x3x512x512 conv's 2.4 M weights (about 2 ms per 10 M while they fit in cache), 15 ms for 16 M
// (memory bound, 9 ms per 10 M) - BERT-base's 85 M MatMul weights cost tens of ms per run, which
// is why fp16 is a memory mode and bf16 the fast one.
// GCC 12 reports _mm512_cvtph_ps's own _mm512_undefined_ps() pass-through operand as
// maybe-uninitialized; it is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "base/cpu_features.h"
#include "base/float_types.h"
#include "compute/kernels/dnnl_common.h"
#include "compute/simd/cpu_isa.h"

extern "C" {
void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
int omp_get_thread_num();
int omp_get_num_threads();
int omp_get_max_threads();
}

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

// One conversion on the instruction set in force.
void Widen(const uint16_t* h, float* f, size_t n) {
  switch (simd::ActiveIsa()) {
    case simd::Isa::kAvx512: HalfToFloatAvx512(h, f, n); return;
    case simd::Isa::kAvx2:
      if (DetectedCpuFeatures().f16c) {
        HalfToFloatF16c(h, f, n);
        return;
      }
      break;
    default: break;
  }
  for (size_t i = 0; i < n; ++i) f[i] = HalfToFloat(h[i]);
}

struct WidenJob {
  const uint16_t* h;
  float* f;
  size_t n;
};

void WidenChunk(void* p) {
  const auto* job = static_cast<const WidenJob*>(p);
  const size_t parts = static_cast<size_t>(omp_get_num_threads()), me = static_cast<size_t>(omp_get_thread_num());
  const size_t per = (job->n / parts + 63) / 64 * 64;  // whole cache lines of output per thread
  const size_t begin = std::min(job->n, me * per), end = std::min(job->n, begin + per);
  if (begin < end) Widen(job->h + begin, job->f + begin, end - begin);
}

}  // namespace

void HalfWeights::Expand(float* out) const {
  const size_t n = data.size();
  // Large tensors are split over the OpenMP threads the caller's ThreadScope set (the team the
  // primitive that reads them runs on next).
  if (n >= (size_t{1} << 16) && omp_get_max_threads() > 1) {
    WidenJob job{data.data(), out, n};
    GOMP_parallel(&WidenChunk, &job, 0, 0);
    return;
  }
  Widen(data.data(), out, n);
}

}  // namespace dnnl_kernels
}  // namespace inferloop
