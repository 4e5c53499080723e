// AVX-512 VNNI versions of the LLM dot kernels. Built with -mavx512f/bw/vl/dq/vnni (CMakeLists.txt);
// only called when CPUID reports those extensions.
//
// vpdpbusd multiplies unsigned by signed bytes, so weights are made unsigned by an offset: Q4_0
// nibbles are stored as q + 8 already, Q8_0 bytes become q + 128 by flipping the top bit. The
// offset's contribution, offset * sum(q_x) per block, is taken back with the activation row's
// precomputed block sums.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

float DotF32(const float* w, const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
  }
  for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_maskz_loadu_ps(m, x + i), a1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

float DotF16(const uint16_t* w, const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 wf = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i)));
    a0 = _mm512_fmadd_ps(wf, _mm512_loadu_ps(x + i), a0);
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 wf = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + i));
    a0 = _mm512_fmadd_ps(wf, _mm512_maskz_loadu_ps(m, x + i), a0);
  }
  return _mm512_reduce_add_ps(a0);
}

// Two blocks' scales as one vector: lanes 0-7 s0, lanes 8-15 s1.
inline __m512 Scales2(float s0, float s1) {
  return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

float DotQ8_0(const uint8_t* w, const Q8Row& x, int64_t n) {
  const int64_t nb = n / 32;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc = _mm512_setzero_ps();
  float corr = 0;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const uint8_t* b0 = w + b * 34;
    const uint8_t* b1 = b0 + 34;
    const __m512i wq = _mm512_inserti64x4(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), 1);
    const __m512i xq = _mm512_loadu_si512(x.q + b * 32);
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(wq, flip), xq);
    const float d0 = HalfAt(b0), d1 = HalfAt(b1);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), Scales2(d0 * x.d[b], d1 * x.d[b + 1]), acc);
    corr += d0 * x.sum[b] + d1 * x.sum[b + 1];
  }
  float tail = 0;
  for (; b < nb; ++b) {
    const uint8_t* b0 = w + b * 34;
    const __m256i wq = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2)),
                                        _mm256_set1_epi8(static_cast<char>(0x80)));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * 32));
    const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wq, xq);
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(dot), _mm256_extracti128_si256(dot, 1));
    const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    const __m128i s4 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1));
    const float d0 = HalfAt(b0);
    tail += d0 * x.d[b] * static_cast<float>(_mm_cvtsi128_si32(s4));
    corr += d0 * x.sum[b];
  }
  return _mm512_reduce_add_ps(acc) + tail - 128.0f * corr;
}

// The 32 nibbles of a Q4_0 block in element order (low nibbles are elements 0-15, high 16-31).
inline __m256i Nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

float DotQ4_0(const uint8_t* w, const Q8Row& x, int64_t n) {
  const int64_t nb = n / 32;
  __m512 acc = _mm512_setzero_ps();
  float corr = 0;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const uint8_t* b0 = w + b * 18;
    const uint8_t* b1 = b0 + 18;
    const __m512i wq = _mm512_inserti64x4(_mm512_zextsi256_si512(Nibbles(b0 + 2)), Nibbles(b1 + 2), 1);
    const __m512i xq = _mm512_loadu_si512(x.q + b * 32);
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, xq);
    const float d0 = HalfAt(b0), d1 = HalfAt(b1);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), Scales2(d0 * x.d[b], d1 * x.d[b + 1]), acc);
    corr += d0 * x.sum[b] + d1 * x.sum[b + 1];
  }
  float tail = 0;
  for (; b < nb; ++b) {
    const uint8_t* b0 = w + b * 18;
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * 32));
    const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), Nibbles(b0 + 2), xq);
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(dot), _mm256_extracti128_si256(dot, 1));
    const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    const __m128i s4 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1));
    const float d0 = HalfAt(b0);
    tail += d0 * x.d[b] * static_cast<float>(_mm_cvtsi128_si32(s4));
    corr += d0 * x.sum[b];
  }
  return _mm512_reduce_add_ps(acc) + tail - 8.0f * corr;
}

