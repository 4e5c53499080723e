// AVX-512 VNNI versions of the LLM dot kernels. Built with -mavx512f/bw/vl/dq/vnni (CMakeLists.txt);
// only called when CPUID reports those extensions.
//
// vpdpbusd multiplies unsigned by signed bytes, so weights are made unsigned by an offset: Q4_0
// nibbles are stored as q + 8 already, Q8_0 bytes become q + 128 by flipping the top bit. The
// offset's contribution, offset * sum(q_x) per block, is taken back with the activation row's
// precomputed block sums.
#include "base/simd/vec_avx512.h"
#include "llm/llm_kernels_impl.h"

namespace inferloop::llm {
namespace {

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

// The 32 bytes of a Q8_0 block made unsigned (q + 128: the top bit flipped).
inline __m256i FlippedBytes(const uint8_t* qs) {
  return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)), _mm256_set1_epi8(static_cast<char>(0x80)));
}

// The 32 nibbles of a Q4_0 block in element order (low nibbles are elements 0-15, high 16-31).
inline __m256i Nibbles(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

// A row of kBytes-byte blocks (half-float scale, then the values) times x: Unsigned(values) is a
// block's 32 weights as unsigned bytes q + kOffset. Two blocks per vpdpbusd, one for an odd last.
template <int kBytes, int kOffset, __m256i (*Unsigned)(const uint8_t*)>
float DotBlocks(const uint8_t* w, const Q8Row& x, int64_t n) {
  const int64_t nb = n / 32;
  __m512 acc = _mm512_setzero_ps();
  float corr = 0;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const uint8_t* b0 = w + b * kBytes;
    const uint8_t* b1 = b0 + kBytes;
    const __m512i wq = _mm512_inserti64x4(_mm512_zextsi256_si512(Unsigned(b0 + 2)), Unsigned(b1 + 2), 1);
    const __m512i xq = _mm512_loadu_si512(x.q + b * 32);
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, xq);
    const float d0 = HalfAt(b0), d1 = HalfAt(b1);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), Scales2(d0 * x.d[b], d1 * x.d[b + 1]), acc);
    corr += d0 * x.sum[b] + d1 * x.sum[b + 1];
  }
  float tail = 0;
  for (; b < nb; ++b) {
    const uint8_t* b0 = w + b * kBytes;
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * 32));
    const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), Unsigned(b0 + 2), xq);
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(dot), _mm256_extracti128_si256(dot, 1));
    const __m128i s2 = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    const __m128i s4 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1));
    const float d0 = HalfAt(b0);
    tail += d0 * x.d[b] * static_cast<float>(_mm_cvtsi128_si32(s4));
    corr += d0 * x.sum[b];
  }
  return _mm512_reduce_add_ps(acc) + tail - static_cast<float>(kOffset) * corr;
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
      WithTileRows<8>(nt, [&](auto tile_rows) { GemmTile<kQ4, decltype(tile_rows)::value>(wr, chunks, xr, out); });
      for (int j = 0; j < nt; ++j) Y[(t0 + j) * y_stride + r] = out[j];
    }
  }
}

