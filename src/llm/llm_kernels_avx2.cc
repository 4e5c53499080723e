// AVX2 versions of the LLM dot kernels (no VNNI): signed bytes are multiplied with
// vpmaddubsw after moving the weight's sign onto the activation (|w| * (x * sign(w))), whose
// pairwise sums stay below 2 * 127 * 127 and cannot saturate. Built with -mavx2 -mfma -mf16c.
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

// Q4_K's 12 packed bytes (ggml_types.cc) as 8 sub-block scales (bytes 0-7 of the result) and
// 8 mins (bytes 8-15), unpacked four at a time as 32-bit words.
inline __m128i Q4KScalesMins(const uint8_t* p) {
  uint32_t w[3];
  std::memcpy(w, p, 12);
  const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu, mn_lo = w[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | ((w[0] >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | ((w[1] >> 2) & 0x30303030u);
  return _mm_set_epi32(static_cast<int>(mn_hi), static_cast<int>(mn_lo), static_cast<int>(sc_hi), static_cast<int>(sc_lo));
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

// Q4_K row times NT Q8_K rows: nibbles (0..15) are unsigned, so vpmaddubsw takes them directly
// (pair sums <= 2*15*127); vpmaddwd then applies the sub-block's scale. The mins term uses the
// activation's 16-value sums. Each weight block is unpacked once for the NT rows; per row the
// arithmetic is the same whatever NT is. Float terms are added in llama.cpp's order
// (llm_kernels_scalar.cc says which): eight lanes for the scaled sums, four for the mins.
template <int NT>
void Q4KTile(const uint8_t* w, int64_t blocks, const Q8KRow* xr, float* out) {
  __m256 acc[NT];
  __m128 accm[NT];
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) {
    acc[j] = _mm256_setzero_ps();
    accm[j] = _mm_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = w + b * 144;
    PrefetchBlock(blk, 144);
    alignas(16) uint8_t sm[16];
    const __m128i sm128 = Q4KScalesMins(blk + 4);
    _mm_store_si128(reinterpret_cast<__m128i*>(sm), sm128);
    __m256i sumi[NT];
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) sumi[j] = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
      const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      const __m256i slo = _mm256_set1_epi16(sm[2 * c]), shi = _mm256_set1_epi16(sm[2 * c + 1]);
      #pragma GCC unroll 8
      for (int j = 0; j < NT; ++j) {
        const int8_t* xq = xr[j].q + b * 256 + 64 * c;
        const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
        const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32)));
        sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(plo, slo));
        sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(phi, shi));
      }
    }
    // Mins as 8 int16 against the 32-value sums (pairs of 16-value sums): 4 int32 lanes.
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm128, 8));
    const float d = HalfAt(blk), dmin = HalfAt(blk + 2);
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[j].bsum + b * 16));
      const __m128i s32 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
      const __m128i prod = _mm_madd_epi16(mn16, s32);
      const float dx = xr[j].d[b];
      accm[j] = _mm_fmadd_ps(_mm_set1_ps(-dx * dmin), _mm_cvtepi32_ps(prod), accm[j]);
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * d), _mm256_cvtepi32_ps(sumi[j]), acc[j]);
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) {
    __m128 m = _mm_add_ps(accm[j], _mm_movehl_ps(accm[j], accm[j]));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    out[j] = Reduce(acc[j]) + _mm_cvtss_f32(m);
  }
}

// Q6_K row times NT Q8_K rows: the 6-bit values (0..63) unsigned through vpmaddubsw (pair sums
// <= 2*63*127), scaled per 16 values with vpmaddwd; the offset of 32 is taken back as
// 32 * scale_g * (16-value sum g), lane l starting from -32 * (that of groups 2l and 2l+1): each
// int32 lane holds what llama.cpp's lane holds.
template <int NT>
void Q6KTile(const uint8_t* w, int64_t blocks, const Q8KRow* xr, float* out) {
  __m256 acc[NT];
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = w + b * 210;
    PrefetchBlock(blk, 210);
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    __m256i sumi[NT];
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[j].bsum + b * 16));
      sumi[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5));
    }
    #pragma GCC unroll 4
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * h + 32));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h));
      const __m256i q[4] = {
          _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m2)),
          _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hb, m2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(hb, 2), m2)),
      };
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int g = 8 * h + 2 * k;
        const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
        #pragma GCC unroll 8
        for (int j = 0; j < NT; ++j) {
          const int8_t* xq = xr[j].q + b * 256 + 128 * h + 32 * k;
          const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
          sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(p, s));
        }
      }
    }
    const float d = HalfAt(blk + 208);
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(xr[j].d[b] * d), _mm256_cvtepi32_ps(sumi[j]), acc[j]);
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) out[j] = Reduce(acc[j]);
}

template <bool kQ6, int NT>
void KTile(const uint8_t* wr, int64_t blocks, const Q8KRow* xr, float* out) {
  if constexpr (kQ6) {
    Q6KTile<NT>(wr, blocks, xr, out);
  } else {
    Q4KTile<NT>(wr, blocks, xr, out);
  }
}

template <bool kQ6>
float DotK(const uint8_t* w, const Q8KRow& x, int64_t n) {
  float out;
  KTile<kQ6, 1>(w, n / 256, &x, &out);
  return out;
}

// Up to 4 activation rows per pass over a weight row. Weight rows are taken 8 at a time, and each
// group is multiplied with every tile of activation rows while it is in L1: the weights are read
// from memory once per product, not once per tile.
template <bool kQ6>
void GemmK(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8KRows& x, int64_t T, float* Y, int64_t y_stride) {
  const int64_t blocks = x.n() / 256;
  Q8KRow xr[4];
  float out[4];
  for (int64_t r0 = 0; r0 < rows; r0 += 8) {
    const int64_t r1 = std::min<int64_t>(rows, r0 + 8);
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      const int nt = static_cast<int>(std::min<int64_t>(4, T - t0));
      for (int j = 0; j < nt; ++j) xr[j] = x.Row(t0 + j);
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + r * row_bytes;
        switch (nt) {
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
  t.dot_q4_k = DotK<false>;
  t.dot_q6_k = DotK<true>;
  t.gemm_q4_k = GemmK<false>;
  t.gemm_q6_k = GemmK<true>;
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
