// The AVX2 vector operations of the K-quant group tiles (llm_kernels_impl.h G16Q4KSubBlocks /
// G16Q6KSubBlocks), shared by llm_kernels_avx2.cc and llm_kernels_avx2_q4k.cc, and the Q4_K
// product the latter compiles. Include only from files built with -mavx2 -mfma -mf16c; like
// llm_kernels_impl.h, everything but Avx2GemmG16Q4K is in an anonymous namespace (a copy per
// file).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "llm/llm_kernels.h"
#include "llm/llm_kernels_impl.h"

namespace inferloop::llm {

// LlmKernelTable::gemm_g16_q4_k of the AVX2 table (llm_kernels_avx2_q4k.cc).
void Avx2GemmG16Q4K(const uint8_t* w, int64_t groups, int64_t rows, const Q8KRows& x, int64_t T, float* Y,
                    int64_t y_stride);

namespace {

// The vector operations of the K-quant group tiles (llm_kernels_impl.h G16Q4KSubBlocks /
// G16Q6KSubBlocks): two parts of 8 rows per group, one per ymm; a sub-block's products in int16
// pairs (vpmaddubsw, vpaddw), scaled and the pairs added by vpmaddwd.
struct KOps {
  static constexpr int kParts = 2;
  static constexpr bool kFloatsInMemory = true;
  static constexpr bool kDecodePrefetch = true;  // llm_kernels_impl.h PrefetchEighthAhead
  static constexpr int kQ4SubBlocksPerPass = 1;
  static constexpr int kQ6Columns = 2;  // 2 columns of 2 * 63 * 127 pairs: at most 32004
  using I = __m256i;
  using F = __m256;
  static I Load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I Bcast4(const int8_t* p) { return _mm256_set1_epi32(Load4(p)); }
  static I AddProducts(I acc, I u8, I s8) { return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u8, s8)); }
  static I Q4Scale(const uint8_t* p) {  // (v, v) int16 pairs
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
  }
  template <int kHigh>
  static I Q6Scale(const uint8_t* p) {  // (v, v) int16 pairs of the low or high scale of each pair
    const I q = SxWords(p);
    return kHigh ? _mm256_or_si256(_mm256_and_si256(q, _mm256_set1_epi32(static_cast<int32_t>(0xFFFF0000u))), _mm256_srli_epi32(q, 16))
                 : _mm256_or_si256(_mm256_slli_epi32(q, 16), _mm256_and_si256(q, _mm256_set1_epi32(0xFFFF)));
  }
  static I ScaleSum(I tot, I acc, I sc) { return _mm256_add_epi32(tot, _mm256_madd_epi16(acc, sc)); }
  static I MaddW(I acc, I a, I b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  static I ZeroI() { return _mm256_setzero_si256(); }
  static I And(I a, I b) { return _mm256_and_si256(a, b); }
  static I Or(I a, I b) { return _mm256_or_si256(a, b); }
  static I Set8(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }
  static I Set32(int32_t v) { return _mm256_set1_epi32(v); }
  template <int N> static I Srli16(I v) { return _mm256_srli_epi16(v, N); }
  template <int N> static I Slli16(I v) { return _mm256_slli_epi16(v, N); }
  static I Sub16(I a, I b) { return _mm256_sub_epi16(a, b); }
  static I ZxWords(const uint8_t* p) { return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I SxWords(const uint8_t* p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F Half(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F Cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F FnMadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F SetF(float v) { return _mm256_set1_ps(v); }
  static F ZeroF() { return _mm256_setzero_ps(); }
  static void Store(float* y, F v, int valid) {
    if (valid >= 8) {
      _mm256_storeu_ps(y, v);
    } else {
      _mm256_maskstore_ps(y, _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), v);
    }
  }
};

}  // namespace
}  // namespace inferloop::llm