void AxpyF16(float a, const uint16_t* x, float* y, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 xf = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, xf, _mm512_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * _cvtsh_ss(x[i]);
}

void AxpyQ8_0(float a, const uint8_t* x, float* y, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = x + b * 34;
    const __m512 d = _mm512_set1_ps(HalfAt(blk));
    float* yb = y + b * 32;
    for (int k = 0; k < 2; ++k) {
      const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + 16 * k));
      const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q8)), d);
      _mm512_storeu_ps(yb + 16 * k, _mm512_fmadd_ps(v, av, _mm512_loadu_ps(yb + 16 * k)));
    }
  }
}

void ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

// Products of weight rows with up to 8 activation rows at once: each pair of weight blocks is
// unpacked once into a vector of unsigned bytes, then multiplied with every activation row.
// The weight offset (8 for Q4_0, 128 for Q8_0 after flipping the sign bit) is taken back through
// vpdpbusd's accumulator input: each of a block's 8 lanes starts at -offset/8 * sum(q_x).
template <bool kQ4, int NT>
void GemmTile(const uint8_t* wr, int64_t chunks, const Q8Row* xr, float* out) {
  __m512 acc[NT];
  for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t c = 0; c < chunks; ++c) {
    if constexpr (kQ4) {
      // Both blocks' 16 bytes in one vector: low nibbles [b0 0-15, b1 0-15], high [b0 16-31,
      // b1 16-31]; the activations are stored in that order (Q8Row::q4).
      const uint8_t* b0 = wr + c * 36;
      const __m256i v = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 2))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 20)), 1);
      const __m256i m = _mm256_set1_epi8(0x0F);
      const __m512i wq = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_and_si256(v, m)),
                                            _mm256_and_si256(_mm256_srli_epi16(v, 4), m), 1);
      uint16_t h0, h1;
      std::memcpy(&h0, b0, 2);
      std::memcpy(&h1, b0 + 18, 2);
      // [d0 x8, d1 x8] -> 128-bit lanes reordered to [d0 x4, d1 x4, d0 x4, d1 x4].
      const __m512 d8 = _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16(static_cast<short>(h1)),
                                                         _mm_set1_epi16(static_cast<short>(h0))));
      const __m512 dw = _mm512_shuffle_f32x4(d8, d8, _MM_SHUFFLE(3, 1, 2, 0));
      for (int j = 0; j < NT; ++j) {
        const __m512i init = _mm512_loadu_si512(xr[j].lane_nsum4 + c * 16);
        const __m512i dot = _mm512_dpbusd_epi32(init, wq, _mm512_loadu_si512(xr[j].q4 + c * 64));
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_loadu_ps(xr[j].lane_d4 + c * 16)),
                                 acc[j]);
      }
      continue;
    }
    __m512i wq;
    __m512 dw;
    {
      const uint8_t* b0 = wr + c * 68;
      wq = _mm512_xor_si512(
          _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 36)), 1),
          flip);
      uint16_t h0, h1;
      std::memcpy(&h0, b0, 2);
      std::memcpy(&h1, b0 + 34, 2);
      dw = _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16(static_cast<short>(h1)), _mm_set1_epi16(static_cast<short>(h0))));
    }
    for (int j = 0; j < NT; ++j) {
      const __m512i init = _mm512_slli_epi32(_mm512_loadu_si512(xr[j].lane_nsum + c * 16), 4);  // 128 / 8 lanes
      const __m512i dot = _mm512_dpbusd_epi32(init, wq, _mm512_loadu_si512(xr[j].q + c * 64));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_loadu_ps(xr[j].lane_d + c * 16)), acc[j]);
    }
  }
  for (int j = 0; j < NT; ++j) out[j] = _mm512_reduce_add_ps(acc[j]);
}