// --- Q8_0 / Q4_0 weights repacked in 16-row groups (llm_kernels.h gemm_g16_*) ---
// One 64-byte vector of a packed block holds 4 values of each of the 16 rows, so one vpdpbusd
// with 4 bytes of a token broadcast gives 16 rows' partial dots: per block 8 vpdpbusd per token,
// the weight vectors loaded (and Q4_0's nibbles split) once for M tokens. Weights are unsigned
// (Q4_0 nibbles q + 8, Q8_0 bytes with the top bit flipped: q + 128); the offset's contribution
// starts the int32 accumulator (-offset * sum(q_x)). The float steps are the AMX kernels'
// (amx_matmul.cc), so a token gets bit-identical results on this path, on AMX, and alone or
// batched.
// M = 12 tokens per tile: per block and token 8 vpdpbusd against one cvt, mul and fma, with 12
// int32 and 12 float accumulators in registers (24 of 32); 8 and 16 measured the same within
// this machine's noise (medians of 3 alternating runs at 256 tokens: 77, 70 and 78 GMAC/s for
// Q8_0 with M = 8, 12, 16; 95, 97 and 78 for Q4_0).
// Why this layout (bench/llm_matmul.cc, 5632 x 2048, one thread, a Xeon with INFERLOOP_ISA=avx512
// on a shared, noisy machine, best of 5): 256 tokens take 28 ms (Q4_0, 106 GMAC/s) and 31 ms
// (Q8_0) against 190 and 178 ms with the file-layout kernels (Gemm above); one token (decode)
// 0.26 ms against 0.72 (Q4_0) and 0.96 against 1.9 (Q8_0): the packed copy serves both, and the
// file's pages are released after packing (llama_model.cc), so the weights are held once.
template <bool kQ4>
struct VnniG16 {
  static constexpr int kBlockBytes = kQ4 ? 32 + 256 : 32 + 512;
  static constexpr int kOffset = kQ4 ? 8 : 128;
  static constexpr int kMaxM = 12;
  template <int M>
  static void Tile(const uint8_t* gp, int64_t nb, const G16Token* xt, float* y, int64_t y_stride, int valid) {
    __m512 acc[M];
    #pragma GCC unroll 16
    for (int m = 0; m < M; ++m) acc[m] = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)), low = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = gp + b * kBlockBytes;
      if constexpr (M <= 8) {  // few tokens (decode) stream the weights from memory: ask ahead
        PrefetchBytes(blk + 8 * kBlockBytes, kBlockBytes);
      }
      const uint8_t* vals = blk + 32;
      __m512i c[M];
      #pragma GCC unroll 16
      for (int m = 0; m < M; ++m) c[m] = _mm512_set1_epi32(-kOffset * xt[m].qsum[b]);
      if constexpr (kQ4) {
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m512i v = _mm512_loadu_si512(vals + 64 * k);
          const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
          #pragma GCC unroll 16
          for (int m = 0; m < M; ++m) {
            const int8_t* xb = xt[m].q + b * 32 + 4 * k;
            c[m] = _mm512_dpbusd_epi32(c[m], lo, _mm512_set1_epi32(Load4(xb)));
            c[m] = _mm512_dpbusd_epi32(c[m], hi, _mm512_set1_epi32(Load4(xb + 16)));
          }
        }
      } else {
        #pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          const __m512i wk = _mm512_xor_si512(_mm512_loadu_si512(vals + 64 * k), flip);
          #pragma GCC unroll 16
          for (int m = 0; m < M; ++m) c[m] = _mm512_dpbusd_epi32(c[m], wk, _mm512_set1_epi32(Load4(xt[m].q + b * 32 + 4 * k)));
        }
      }
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
      #pragma GCC unroll 16
      for (int m = 0; m < M; ++m) {
        acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c[m]), _mm512_mul_ps(dw, _mm512_set1_ps(xt[m].d[b])), acc[m]);
      }
    }
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
    #pragma GCC unroll 16
    for (int m = 0; m < M; ++m) _mm512_mask_storeu_ps(y + m * y_stride, mask, acc[m]);
  }
};

// --- K-quants times Q8_K activations ---
// Both unpack a weight super-block into unsigned bytes (Q4_K: 0..15, Q6_K: 0..63) once, then per
// activation row multiply with vpmaddubsw (pair sums fit int16: 2*63*127 < 32767) and apply the
// sub-block scales with vpdpwssd (VNNI) into int32 lanes. The 16 lanes are folded to the 8 of
// llama.cpp's AVX2 kernels (lane l + lane l + 8: the same integers), and the float terms are added
// in that kernel's order (llm_kernels_scalar.cc says which), so the results are llama.cpp's bit
// for bit.
//
// 16 int32 lanes folded to 8: lane l + lane l + 8.
inline __m256i Fold16(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

// Index vectors for vpermw: 32 int16 lanes, lane i taking element base + i / span.
inline __m512i SpreadIndex(int base, int span) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = static_cast<int16_t>(base + i / span);
  return _mm512_load_si512(idx);
}

// Q4_K's integer sums. Per 64 values (32 bytes of nibbles: low = sub-block 2c, high = 2c+1) one
// vector of 64 unsigned bytes in element order; its 32 int16 pair sums take scale 2c in lanes 0-15
// and 2c+1 in lanes 16-31.
template <int NT>
struct Q4KSums {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m512i idx[4] = {SpreadIndex(0, 16), SpreadIndex(2, 16), SpreadIndex(4, 16), SpreadIndex(6, 16)};
  void operator()(const uint8_t* blk, __m128i sm, const Q8KRow* xr, int64_t b, __m256i* out) const {
    const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));  // lanes 0-7 scales, 8-15 mins
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
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) out[j] = Fold16(sumi[j]);
  }
};

