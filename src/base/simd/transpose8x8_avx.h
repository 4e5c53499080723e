// Internal to the per-ISA translation units (vec_avx2.h, vec_avx512.h): an 8 x 8 transpose of
// 32-bit elements with AVX (256-bit) shuffles, the same on both instruction sets. Include only
// from translation units compiled with at least -mavx2. In an anonymous namespace, as
// vec_avx2.h says why.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace inferloop {
namespace simd {
namespace {

// out[c * os + r] = in[r * is + c] for an 8 x 8 block of 32-bit elements (bits moved as is).
inline void Transpose8x8Avx(const uint32_t* in, int64_t is, uint32_t* out, int64_t os) {
  auto ld = [&](int r) { return _mm256_loadu_ps(reinterpret_cast<const float*>(in + r * is)); };
  const __m256 t0 = _mm256_unpacklo_ps(ld(0), ld(1)), t1 = _mm256_unpackhi_ps(ld(0), ld(1));
  const __m256 t2 = _mm256_unpacklo_ps(ld(2), ld(3)), t3 = _mm256_unpackhi_ps(ld(2), ld(3));
  const __m256 t4 = _mm256_unpacklo_ps(ld(4), ld(5)), t5 = _mm256_unpackhi_ps(ld(4), ld(5));
  const __m256 t6 = _mm256_unpacklo_ps(ld(6), ld(7)), t7 = _mm256_unpackhi_ps(ld(6), ld(7));
  // s_k holds column k (rows 0-3 / 4-7 in t0-3 / t4-7) in its low half and column k + 4 in its high half.
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  auto st = [&](int c, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(out + c * os), v); };
  st(0, _mm256_permute2f128_ps(s0, s4, 0x20));
  st(1, _mm256_permute2f128_ps(s1, s5, 0x20));
  st(2, _mm256_permute2f128_ps(s2, s6, 0x20));
  st(3, _mm256_permute2f128_ps(s3, s7, 0x20));
  st(4, _mm256_permute2f128_ps(s0, s4, 0x31));
  st(5, _mm256_permute2f128_ps(s1, s5, 0x31));
  st(6, _mm256_permute2f128_ps(s2, s6, 0x31));
  st(7, _mm256_permute2f128_ps(s3, s7, 0x31));
}

}  // namespace
}  // namespace simd
}  // namespace inferloop