template <bool kQ4>
void Gemm(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8Rows& x, int64_t T, float* Y, int64_t y_stride) {
  const int64_t chunks = x.n() / 64;
  Q8Row xr[8];
  float out[8];
  for (int64_t t0 = 0; t0 < T; t0 += 8) {
    const int nt = static_cast<int>(std::min<int64_t>(8, T - t0));
    for (int j = 0; j < nt; ++j) xr[j] = x.Row(t0 + j);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* wr = w + r * row_bytes;
      switch (nt) {
        case 8: GemmTile<kQ4, 8>(wr, chunks, xr, out); break;
        case 7: GemmTile<kQ4, 7>(wr, chunks, xr, out); break;
        case 6: GemmTile<kQ4, 6>(wr, chunks, xr, out); break;
        case 5: GemmTile<kQ4, 5>(wr, chunks, xr, out); break;
        case 4: GemmTile<kQ4, 4>(wr, chunks, xr, out); break;
        case 3: GemmTile<kQ4, 3>(wr, chunks, xr, out); break;
        case 2: GemmTile<kQ4, 2>(wr, chunks, xr, out); break;
        default: GemmTile<kQ4, 1>(wr, chunks, xr, out); break;
      }
      for (int j = 0; j < nt; ++j) Y[(t0 + j) * y_stride + r] = out[j];
    }
  }
}

// --- K-quants times Q8_K activations ---
// Both unpack a weight super-block into unsigned bytes (Q4_K: 0..15, Q6_K: 0..63) once, then per
// activation row multiply with vpmaddubsw (pair sums fit int16: 2*63*127 < 32767) and apply the
// sub-block scales with vpdpwssd (VNNI) into int32 lanes. The 16 lanes are folded to the 8 of
// llama.cpp's AVX2 kernels (lane l + lane l + 8: the same integers), and the float terms are added
// in that kernel's order (llm_kernels_scalar.cc says which), so the results are llama.cpp's bit
// for bit.

// Sum of 8 float lanes as llama.cpp's AVX2 kernels sum them.
inline float SumLanes8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

inline __m256i Fold16(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

// Q4_K's 12 packed bytes (ggml_types.cc) as 8 sub-block scales (bytes 0-7) and 8 mins (8-15).
inline __m128i Q4KScalesMins(const uint8_t* p) {
  uint32_t w[3];
  std::memcpy(w, p, 12);
  const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu, mn_lo = w[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | ((w[0] >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | ((w[1] >> 2) & 0x30303030u);
  return _mm_set_epi32(static_cast<int>(mn_hi), static_cast<int>(mn_lo), static_cast<int>(sc_hi), static_cast<int>(sc_lo));
}

// Index vectors for vpermw: 32 int16 lanes, lane i taking element base + i / span.
inline __m512i SpreadIndex(int base, int span) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = static_cast<int16_t>(base + i / span);
  return _mm512_load_si512(idx);
}

// Software prefetch of the weight bytes `kPrefetchAhead` ahead of a block about to be used (rows
// are contiguous, so this runs into the next rows): decoding one token streams every weight once,
// and the hardware prefetcher alone left the K-quant dots waiting on memory (measured: about 1.4x
// the single-thread decode speed on a TinyLlama-shaped Q4_K_M file). Prefetches never fault, so
// running past the end of the matrix is harmless.
constexpr int kPrefetchAhead = 2048;
inline void PrefetchBlock(const uint8_t* blk, int bytes) {
  for (int o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchAhead + o), _MM_HINT_T0);
}

// Q4_K row times NT Q8_K rows. Per 64 values (32 bytes of nibbles: low = sub-block 2c, high =
// 2c+1) one vector of 64 unsigned bytes in element order; its 32 int16 pair sums take scale 2c in
// lanes 0-15 and 2c+1 in lanes 16-31. The mins term, d_x * dmin * sum_g min_(g/2) * bsum_g, comes
// from the activation's 16-value sums, in four float lanes (pairs of sub-blocks).
template <int NT>
void Q4KTile(const uint8_t* wr, int64_t blocks, const Q8KRow* xr, float* out) {
  __m256 acc[NT];
  __m128 accm[NT];
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) {
    acc[j] = _mm256_setzero_ps();
    accm[j] = _mm_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m512i idx[4] = {SpreadIndex(0, 16), SpreadIndex(2, 16), SpreadIndex(4, 16), SpreadIndex(6, 16)};
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = wr + b * 144;
    PrefetchBlock(blk, 144);
    const __m128i sm = Q4KScalesMins(blk + 4);
    const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));  // lanes 0-7 scales, 8-15 mins
    // Mins as 8 int16 against the 32-value sums (pairs of 16-value sums): 4 int32 lanes.
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    __m512i sumi[NT];
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) sumi[j] = _mm512_setzero_si512();
    #pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
      const __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m4)),
                                            _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), 1);
      const __m512i scv = _mm512_permutexvar_epi16(idx[c], sc16);
      #pragma GCC unroll 8
      for (int j = 0; j < NT; ++j) {
        const __m512i p = _mm512_maddubs_epi16(wq, _mm512_loadu_si512(xr[j].q + b * 256 + 64 * c));
        sumi[j] = _mm512_dpwssd_epi32(sumi[j], p, scv);
      }
    }
    const float d = HalfAt(blk), dmin = HalfAt(blk + 2);
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[j].bsum + b * 16));
      const __m128i s32 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
      const __m128i prod = _mm_madd_epi16(mn16, s32);
      const float dx = xr[j].d[b];
      accm[j] = _mm_fmadd_ps(_mm_set1_ps(-dx * dmin), _mm_cvtepi32_ps(prod), accm[j]);
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * d), _mm256_cvtepi32_ps(Fold16(sumi[j])), acc[j]);
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) {
    __m128 m = _mm_add_ps(accm[j], _mm_movehl_ps(accm[j], accm[j]));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    out[j] = SumLanes8(acc[j]) + _mm_cvtss_f32(m);
  }
}

