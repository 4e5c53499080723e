// AVX2 versions of the LLM dot kernels (no VNNI): signed bytes are multiplied with
// vpmaddubsw after moving the weight's sign onto the activation (|w| * (x * sign(w))), whose
// pairwise sums stay below 2 * 127 * 127 and cannot saturate. Built with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include <cstring>

#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

float Reduce(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

float DotF32(const float* w, const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
  }
  float s = Reduce(_mm256_add_ps(a0, a1));
  for (; i < n; ++i) s += w[i] * x[i];
  return s;
}

float DotF16(const uint16_t* w, const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i))),
                         _mm256_loadu_ps(x + i), a0);
  }
  float s = Reduce(a0);
  for (; i < n; ++i) s += _cvtsh_ss(w[i]) * x[i];
  return s;
}

// 8 int32 sums of products of 32 signed bytes.
inline __m256i DotS8(__m256i w, __m256i x) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

float DotQ8_0(const uint8_t* w, const Q8Row& x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + b * 34;
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * 32));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DotS8(wq, xq)), _mm256_set1_ps(HalfAt(blk) * x.d[b]), acc);
  }
  return Reduce(acc);
}

float DotQ4_0(const uint8_t* w, const Q8Row& x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m256i eight = _mm256_set1_epi8(8);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + b * 18;
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m256i q = _mm256_sub_epi8(
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m)), eight);
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * 32));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(DotS8(q, xq)), _mm256_set1_ps(HalfAt(blk) * x.d[b]), acc);
  }
  return Reduce(acc);
}

void AxpyF16(float a, const uint16_t* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, xf, _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * _cvtsh_ss(x[i]);
}

void AxpyQ8_0(float a, const uint8_t* x, float* y, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = x + b * 34;
    const __m256 d = _mm256_set1_ps(HalfAt(blk));
    float* yb = y + b * 32;
    for (int k = 0; k < 4; ++k) {
      const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + 8 * k));
      const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d);
      _mm256_storeu_ps(yb + 8 * k, _mm256_fmadd_ps(v, av, _mm256_loadu_ps(yb + 8 * k)));
    }
  }
}

void ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

LlmKernelTable MakeTable() {
  LlmKernelTable t = *ScalarLlmKernels();
  t.name = "avx2";
  t.dot_f32 = DotF32;
  t.dot_f16 = DotF16;
  t.dot_q8_0 = DotQ8_0;
  t.dot_q4_0 = DotQ4_0;
  t.axpy_f16 = AxpyF16;
  t.to_f16 = ToF16;
  t.axpy_q8_0 = AxpyQ8_0;
  return t;
}

}  // namespace

const LlmKernelTable* Avx2LlmKernels() {
  static const LlmKernelTable table = MakeTable();
  return &table;
}

}  // namespace inferloop::llm
