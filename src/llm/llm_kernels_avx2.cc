// AVX2 versions of the LLM dot kernels (no VNNI): signed bytes are multiplied with
// vpmaddubsw after moving the weight's sign onto the activation (|w| * (x * sign(w))), whose
// pairwise sums stay below 2 * 127 * 127 and cannot saturate. Built with -mavx2 -mfma -mf16c.
#include "base/simd/vec_avx2.h"
#include "llm/llm_kernels_avx2_kops.h"
#include "llm/llm_kernels_impl.h"

namespace inferloop::llm {
namespace {

float DotF32(const float* w, const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
  }
  float s = SumLanes8(_mm256_add_ps(a0, a1));
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
  float s = SumLanes8(a0);
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
  return SumLanes8(acc);
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
  return SumLanes8(acc);
}

// Q4_K's integer sums: nibbles (0..15) are unsigned, so vpmaddubsw takes them directly (pair sums
// <= 2*15*127); vpmaddwd then applies the sub-block's scale.
template <int NT>
struct Q4KSums {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  void operator()(const uint8_t* blk, __m128i sm128, const Q8KRow* xr, int64_t b, __m256i* sumi) const {
    alignas(16) uint8_t sm[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(sm), sm128);
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
  }
};

// Q6_K's integer sums: the 6-bit values (0..63) unsigned through vpmaddubsw (pair sums
// <= 2*63*127), scaled per 16 values with vpmaddwd.
template <int NT>
struct Q6KSums {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
  void operator()(const uint8_t* blk, __m256i /*sc16*/, const Q8KRow* xr, int64_t b, __m256i* sumi) const {
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
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
  }
};

// --- Q8_0 / Q4_0 weights repacked in 16-row groups (llm_kernels.h gemm_g16_*) ---
// Each 32-byte half of a packed 64-byte vector holds 4 values of 8 rows: vpmaddubsw with 4 bytes
// of a token broadcast gives each row two int16 pair sums, vpmaddwd with ones their int32 sum.
// The tile runs one half-group (8 rows) x M tokens at a time (16 ymm registers: M int and M float
// accumulators, the weight vectors, a broadcast; M = 5: medians of 3 alternating runs of
// bench/llm_matmul.cc at 256 tokens gave Q4_0 47 GMAC/s against 41 with M = 4 and 37 with M = 6,
// Q8_0 29 against 26 and 29, on a noisy machine). Q4_0: the unsigned nibbles (0..15) go to
// vpmaddubsw directly, and the 8 products of a block add up in int16 (8 * 2 * 15 * 127 = 30480 <
// 32767) before one vpmaddwd; the offset of 8 starts the int32 sum. Q8_0: signed weights, so
// |w| * (x * sign(w)) as in DotS8 (pairs <= 2 * 128 * 127), one vpmaddwd per product. The int32
// sums are exact and the float steps are the AVX-512 / AMX kernels', so the results are identical.
// Measured (bench/llm_matmul.cc, 5632 x 2048, one thread, INFERLOOP_ISA=avx2 on a shared, noisy
// Xeon, best of 5) against the per-row dots on the file's layout: 256 tokens 79 ms against 470
// (Q4_0) and 168 against 352 (Q8_0); one token 0.44 against 1.2 ms (Q4_0), 0.63 against 1.05 (Q8_0).
// Decode (M <= 2) runs both halves in one pass over the weights: the half-at-a-time passes read
// each line twice and were memory-bound far below the bandwidth (65536 x 2048, one token, one AMD
// EPYC core, 4 alternating runs: Q8_0 7.9-10.7 ms -> 4.8-5.1, Q4_0 4.5-6.1 -> 2.5-3.2). That pass
// asks for the block kDecodePrefetchBytes ahead of the one it reads (software prefetch): on an AMD
// EPYC Zen 3 (AVX2 only, 2 CPUs), `inferloop generate` of the TinyLlama-shaped random models, 2
// threads, 64 tokens, 3 alternating runs each: Q4_0 41.5-44.2 tok/s without, 48.1-56.0 with 1536
// bytes and 46.0-51.0 with 2048; Q8_0 23.7-25.1 without, 26.0-28.5 (1536) and 27.4-27.6 (2048);
// 1024 to 4096 all gained. (The K-quant decode passes gained nothing from a whole block ahead at
// a time, Q4_K_M 34.4-37.8 tok/s without, 32.0-35.7 with: they ask for an eighth of a block per
// step instead, llm_kernels_impl.h PrefetchEighthAhead.)
template <bool kQ4>
struct Avx2G16 {
  static constexpr int kBlockBytes = kQ4 ? 32 + 256 : 32 + 512;
  static constexpr int kDecodePrefetchBytes = 2048;
  static constexpr int kOffset = kQ4 ? 8 : 0;
  static constexpr int kMaxM = 5;
  // Rows [8 h0, 8 h0 + 8 kH) of the group (kH = 1: one half; 2: both halves in one pass over the
  // weights) x M tokens.
  template <int M, int kH>
  static void Halves(const uint8_t* gp, int64_t nb, const G16Token* xt, float* y, int64_t y_stride, int h0, int valid) {
    __m256 acc[kH][M];
    #pragma GCC unroll 8
    for (int hh = 0; hh < kH; ++hh)
      for (int m = 0; m < M; ++m) acc[hh][m] = _mm256_setzero_ps();
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = gp + b * kBlockBytes;
      if constexpr (kH == 2) PrefetchBytes(blk + kDecodePrefetchBytes, kBlockBytes);
      __m256i c[kH][M];
      #pragma GCC unroll 2
      for (int hh = 0; hh < kH; ++hh) {
        const uint8_t* vals = blk + 32 + 32 * (h0 + hh);
        if constexpr (kQ4) {
          __m256i s[M];
          #pragma GCC unroll 8
          for (int m = 0; m < M; ++m) s[m] = _mm256_setzero_si256();
          #pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vals + 64 * k));
            const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            #pragma GCC unroll 8
            for (int m = 0; m < M; ++m) {
              const int8_t* xb = xt[m].q + b * 32 + 4 * k;
              s[m] = _mm256_add_epi16(s[m], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(Load4(xb))));
              Settle(s[m]);
              s[m] = _mm256_add_epi16(s[m], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(Load4(xb + 16))));
              Settle(s[m]);
            }
          }
          #pragma GCC unroll 8
          for (int m = 0; m < M; ++m)
            c[hh][m] = _mm256_add_epi32(_mm256_madd_epi16(s[m], ones), _mm256_set1_epi32(-kOffset * xt[m].qsum[b]));
        } else {
          #pragma GCC unroll 8
          for (int m = 0; m < M; ++m) c[hh][m] = _mm256_setzero_si256();
          #pragma GCC unroll 8
          for (int k = 0; k < 8; ++k) {
            const __m256i wk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(vals + 64 * k));
            const __m256i aw = _mm256_sign_epi8(wk, wk);
            #pragma GCC unroll 8
            for (int m = 0; m < M; ++m) {
              const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(Load4(xt[m].q + b * 32 + 4 * k)), wk);
              c[hh][m] = _mm256_add_epi32(c[hh][m], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, xs), ones));
            }
          }
        }
      }
      #pragma GCC unroll 2
      for (int hh = 0; hh < kH; ++hh) {
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * (h0 + hh))));
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
          acc[hh][m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c[hh][m]), _mm256_mul_ps(dw, _mm256_set1_ps(xt[m].d[b])), acc[hh][m]);
        }
      }
    }
    for (int hh = 0; hh < kH; ++hh) {
      const int v = valid - 8 * hh;
      if (v <= 0) break;
      float* yh = y + 8 * hh;
      if (v >= 8) {
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) _mm256_storeu_ps(yh + m * y_stride, acc[hh][m]);
      } else {
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) _mm256_maskstore_ps(yh + m * y_stride, mask, acc[hh][m]);
      }
    }
  }
  template <int M>
  static void Tile(const uint8_t* gp, int64_t nb, const G16Token* xt, float* y, int64_t y_stride, int valid) {
    if constexpr (M <= 2) {
      if (valid > 8) {
        Halves<M, 2>(gp, nb, xt, y, y_stride, 0, valid);
        return;
      }
    }
    Halves<M, 1>(gp, nb, xt, y, y_stride, 0, valid);
    if (valid > 8) Halves<M, 1>(gp, nb, xt, y + 8, y_stride, 1, valid - 8);
  }
};

LlmKernelTable MakeTable() {
  LlmKernelTable t = TableWithSharedKernels<simd::avx2::Vec, 4>("avx2");
  t.dot_f32 = DotF32;
  t.dot_f16 = DotF16;
  t.dot_f16_rows = DotF16Rows<simd::avx2::Vec, DotF16>;
  t.dot_q8_0 = DotQ8_0;
  t.dot_q8_0_rows = DotQ8_0Rows<DotQ8_0>;
  t.dot_q4_0 = DotQ4_0;
  t.gemm_g16_q8_0 = GemmG16<Avx2G16<false>>;
  t.gemm_g16_q4_0 = GemmG16<Avx2G16<true>>;
  t.gemm_g16_q4_k = Avx2GemmG16Q4K;  // llm_kernels_avx2_q4k.cc
  t.gemm_g16_q6_k = GemmG16K<G16Q6KSubBlocks<KOps>, KOps, 4>;
  return t;
}

}  // namespace

const LlmKernelTable* Avx2LlmKernels() {
  static const LlmKernelTable table = MakeTable();
  return &table;
}

}  // namespace inferloop::llm