// Q6_K row times NT Q8_K rows. Per half of 128 values, 64 bytes of low bits L and 32 bytes of
// high bits H; with H2 = [H, H >> 2]: values 0-63 = (L & 15) | ((H2 << 4) & 0x30), values 64-127 =
// (L >> 4 & 15) | (H2 & 0x30). Scales apply per 16 values (8 int16 pair-sum lanes each). The
// offset of 32 is taken back as 32 * scale_g * (16-value sum g), folded lane l starting from -32 *
// that of groups 2l and 2l+1: each folded int32 lane holds what llama.cpp's lane holds.
template <int NT>
void Q6KTile(const uint8_t* wr, int64_t blocks, const Q8KRow* xr, float* out) {
  __m256 acc[NT];
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
  const __m512i idx[4] = {SpreadIndex(0, 8), SpreadIndex(4, 8), SpreadIndex(8, 8), SpreadIndex(12, 8)};
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = wr + b * 210;
    PrefetchBlock(blk, 210);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192)));
    const __m512i sc512 = _mm512_castsi256_si512(sc16);
    __m512i sumi[NT];
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[j].bsum + b * 16));
      sumi[j] = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5)));
    }
    #pragma GCC unroll 4
    for (int h = 0; h < 2; ++h) {
      const __m512i L = _mm512_loadu_si512(blk + 64 * h);
      const __m256i H = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
      const __m512i H2 = _mm512_inserti64x4(_mm512_castsi256_si512(H), _mm256_srli_epi16(H, 2), 1);
      const __m512i q0 = _mm512_or_si512(_mm512_and_si512(L, m4), _mm512_and_si512(_mm512_slli_epi16(H2, 4), m2));
      const __m512i q1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4), _mm512_and_si512(H2, m2));
      const __m512i s0 = _mm512_permutexvar_epi16(idx[2 * h], sc512);
      const __m512i s1 = _mm512_permutexvar_epi16(idx[2 * h + 1], sc512);
      #pragma GCC unroll 8
      for (int j = 0; j < NT; ++j) {
        const int8_t* xq = xr[j].q + b * 256 + 128 * h;
        sumi[j] = _mm512_dpwssd_epi32(sumi[j], _mm512_maddubs_epi16(q0, _mm512_loadu_si512(xq)), s0);
        sumi[j] = _mm512_dpwssd_epi32(sumi[j], _mm512_maddubs_epi16(q1, _mm512_loadu_si512(xq + 64)), s1);
      }
    }
    const float d = HalfAt(blk + 208);
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) {
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(xr[j].d[b] * d), _mm256_cvtepi32_ps(Fold16(sumi[j])), acc[j]);
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) out[j] = SumLanes8(acc[j]);
}

