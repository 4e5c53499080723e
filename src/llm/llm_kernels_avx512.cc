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
  return t;
}

}  // namespace

const LlmKernelTable* Avx512VnniLlmKernels() {
  static const LlmKernelTable table = MakeTable();
  return &table;
}

}  // namespace inferloop::llm