// Q6_K's integer sums. Per half of 128 values, 64 bytes of low bits L and 32 bytes of high bits
// H; with H2 = [H, H >> 2]: values 0-63 = (L & 15) | ((H2 << 4) & 0x30), values 64-127 =
// (L >> 4 & 15) | (H2 & 0x30). Scales apply per 16 values (8 int16 pair-sum lanes each).
template <int NT>
struct Q6KSums {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
  const __m512i idx[4] = {SpreadIndex(0, 8), SpreadIndex(4, 8), SpreadIndex(8, 8), SpreadIndex(12, 8)};
  void operator()(const uint8_t* blk, __m256i sc16, const Q8KRow* xr, int64_t b, __m256i* out) const {
    const __m512i sc512 = _mm512_castsi256_si512(sc16);
    __m512i sumi[NT];
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) sumi[j] = _mm512_zextsi256_si512(out[j]);
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
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) out[j] = Fold16(sumi[j]);
  }
};

// The vector operations of the K-quant group tiles (llm_kernels_impl.h G16Q4KSubBlocks /
// G16Q6KSubBlocks): one part of 16 rows per zmm, each sub-block's products summed by vpdpbusd in
// int32 and scaled by vpmulld.
struct KOps {
  static constexpr int kParts = 1;
  static constexpr bool kFloatsInMemory = false;
  static constexpr bool kDecodePrefetch = true;  // llm_kernels_impl.h PrefetchEighthAhead
  static constexpr int kQ4SubBlocksPerPass = 2;
  static constexpr int kQ6Columns = 4;
  using I = __m512i;
  using F = __m512;
  static I Load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I Bcast4(const int8_t* p) { return _mm512_set1_epi32(Load4(p)); }
  static I AddProducts(I acc, I u8, I s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }
  static I Q4Scale(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  template <int kHigh>
  static I Q6Scale(const uint8_t* p) {
    const I q = SxWords(p);
    return kHigh ? _mm512_srai_epi32(q, 16) : _mm512_srai_epi32(_mm512_slli_epi32(q, 16), 16);
  }
  static I ScaleSum(I tot, I acc, I sc) { return _mm512_add_epi32(tot, _mm512_mullo_epi32(acc, sc)); }
  static I MaddW(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  static I ZeroI() { return _mm512_setzero_si512(); }
  static I And(I a, I b) { return _mm512_and_si512(a, b); }
  static I Or(I a, I b) { return _mm512_or_si512(a, b); }
  static I Set8(int v) { return _mm512_set1_epi8(static_cast<char>(v)); }
  static I Set32(int32_t v) { return _mm512_set1_epi32(v); }
  template <int N> static I Srli16(I v) { return _mm512_srli_epi16(v, N); }
  template <int N> static I Slli16(I v) { return _mm512_slli_epi16(v, N); }
  static I Sub16(I a, I b) { return _mm512_sub_epi16(a, b); }
  static I ZxWords(const uint8_t* p) { return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static I SxWords(const uint8_t* p) { return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F Half(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F Cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F FnMadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F SetF(float v) { return _mm512_set1_ps(v); }
  static F ZeroF() { return _mm512_setzero_ps(); }
  static void Store(float* y, F v, int valid) { _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << valid) - 1), v); }
};

LlmKernelTable MakeTable() {
  LlmKernelTable t = TableWithSharedKernels<simd::avx512::Vec, 8>("avx512_vnni");
  t.dot_f32 = DotF32;
  t.dot_f16 = DotF16;
  t.dot_f16_rows = DotF16Rows<simd::avx512::Vec, DotF16>;
  t.dot_q8_0 = DotBlocks<34, 128, FlippedBytes>;
  t.dot_q8_0_rows = DotQ8_0Rows<DotBlocks<34, 128, FlippedBytes>>;
  t.dot_q4_0 = DotBlocks<18, 8, Nibbles>;
  t.gemm_q8_0 = Gemm<false>;
  t.gemm_q4_0 = Gemm<true>;
  t.gemm_g16_q8_0 = GemmG16<VnniG16<false>>;
  t.gemm_g16_q4_0 = GemmG16<VnniG16<true>>;
  t.gemm_g16_q4_k = GemmG16K<G16Q4KSubBlocks<KOps>, KOps, 4>;
  t.gemm_g16_q6_k = GemmG16K<G16Q6KSubBlocks<KOps>, KOps, 4>;
  return t;
}

}  // namespace

const LlmKernelTable* Avx512VnniLlmKernels() {
  static const LlmKernelTable table = MakeTable();
  return &table;
}

}  // namespace inferloop::llm