template <bool kQ6>
float DotK(const uint8_t* w, const Q8KRow& x, int64_t n) {
  float out;
  if constexpr (kQ6) {
    Q6KTile<1>(w, n / 256, &x, &out);
  } else {
    Q4KTile<1>(w, n / 256, &x, &out);
  }
  return out;
}

template <bool kQ6, int NT>
void KTile(const uint8_t* wr, int64_t blocks, const Q8KRow* xr, float* out) {
  if constexpr (kQ6) {
    Q6KTile<NT>(wr, blocks, xr, out);
  } else {
    Q4KTile<NT>(wr, blocks, xr, out);
  }
}

// Up to 8 activation rows per pass over a weight row. Weight rows are taken 8 at a time, and each
// group is multiplied with every tile of activation rows while it is in L1: the weights are read
// from memory once per product, not once per tile.
template <bool kQ6>
void GemmK(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8KRows& x, int64_t T, float* Y, int64_t y_stride) {
  const int64_t blocks = x.n() / 256;
  Q8KRow xr[8];
  float out[8];
  for (int64_t r0 = 0; r0 < rows; r0 += 8) {
    const int64_t r1 = std::min<int64_t>(rows, r0 + 8);
    for (int64_t t0 = 0; t0 < T; t0 += 8) {
      const int nt = static_cast<int>(std::min<int64_t>(8, T - t0));
      for (int j = 0; j < nt; ++j) xr[j] = x.Row(t0 + j);
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + r * row_bytes;
        switch (nt) {
          case 8: KTile<kQ6, 8>(wr, blocks, xr, out); break;
          case 7: KTile<kQ6, 7>(wr, blocks, xr, out); break;
          case 6: KTile<kQ6, 6>(wr, blocks, xr, out); break;
          case 5: KTile<kQ6, 5>(wr, blocks, xr, out); break;
          case 4: KTile<kQ6, 4>(wr, blocks, xr, out); break;
          case 3: KTile<kQ6, 3>(wr, blocks, xr, out); break;
          case 2: KTile<kQ6, 2>(wr, blocks, xr, out); break;
          default: KTile<kQ6, 1>(wr, blocks, xr, out); break;
        }
        for (int j = 0; j < nt; ++j) Y[(t0 + j) * y_stride + r] = out[j];
      }
    }
  }
}

LlmKernelTable MakeTable() {
  LlmKernelTable t = *ScalarLlmKernels();
  t.name = "avx512_vnni";
  t.dot_f32 = DotF32;
  t.dot_f16 = DotF16;
  t.dot_q8_0 = DotQ8_0;
  t.dot_q4_0 = DotQ4_0;
  t.axpy_f16 = AxpyF16;
  t.to_f16 = ToF16;
  t.axpy_q8_0 = AxpyQ8_0;
  t.gemm_q8_0 = Gemm<false>;
  t.gemm_q4_0 = Gemm<true>;
  t.dot_q4_k = DotK<false>;
  t.dot_q6_k = DotK<true>;
  t.gemm_q4_k = GemmK<false>;
  t.gemm_q6_k = GemmK<true>;
  return t;
}

}  // namespace

const LlmKernelTable* Avx512VnniLlmKernels() {
  static const LlmKernelTable table = MakeTable();
  return &table;
}

}  // namespace inferloop::llm
