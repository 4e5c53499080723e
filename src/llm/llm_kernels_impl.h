// Internal to the LLM kernels: what the AVX2 and the AVX-512 VNNI tables (llm_kernels_avx2.cc,
// llm_kernels_avx512.cc) share - block decoding, the float sums in llama.cpp's order, the loops
// written once against a vector type V, and the drivers that tile activation rows. Each of those
// files includes this one and is compiled with its own -m flags (both at least AVX2, FMA, F16C),
// as compute/simd's per-ISA files include simd_impl.h. Everything is in an anonymous namespace:
// each file gets its own copy, inlined into its kernels and compiled for its instruction set (a
// shared inline function with external linkage could end up as the AVX-512 copy on a CPU
// without AVX-512).
//
// V is the float vector type of base/simd (simd::avx2::Vec, simd::avx512::Vec); the loops use, for
// its width V::kWidth of floats: R (the float vector), Set, Load, Store, Mul, Fma (a * b + c,
// fused), LoadHalf (kWidth half floats widened), StoreHalf (rounded to nearest even) and LoadI8
// (kWidth int8 values as floats).
//
// The including file defines Q4KSums<NT> and Q6KSums<NT>, the integer part of the K-quant tiles
// (declared below).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/float_types.h"
#include "base/simd/vec_exp.h"
#include "llm/llm_kernels.h"
#include "llm/prefetch.h"

namespace inferloop::llm {
namespace {

inline float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Sum of 8 float lanes as llama.cpp's AVX2 kernels sum them: (l0+l4 + l2+l6) + (l1+l5 + l3+l7).
inline float SumLanes8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
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
// (PrefetchBytes: llm/prefetch.h.)
constexpr int kPrefetchAhead = 2048;
__attribute__((always_inline)) inline void PrefetchBlock(const uint8_t* blk, int bytes) {
  PrefetchBytes(blk + kPrefetchAhead, bytes);
}

// One Q4_K super-block's float terms for activation row x (block b), in llama.cpp's order: the
// eight int32 lanes of scaled sums `sumi` into acc, and the mins - 8 int16 `mn16` against the
// 32-value sums (pairs of 16-value sums), 4 int32 lanes - into accm.
inline void Q4KAddBlock(const Q8KRow& x, int64_t b, __m256i sumi, __m128i mn16, float d, float dmin, __m256& acc,
                        __m128& accm) {
  const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsum + b * 16));
  const __m128i s32 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
  const __m128i prod = _mm_madd_epi16(mn16, s32);
  const float dx = x.d[b];
  accm = _mm_fmadd_ps(_mm_set1_ps(-dx * dmin), _mm_cvtepi32_ps(prod), accm);
  acc = _mm256_fmadd_ps(_mm256_set1_ps(dx * d), _mm256_cvtepi32_ps(sumi), acc);
}

// A Q4_K dot from its lanes: the eight scaled-sum lanes, then the four mins lanes (m0+m2)+(m1+m3).
inline float Q4KResult(__m256 acc, __m128 accm) {
  __m128 m = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return SumLanes8(acc) + _mm_cvtss_f32(m);
}

// Q6_K's offset of 32 for activation row x (block b), as the starting value of the eight int32
// lanes: lane l = -32 * (scale_2l * bsum_2l + scale_2l+1 * bsum_2l+1), `sc16` the 16 int16 scales.
inline __m256i Q6KOffsetLanes(const Q8KRow& x, int64_t b, __m256i sc16) {
  const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsum + b * 16));
  return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5));
}

// Calls f(std::integral_constant<int, NT>{}) with NT = nt, for 1 <= nt <= kMax: a tile kernel
// instantiated for each number of activation rows.
template <int kMax, class F>
inline void WithTileRows(int nt, F&& f) {
  if constexpr (kMax > 1) {
    if (nt != kMax) return WithTileRows<kMax - 1>(nt, f);
  }
  f(std::integral_constant<int, kMax>{});
}

// ---- K-quant tiles: one weight row of `blocks` super-blocks times NT Q8_K rows, out[j] = the dot
// with row j. Each weight block is unpacked once for the NT rows; per row the arithmetic is the
// same whatever NT is. The integer sums are the including file's (Q4KSums, Q6KSums); the float
// terms are added here, in llama.cpp's order (llm_kernels_scalar.cc says which): eight lanes for
// the scaled sums, four for Q4_K's mins.

// Q4_K: Q4KSums<NT>{}(blk, sm, xr, b, sumi) sets each row's eight int32 lanes of scaled sums
// (sm: the block's scales and mins as Q4KScalesMins gives them). The mins term, d_x * dmin *
// sum_g min_(g/2) * bsum_g, comes from the activation's 16-value sums.
template <int NT>
struct Q4KSums;

template <int NT>
void Q4KTile(const uint8_t* w, int64_t blocks, const Q8KRow* xr, float* out) {
  __m256 acc[NT];
  __m128 accm[NT];
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) {
    acc[j] = _mm256_setzero_ps();
    accm[j] = _mm_setzero_ps();
  }
  const Q4KSums<NT> sums{};
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = w + b * 144;
    PrefetchBlock(blk, 144);
    const __m128i sm = Q4KScalesMins(blk + 4);
    __m256i sumi[NT];
    sums(blk, sm, xr, b, sumi);
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
    const float d = HalfAt(blk), dmin = HalfAt(blk + 2);
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) Q4KAddBlock(xr[j], b, sumi[j], mn16, d, dmin, acc[j], accm[j]);
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) out[j] = Q4KResult(acc[j], accm[j]);
}

// Q6_K: Q6KSums<NT>{}(blk, sc16, xr, b, sumi) adds each row's scaled sums of the 6-bit values
// (0..63) into its eight int32 lanes (sc16: the 16 int16 scales), which start from the offset of
// 32 taken back (Q6KOffsetLanes): each lane then holds what llama.cpp's lane holds.
template <int NT>
struct Q6KSums;

template <int NT>
void Q6KTile(const uint8_t* w, int64_t blocks, const Q8KRow* xr, float* out) {
  __m256 acc[NT];
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
  const Q6KSums<NT> sums{};
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = w + b * 210;
    PrefetchBlock(blk, 210);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192)));
    __m256i sumi[NT];
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) sumi[j] = Q6KOffsetLanes(xr[j], b, sc16);
    sums(blk, sc16, xr, b, sumi);
    const float d = HalfAt(blk + 208);
    #pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(xr[j].d[b] * d), _mm256_cvtepi32_ps(sumi[j]), acc[j]);
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NT; ++j) out[j] = SumLanes8(acc[j]);
}

template <bool kQ6, int NT>
inline void KTile(const uint8_t* wr, int64_t blocks, const Q8KRow* xr, float* out) {
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

// Up to kMaxNT activation rows per pass over a weight row. Weight rows are taken 8 at a time, and
// each group is multiplied with every tile of activation rows while it is in L1: the weights are
// read from memory once per product, not once per tile.
template <bool kQ6, int kMaxNT>
void GemmK(const uint8_t* w, uint64_t row_bytes, int64_t rows, const Q8KRows& x, int64_t T, float* Y, int64_t y_stride) {
  const int64_t blocks = x.n() / 256;
  Q8KRow xr[kMaxNT];
  float out[kMaxNT];
  for (int64_t r0 = 0; r0 < rows; r0 += 8) {
    const int64_t r1 = std::min<int64_t>(rows, r0 + 8);
    for (int64_t t0 = 0; t0 < T; t0 += kMaxNT) {
      const int nt = static_cast<int>(std::min<int64_t>(kMaxNT, T - t0));
      for (int j = 0; j < nt; ++j) xr[j] = x.Row(t0 + j);
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* wr = w + r * row_bytes;
        WithTileRows<kMaxNT>(nt, [&](auto tile_rows) { KTile<kQ6, decltype(tile_rows)::value>(wr, blocks, xr, out); });
        for (int j = 0; j < nt; ++j) Y[(t0 + j) * y_stride + r] = out[j];
      }
    }
  }
}

// ---- products with weights repacked in 16-row groups (llm_kernels.h, gemm_g16_*) ----

// One activation row as the group tiles read it: int8 values, block scales, and per block the sum
// of the q (a tile with weights offset to unsigned starts its int32 accumulator at -offset * sum).
struct G16Token {
  const int8_t* q;
  const float* d;
  const int32_t* qsum;
};

// Calls f(t0, m) for tiles of T tokens, at most kMaxM each, as few as can be and of equal size
// (within one): a tile of few tokens unpacks the weights for few products. `bench_llm_matmul 5632
// 2048 Q4_0,Q8_0 13,16`, one AMD EPYC Zen 4 core, medians of 5 alternating runs (ms): AVX-512
// VNNI (kMaxM 12), 13 tokens as 7 + 6 instead of 12 + 1: Q4_0 1.41 -> 0.91, Q8_0 2.46 -> 1.48; 16
// as 8 + 8 instead of 12 + 4: Q4_0 1.80 -> 1.34, Q8_0 2.23 -> 1.82. AVX2 (kMaxM 5), 6 and 16
// tokens: within the noise either way (Q8_0 2.04 / 1.98 and 4.21 / 4.17). Used by the Q4_0 / Q8_0
// groups; the K-quant tiles (kMaxM 4) keep kMaxM-token tiles (an equal split measured no better
// there). A token's results do not depend on its tile (the tiles' contract), so no result changes.
template <int kMaxM, class F>
inline void ForEqualTiles(int64_t T, F&& f) {
  const int64_t tiles = (T + kMaxM - 1) / kMaxM;
  for (int64_t k = 0, t0 = 0; k < tiles; ++k) {
    const int64_t m = (T - t0 + (tiles - k) - 1) / (tiles - k);
    f(t0, static_cast<int>(m));
    t0 += m;
  }
}

// Drives K's register tile over groups x tokens. K provides kBlockBytes (one block of a group:
// 32 bytes of scales + the values), kOffset (added to the weights to make them unsigned, 0 if
// none), kMaxM, and Tile<M>(group, blocks, M tokens, y, y_stride, valid rows) for M <= kMaxM.
// Cache blocking: the groups are taken a slab of about kSlabBytes at a time and every token tile
// runs over the slab while it is in L2, so the weights come from memory once per product; each
// token tile's activations stay in L1 across the slab's groups. Allocates nothing (the tile's
// token views live on the stack), so a decode step with a kept MatMulScratch allocates nothing.
template <class K>
void GemmG16(const uint8_t* w, int64_t groups, int64_t rows, const Q8Rows& x, int64_t T, float* Y, int64_t y_stride) {
  constexpr int64_t kSlabBytes = 256 << 10;
  const int64_t nb = x.n() / 32, group_bytes = nb * K::kBlockBytes;
  const int64_t slab = std::max<int64_t>(1, kSlabBytes / group_bytes);
  for (int64_t g0 = 0; g0 < groups; g0 += slab) {
    const int64_t g1 = std::min(groups, g0 + slab);
    ForEqualTiles<K::kMaxM>(T, [&](int64_t t0, int m) {
      G16Token tok[K::kMaxM];
      for (int i = 0; i < m; ++i) {
        const Q8Row r = x.Row(t0 + i);
        tok[i] = {r.q, r.d, r.qsum};
      }
      for (int64_t g = g0; g < g1; ++g) {
        const int valid = static_cast<int>(std::min<int64_t>(16, rows - g * 16));
        WithTileRows<K::kMaxM>(m, [&](auto tm) {
          K::template Tile<decltype(tm)::value>(w + g * group_bytes, nb, tok, Y + t0 * y_stride + g * 16, y_stride,
                                                valid);
        });
      }
    });
  }
}

// 4 activation bytes as one int32 (to broadcast).
inline int32_t Load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---- products with Q4_K / Q6_K weights repacked in 16-row groups (llm_kernels.h gemm_g16_q4_k,
// gemm_g16_q6_k) ----
// The sums llm_kernels.h promises (gemm_g16_q4_k): each sub-block's products are
// added up first (Q4_K 32 values, Q6_K 16), then multiplied by the sub-block's scale into an
// int32 total per (row, super-block); one float step per super-block. llama.cpp's x86 kernels
// instead scale every 4-value column (eight int32 lanes per super-block, a float fma per lane):
// two multiply instructions per 64 products, where these tiles need one plus one per sub-block.
// bench_llm_matmul 5632 x 2048, one AMD EPYC core, alternating with the lane tiles they replace
// (2026-12-03): AVX-512 Q4_K 72-89 -> 99-174 GMAC/s over 1-256 tokens, Q6_K 58-95 -> 62-105 (at
// 16 tokens no faster); AVX2 in docs/LLM.md.
// Written once against O, the including file's vector operations over the rows of one part of a
// group (O::kParts parts of 16 / kParts rows: AVX-512 1, AVX2 2):
//   I, F: the int and float vector types; Load(p): the part's bytes of a 64-byte column vector;
//   Bcast4(p): 4 bytes to every 32-bit lane; AddProducts(acc, u8, s8): acc plus the products of
//   each row's 4 bytes (AVX-512 VNNI: vpdpbusd, int32; AVX2: vpmaddubsw, pairs added in int16);
//   Q4Scale(p): the part's Q4_K sub-block scales (bytes) as ScaleSum takes them; Q6Scale<h>(p): the
//   part's Q6_K scale of sub-blocks 2k + h from the pairs at p; ScaleSum(tot, acc, sc): tot + sc
//   times acc's per-row sum, in int32 (AVX-512: vpmulld; AVX2: vpmaddwd, which also adds the
//   int16 pairs); kQ6Columns: the 4-value columns acc may take before ScaleSum without overflow
//   (Q4_K's 8 fit on both: |pairs| <= 2 * 15 * 127, 8 columns <= 30480);
//   MaddW(acc, a, b): acc + vpmaddwd(a, b) in int32; ZeroI, And, Or, Set8, Set32, Srli16<n>,
//   Slli16<n>, Sub16; ZxWords(p) / SxWords(p): the part's 2-byte pairs as int16 pairs, zero / sign
//   extended; Half(p): the part's fp16 values as floats; Cvt, Fma(a, b, c), FnMadd(a, b, c) =
//   c - a * b, Mul, SetF, ZeroF; Store(y, v, valid): the first `valid` lanes;
//   kQ4SubBlocksPerPass: Q4_K sub-blocks summed in one pass over their column vectors (1 or 2);
//   kDecodePrefetch: see PrefetchEighthAhead;
//   kFloatsInMemory: see FloatsInMemory.

// One activation row as the K-quant group tiles read it: values, super-block scales, and 16-bit
// pairs of activation sums per super-block (Q4_K: the 32-value sums, 8 per super-block; Q6_K:
// the 16-value sums, 16 per super-block).
struct G16KToken {
  const int8_t* q;
  const float* d;
  const int16_t* pairs;
};

inline int32_t Load4(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// An empty asm that takes v in a vector register and gives it back: GCC cannot sink the adds that
// made v past this point or reassociate them with later ones, so an accumulator's sum stays in
// program order. Without it GCC reassociated the AVX2 Q4_0 tile's int16 block sums into trees
// whose partial sums spilled, and kept every K-quant sub-block's sums alive to do all the scale
// multiplies at the end of a super-block (the Q6_K tile at 4 tokens on AVX-512: 143 stack loads
// and stores of zmm values).
template <class V>
inline void Settle(V& v) {
  asm("" : "+v"(v));
}

// With 16 vector registers (AVX2) the float accumulators, used once per super-block, are better
// kept in memory than the sub-block sums: when O::kFloatsInMemory, this barrier (the address
// escapes, memory is clobbered) stores them after each super-block and reloads them for the next.
template <class O>
inline void FloatsInMemory(typename O::F* f) {
  if constexpr (O::kFloatsInMemory) asm volatile("" : : "r"(f) : "memory");
}

// Decode at one token streams each super-block from memory once, in eight steps. When
// O::kDecodePrefetch, step l also asks for the same eighth of the super-block
// kDecodePrefetchBlocks ahead (software prefetch, a few lines per step rather than a whole block
// at once), which the hardware prefetcher alone did not bring in time. bench_llm_matmul, one
// token, one core, alternating runs of builds without / one block ahead / two blocks ahead:
// - AMD EPYC Zen 3, AVX2, 65536 x 2048: Q4_K 5.6-5.8 ms -> 4.2 / 4.1-4.3, Q6_K 8.3-8.4 -> 5.8-6.0
//   / 5.9-6.2 (half a block ahead: 4.6 / 6.1-6.3); a second session, 5 alternating runs of one
//   against two blocks ahead: Q4_K 4.29-4.60 (median 4.53) / 4.37-4.97 (4.71), Q6_K 6.02-6.46
//   (6.11) / 5.33-6.37 (5.76);
// - Intel Xeon with AMX (16 cores, 300 MiB L3, 14.5 GB/s from one core), 262144 x 2048 (past the
//   L3), 2 rounds: AVX-512 Q4_K 36.2-37.0 ms -> 25.5-25.6 / 23.5-24.3, Q6_K 50.1-51.6 -> 34.2-41.7
//   / 36.6-41.2; AVX2 Q4_K 38.0-40.2 -> 24.5-25.6 / 25.1, Q6_K 61.6-71.7 -> 36.8-38.3 / 34.1-35.5.
//   65536 x 2048 (in that L3), 3 rounds: AVX-512 Q6_K 10.1-10.5 -> 3.6-6.4 / 3.7-4.3.
// Two blocks ahead on both paths. Asking for the whole next block at the start of a super-block
// gained nothing (below). Results do not change: a prefetch changes no arithmetic.
// Always inlined: GCC judges a function that only prefetches free of side effects and deletes
// calls to it that it did not inline. A version of this function with a second, L2 prefetch grew
// past the early inliner's limit and every K-quant decode prefetch vanished from the build
// (objdump: no prefetch in llm_kernels_avx2_q4k.cc.o).
// On an AMD EPYC Zen 4 that build streamed faster than this prefetch does: `build/bench_llm_matmul
// 262144 2048 Q4_K,Q6_K 1 1`, GB/s of weights, 3 alternating runs, with this prefetch / without
// any: AVX-512 Q4_K 24.6-26.3 / 27.6-29.6, Q6_K 25.5-27.4 / 29.9-32.2; AVX2 Q4_K 21.3-22.3 /
// 26.9-29.6, Q6_K 21.4-22.7 / 25.8-27.2 (a real second prefetch into the L2 made it slower
// still). The Zen 3 and Xeon figures above go the other way, so the prefetch stays until the
// choice can be made per CPU and measured on each.
constexpr int kDecodePrefetchBlocks = 2;
template <class O, int kBlockBytes>
__attribute__((always_inline)) inline void PrefetchEighthAhead(const uint8_t* blk, int l) {
  constexpr int kEighth = (kBlockBytes + 7) / 8;
  if constexpr (O::kDecodePrefetch) PrefetchBytes(blk + kDecodePrefetchBlocks * kBlockBytes + kEighth * l, kEighth);
}

// Parts<M, kP>: parts [part0, part0 + kP) of a group (R = 16 / O::kParts rows each) x M tokens,
// the parts taken in turn within each super-block, so that with kP = O::kParts one pass reads the
// weights once. Decode (M <= 2) streams the weights from memory and runs that way: on AVX2 a pass
// per part read every line twice (65536 x 2048 at 1 token, one AMD EPYC core, bench_llm_matmul,
// 4 alternating runs: Q4_K 5.0-7.3 ms -> 3.8-6.5, Q6_K 7.3-9.9 -> 4.1-7.2). At one token a part
// is read in the vectors' order (llm_kernels.h: a super-block is one sequential stream, which the
// hardware prefetcher follows); several tokens take a sub-block at a time from the caches.
// Prefetching the whole next super-block at the start of each measured no better (AVX-512 Q4_K
// 2.29-3.06 ms without against 2.72-3.80 with it, Q6_K 3.2-4.5 against 5.2-5.8); an eighth of a
// block per step does (PrefetchEighthAhead).
template <class O>
struct G16Q4KSubBlocks {
  static constexpr int kBlockBytes = 2368;
  static constexpr int kPairsPerBlock = 8;
  template <int M, int kP>
  static void Parts(const uint8_t* gp, int64_t nsb, const G16KToken* xt, float* y, int64_t y_stride, int part0,
                    int valid) {
    using I = typename O::I;
    using F = typename O::F;
    constexpr int R = 16 / O::kParts;
    F f[kP][M];
    for (int p = 0; p < kP; ++p) {
      for (int m = 0; m < M; ++m) f[p][m] = O::ZeroF();
    }
    const I m4 = O::Set8(0x0F);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* blk = gp + b * kBlockBytes;
      const int8_t* xb[M];
      #pragma GCC unroll 8
      for (int m = 0; m < M; ++m) xb[m] = xt[m].q + b * 256;
      #pragma GCC unroll 1
      for (int p = 0; p < kP; ++p) {
        const int part = part0 + p, vo = part * 4 * R;
        I tot[M];
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) tot[m] = O::ZeroI();
        if constexpr (M == 1) {
          // Streaming from memory: the column vectors in reading order (grouped by sub-block, the
          // reads jumped within a super-block and a 65536 x 2048 matrix took 1.1-1.5x as long on
          // an AMD EPYC core), eight sub-block sums.
          I a[8];
          for (int s = 0; s < 8; ++s) a[s] = O::ZeroI();
          #pragma GCC unroll 1
          for (int l = 0; l < 8; ++l) {
            if (p == 0) PrefetchEighthAhead<O, kBlockBytes>(blk, l);
            #pragma GCC unroll 4
            for (int c4 = 0; c4 < 4; ++c4) {
              const I v = O::Load(blk + 320 + 64 * (4 * l + c4) + vo);
              const int8_t* xp = xb[0] + 64 * c4 + 4 * l;
              a[2 * c4] = O::AddProducts(a[2 * c4], O::And(v, m4), O::Bcast4(xp));
              a[2 * c4 + 1] = O::AddProducts(a[2 * c4 + 1], O::And(O::template Srli16<4>(v), m4), O::Bcast4(xp + 32));
            }
          }
          #pragma GCC unroll 8
          for (int s = 0; s < 8; ++s) tot[0] = O::ScaleSum(tot[0], a[s], O::Q4Scale(blk + 64 + 16 * s + R * part));
        } else {
          // Column vectors (c4, l), l = 0..7, hold sub-blocks 2 c4 (low nibbles) and 2 c4 + 1
          // (high): both in one pass (O::kQ4SubBlocksPerPass = 2, AVX-512) or one pass each (1,
          // AVX2: 16 registers).
          auto pass = [&]<int kH0, int kNH>(int c4) __attribute__((always_inline)) {
            I a[kNH][M];
            #pragma GCC unroll 8
            for (int m = 0; m < M; ++m) {
              for (int h = 0; h < kNH; ++h) a[h][m] = O::ZeroI();
            }
            const uint8_t* vp = blk + 320 + 64 * c4 + vo;
            #pragma GCC unroll 8
            for (int l = 0; l < 8; ++l) {
              const I v = O::Load(vp + 256 * l);
              [&]<int... H>(std::integer_sequence<int, H...>) {
                ([&] {
                  const I q = O::And(kH0 + H == 0 ? v : O::template Srli16<4>(v), m4);
                  #pragma GCC unroll 8
                  for (int m = 0; m < M; ++m) {
                    a[H][m] = O::AddProducts(a[H][m], q, O::Bcast4(xb[m] + 64 * c4 + 32 * (kH0 + H) + 4 * l));
                  }
                }(), ...);
              }(std::make_integer_sequence<int, kNH>{});
            }
            #pragma GCC unroll 2
            for (int h = 0; h < kNH; ++h) {
              const I sc = O::Q4Scale(blk + 64 + 16 * (2 * c4 + kH0 + h) + R * part);
              #pragma GCC unroll 8
              for (int m = 0; m < M; ++m) tot[m] = O::ScaleSum(tot[m], a[h][m], sc);
            }
            #pragma GCC unroll 8
            for (int m = 0; m < M; ++m) Settle(tot[m]);
          };
          #pragma GCC unroll 1
          for (int c4 = 0; c4 < 4; ++c4) {
            if constexpr (O::kQ4SubBlocksPerPass == 2) {
              pass.template operator()<0, 2>(c4);
            } else {
              pass.template operator()<0, 1>(c4);
              pass.template operator()<1, 1>(c4);
            }
          }
        }
        // The mins against the activation's 32-value sums: sum_s min_s * xs_s.
        I mins[M];
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) mins[m] = O::ZeroI();
        #pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const I mp = O::ZxWords(blk + 192 + 32 * j + 2 * R * part);
          #pragma GCC unroll 8
          for (int m = 0; m < M; ++m) mins[m] = O::MaddW(mins[m], mp, O::Set32(Load4(xt[m].pairs + b * kPairsPerBlock + 2 * j)));
        }
        const F dv = O::Half(blk + 2 * R * part), dmv = O::Half(blk + 32 + 2 * R * part);
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
          const F t = O::FnMadd(dmv, O::Cvt(mins[m]), O::Mul(dv, O::Cvt(tot[m])));
          f[p][m] = O::Fma(t, O::SetF(xt[m].d[b]), f[p][m]);
        }
        FloatsInMemory<O>(&f[0][0]);
      }
    }
    for (int p = 0; p < kP; ++p) {
      const int v = std::min(R, valid - p * R);
      if (v <= 0) break;
      for (int m = 0; m < M; ++m) O::Store(y + m * y_stride + p * R, f[p][m], v);
    }
  }
};

// Q6_K the same way: each 16-value sub-block's products (values 0..63) added up, ScaleSum'd with
// its int8 scale after O::kQ6Columns columns (all 4 when the sum is int32), the offset of 32
// against the activation's 16-value sums, one float step per super-block: d_x * d * total.
template <class O>
struct G16Q6KSubBlocks {
  static constexpr int kBlockBytes = 3360;
  static constexpr int kPairsPerBlock = 16;
  // The 32 values of chunk J (U = J % 4) in column l's step (llm_kernels.h's Q6_K layout): the
  // low nibbles (J even) or high nibbles of low-bit vector J / 2, at `lvp`, with top bits U of
  // top-bit vector J / 4, at `hbp`.
  template <int U>
  static typename O::I Values(const uint8_t* hbp, const uint8_t* lvp, typename O::I m4, typename O::I m30) {
    using I = typename O::I;
    const I hb = O::Load(hbp), lv = O::Load(lvp);
    const I low = (U & 1) == 0 ? O::And(lv, m4) : O::And(O::template Srli16<4>(lv), m4);
    I top;
    if constexpr (U == 0) top = O::template Slli16<4>(hb);
    else if constexpr (U == 1) top = O::template Slli16<2>(hb);
    else if constexpr (U == 2) top = hb;
    else top = O::template Srli16<2>(hb);
    return O::Or(low, O::And(top, m30));
  }
  template <int M, int kP>
  static void Parts(const uint8_t* gp, int64_t nsb, const G16KToken* xt, float* y, int64_t y_stride, int part0,
                    int valid) {
    using I = typename O::I;
    using F = typename O::F;
    constexpr int R = 16 / O::kParts, kCols = O::kQ6Columns;
    F f[kP][M];
    for (int p = 0; p < kP; ++p) {
      for (int m = 0; m < M; ++m) f[p][m] = O::ZeroF();
    }
    const I m4 = O::Set8(0x0F), m30 = O::Set8(0x30);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* blk = gp + b * kBlockBytes;
      const int8_t* xb[M];
      #pragma GCC unroll 8
      for (int m = 0; m < M; ++m) xb[m] = xt[m].q + b * 256;
      #pragma GCC unroll 1
      for (int p = 0; p < kP; ++p) {
        const int part = part0 + p, vo = part * 4 * R;
        const uint8_t* sp = blk + 32 + 2 * R * part;  // scale pair k at sp + 32k
        I tot[M];
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) tot[m] = O::ZeroI();
        // The offset: -32 * sum_s scale_s * xs_s, scales 2k and 2k + 1 against their sums.
        #pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          const I off = O::Sub16(O::ZeroI(), O::template Slli16<5>(O::SxWords(sp + 32 * k)));
          #pragma GCC unroll 8
          for (int m = 0; m < M; ++m) tot[m] = O::MaddW(tot[m], off, O::Set32(Load4(xt[m].pairs + b * kPairsPerBlock + 2 * k)));
        }
        if constexpr (M == 1) {
          // Streaming from memory: the steps in reading order (see Q4_K; grouped by chunk a
          // 65536 x 2048 matrix took 1.7-2.6x as long), eight chunk sums, ScaleSum'd every kCols
          // columns (columns 0-3 are the chunks' first sub-blocks, 4-7 their second).
          I a[8];
          for (int k = 0; k < 8; ++k) a[k] = O::ZeroI();
          #pragma GCC unroll 1
          for (int l = 0; l < 8; ++l) {
            if (p == 0) PrefetchEighthAhead<O, kBlockBytes>(blk, l);
            const uint8_t* step = blk + 288 + 384 * l + vo;
            [&]<int... J>(std::integer_sequence<int, J...>) {
              ((a[J] = O::AddProducts(a[J], Values<J % 4>(step + 64 * (J / 4), step + 128 + 64 * (J / 2), m4, m30),
                                      O::Bcast4(xb[0] + 32 * J + 4 * l))), ...);
            }(std::make_integer_sequence<int, 8>{});
            if ((l + 1) % kCols == 0) {
              #pragma GCC unroll 8
              for (int k = 0; k < 8; ++k) {
                tot[0] = O::ScaleSum(tot[0], a[k], l < 4 ? O::template Q6Scale<0>(sp + 32 * k) : O::template Q6Scale<1>(sp + 32 * k));
                a[k] = O::ZeroI();
              }
              Settle(tot[0]);
            }
          }
        } else {
          // Chunk J = 4 pp + U at a time, its two sub-blocks in turn.
          auto chunk = [&]<int U>(int pp) __attribute__((always_inline)) {
            const int j = 4 * pp + U;
            #pragma GCC unroll 1
            for (int half = 0; half < 2; ++half) {
              I a[M];
              #pragma GCC unroll 8
              for (int m = 0; m < M; ++m) a[m] = O::ZeroI();
              #pragma GCC unroll 4
              for (int l = 4 * half; l < 4 * half + 4; ++l) {
                const uint8_t* step = blk + 288 + 384 * l + vo;
                const I q = Values<U>(step + 64 * pp, step + 128 + 64 * (2 * pp + U / 2), m4, m30);
                #pragma GCC unroll 8
                for (int m = 0; m < M; ++m) a[m] = O::AddProducts(a[m], q, O::Bcast4(xb[m] + 32 * j + 4 * l));
                if ((l + 1) % kCols == 0) {
                  const I sc = half == 0 ? O::template Q6Scale<0>(sp + 32 * j) : O::template Q6Scale<1>(sp + 32 * j);
                  #pragma GCC unroll 8
                  for (int m = 0; m < M; ++m) {
                    tot[m] = O::ScaleSum(tot[m], a[m], sc);
                    Settle(tot[m]);
                    a[m] = O::ZeroI();
                  }
                }
              }
            }
          };
          #pragma GCC unroll 1
          for (int pp = 0; pp < 2; ++pp) {
            chunk.template operator()<0>(pp);
            chunk.template operator()<1>(pp);
            chunk.template operator()<2>(pp);
            chunk.template operator()<3>(pp);
          }
        }
        const F dv = O::Half(blk + 2 * R * part);
        #pragma GCC unroll 8
        for (int m = 0; m < M; ++m) f[p][m] = O::Fma(O::Mul(dv, O::Cvt(tot[m])), O::SetF(xt[m].d[b]), f[p][m]);
        FloatsInMemory<O>(&f[0][0]);
      }
    }
    for (int p = 0; p < kP; ++p) {
      const int v = std::min(R, valid - p * R);
      if (v <= 0) break;
      for (int m = 0; m < M; ++m) O::Store(y + m * y_stride + p * R, f[p][m], v);
    }
  }
};

// Drives K's tile (G16Q4KSubBlocks / G16Q6KSubBlocks over O) over groups x tokens, kMaxM tokens per tile, cache
// blocked as GemmG16.
template <class K, class O, int kMaxM>
void GemmG16K(const uint8_t* w, int64_t groups, int64_t rows, const Q8KRows& x, int64_t T, float* Y, int64_t y_stride) {
  constexpr int64_t kSlabBytes = 256 << 10;
  constexpr int R = 16 / O::kParts;
  const int64_t nsb = x.n() / 256, group_bytes = nsb * K::kBlockBytes;
  constexpr bool kQ4 = K::kPairsPerBlock == 8;
  const int64_t slab = std::max<int64_t>(1, kSlabBytes / group_bytes);
  for (int64_t g0 = 0; g0 < groups; g0 += slab) {
    const int64_t g1 = std::min(groups, g0 + slab);
    for (int64_t t0 = 0; t0 < T; t0 += kMaxM) {
      const int m = static_cast<int>(std::min<int64_t>(kMaxM, T - t0));
      G16KToken tok[kMaxM];
      for (int i = 0; i < m; ++i) {
        const Q8KRow r = x.Row(t0 + i);
        tok[i] = {r.q, r.d, kQ4 ? r.bsum32 : r.bsum};
      }
      for (int64_t g = g0; g < g1; ++g) {
        const int valid = static_cast<int>(std::min<int64_t>(16, rows - g * 16));
        WithTileRows<kMaxM>(m, [&](auto tm) {
          constexpr int M = decltype(tm)::value;
          float* y = Y + t0 * y_stride + g * 16;
          if constexpr (M <= 2 && O::kParts > 1) {
            if (valid > R) {  // decode: every part in one pass over the weights
              K::template Parts<M, O::kParts>(w + g * group_bytes, nsb, tok, y, y_stride, 0, valid);
              return;
            }
          }
          for (int part = 0; part < O::kParts && valid > part * R; ++part) {
            K::template Parts<M, 1>(w + g * group_bytes, nsb, tok, y + part * R, y_stride, part,
                                    std::min(R, valid - part * R));
          }
        });
      }
    }
  }
}

// ---- activation quantization (Q8Rows) ----

// The scalar table's QuantizeQ8 (llm_kernels_scalar.cc) with 8-float vectors, giving the same
// bytes and scales: max |x| per block of 32 ignoring NaN (as fmax), q = x * (127 / amax) rounded
// to nearest even (cvtps2dq under the default rounding mode, as nearbyint), truncated to int8 as
// static_cast does, and the block's sum of the int values. It was about 7% of an AVX-512 prefill
// profile in its scalar form (perf, TinyLlama-shaped Q4_0, 256 tokens).
inline void QuantizeQ8Vec(const float* x, int64_t n, int8_t* q, float* d, float* sum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i low_byte = _mm256_set1_epi32(0xFF), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < n / 32; ++b) {
    __m256 v[4];
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + b * 32 + 8 * k);
    // max_ps returns its second operand when either is NaN: NaN lanes leave m as it was.
    __m256 m = _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_setzero_ps());
    #pragma GCC unroll 4
    for (int k = 1; k < 4; ++k) m = _mm256_max_ps(_mm256_and_ps(v[k], abs_mask), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const float db = amax / 127.0f;
    const __m256 inv = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
    __m256i vi[4], total = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      vi[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], inv));
      total = _mm256_add_epi32(total, vi[k]);
      vi[k] = _mm256_and_si256(vi[k], low_byte);
    }
    const __m256i packed = _mm256_packus_epi16(_mm256_packus_epi32(vi[0], vi[1]), _mm256_packus_epi32(vi[2], vi[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * 32), _mm256_permutevar8x32_epi32(packed, order));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    d[b] = HalfToFloat(FloatToHalf(db));
    sum[b] = d[b] * static_cast<float>(_mm_cvtsi128_si32(t));
  }
}

// The scalar table's QuantizeQ8K (llama.cpp's quantize_row_q8_K) with 8-float vectors, giving the
// same bytes, scales and sums: the first value of the largest magnitude found by a vector max and
// a compare, the rounding by vroundps (nearest even, as nearbyint), the bounds and NaN -> 0 as
// there. Element by element (with a libm nearbyintf call per value) it was 6.4% of a 2-thread
// Q4_K_M prefill profile, all of it on the calling thread before the product's threads start.
inline void QuantizeQ8KVec(const float* x, int64_t n, int8_t* q, float* d, int16_t* bsum) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* xb = x + b * 256;
    int8_t* qb = q + b * 256;
    // max_ps returns its second operand when either is NaN: NaN lanes leave m as it was.
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb + 8 * k), abs_mask), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    if (amax == 0) {
      d[b] = 0;
      std::memset(qb, 0, 256);
      std::memset(bsum + b * 16, 0, 16 * sizeof(int16_t));
      continue;
    }
    float first = 0;  // the first value whose magnitude is amax
    const __m256 amax_v = _mm256_set1_ps(amax);
    for (int k = 0; k < 32; ++k) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(xb + 8 * k), abs_mask), amax_v, _CMP_EQ_OQ));
      if (hit != 0) {
        first = xb[8 * k + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.0f / first;
    const __m256 is = _mm256_set1_ps(iscale);
    __m256i sums[16];
    for (int c = 0; c < 8; ++c) {  // 32 values per step
      __m256i vi[4];
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256 r = _mm256_round_ps(_mm256_mul_ps(is, _mm256_loadu_ps(xb + 32 * c + 8 * k)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        // min_ps / max_ps return their second operand when either is NaN: NaN stays NaN here,
        // then becomes 0 by the ordered mask.
        const __m256 bounded = _mm256_max_ps(lo, _mm256_min_ps(hi, r));
        vi[k] = _mm256_and_si256(_mm256_cvtps_epi32(bounded), _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_ORD_Q)));
      }
      const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(vi[0], vi[1]), _mm256_packs_epi32(vi[2], vi[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qb + 32 * c), _mm256_permutevar8x32_epi32(packed, order));
      sums[2 * c] = _mm256_add_epi32(vi[0], vi[1]);
      sums[2 * c + 1] = _mm256_add_epi32(vi[2], vi[3]);
    }
    for (int half = 0; half < 2; ++half) {  // eight 16-value sums at a time
      const __m256i* s8 = sums + 8 * half;
      const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(s8[0], s8[1]), _mm256_hadd_epi32(s8[2], s8[3]));
      const __m256i c = _mm256_hadd_epi32(_mm256_hadd_epi32(s8[4], s8[5]), _mm256_hadd_epi32(s8[6], s8[7]));
      const __m128i s03 = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
      const __m128i s47 = _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(bsum + b * 16 + 8 * half), _mm_packs_epi32(s03, s47));
    }
    d[b] = 1.0f / iscale;
  }
}

// ---- element-wise loops, the same per element at every width ----

template <class V>
void AxpyF16(float a, const uint16_t* x, float* y, int64_t n) {
  const typename V::R av = V::Set(a);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::Store(y + i, V::Fma(av, V::LoadHalf(x + i), V::Load(y + i)));
  for (; i < n; ++i) y[i] += a * _cvtsh_ss(x[i]);
}

// The horizontal sums of eight vectors v[0..7] into s[0..7], each by the additions of V::ReduceAdd
// in the same order, the eight interleaved: the 512-bit vectors' halves added first (as
// _mm512_reduce_add_ps does), then lanes i + (i + 4), then lanes 0 + 2 and 1 + 3, then 0 + 1:
// 19 instructions for the eight on AVX2 against about 40 one at a time.
template <class V>
inline void ReduceAdd8(const typename V::R* v, float* s) {
  __m256 y[8];
  #pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {
    if constexpr (V::kWidth == 16) {
      y[k] = _mm256_add_ps(_mm512_extractf32x8_ps(v[k], 1), _mm512_castps512_ps256(v[k]));
    } else {
      static_assert(V::kWidth == 8);
      y[k] = v[k];
    }
  }
  __m256 t[4];
  #pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {  // [lo + hi of y[k] | lo + hi of y[k + 4]]
    t[k] = _mm256_add_ps(_mm256_permute2f128_ps(y[k], y[k + 4], 0x20), _mm256_permute2f128_ps(y[k], y[k + 4], 0x31));
  }
  // Per 128-bit half: (lanes 0 + 2, 1 + 3) of t[0] and t[1], then of t[2] and t[3].
  const __m256 u0 = _mm256_add_ps(_mm256_shuffle_ps(t[0], t[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(t[0], t[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 u1 = _mm256_add_ps(_mm256_shuffle_ps(t[2], t[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(t[2], t[3], _MM_SHUFFLE(3, 2, 3, 2)));
  _mm256_storeu_ps(s, _mm256_hadd_ps(u0, u1));  // lanes 0 + 1: the sums of y[0..3] | y[4..7]
}

// The table's DotF16 (V's fmas in order over whole vectors, then V::ReduceAdd) for kR rows x kH
// heads at once, n % V::kWidth == 0: each (row, head) accumulator takes the same fmas in the same
// order; each head's query vector is loaded once for the kR rows.
template <class V, int kR, int kH>
void DotF16Block(const uint16_t* w, int64_t w_stride, const float* x, int64_t n, float* out, int64_t out_stride) {
  typename V::R a[kR][kH];
  #pragma GCC unroll 8
  for (int r = 0; r < kR; ++r) {
    #pragma GCC unroll 8
    for (int g = 0; g < kH; ++g) a[r][g] = V::Set(0.0f);
  }
  for (int64_t i = 0; i < n; i += V::kWidth) {
    typename V::R wf[kR];
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) wf[r] = V::LoadHalf(w + r * w_stride + i);
    #pragma GCC unroll 8
    for (int g = 0; g < kH; ++g) {
      typename V::R xv = V::Load(x + g * n + i);
      if constexpr (kR > 1) Settle(xv);  // one load for the kR rows, not a load folded into each fma
      #pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) a[r][g] = V::Fma(wf[r], xv, a[r][g]);
    }
  }
  if constexpr (kR * kH % 8 == 0) {
    float s[kR * kH];
    #pragma GCC unroll 4
    for (int j = 0; j < kR * kH; j += 8) ReduceAdd8<V>(&a[0][0] + j, s + j);
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      #pragma GCC unroll 8
      for (int g = 0; g < kH; ++g) out[g * out_stride + r] = s[r * kH + g];
    }
  } else {
    #pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      #pragma GCC unroll 8
      for (int g = 0; g < kH; ++g) out[g * out_stride + r] = V::ReduceAdd(a[r][g]);
    }
  }
}

// dot_f16_rows over the table's own DotF16 (Single), which takes rows of other lengths.
template <class V, float (*Single)(const uint16_t*, const float*, int64_t)>
void DotF16Rows(const uint16_t* w, int64_t w_stride, int rows, const float* x, int64_t n, int heads, float* out,
                int64_t out_stride) {
  // 2 rows x 4 heads, also with 32 registers: at head dim 64 a 16-float vector takes 4 fmas per
  // dot, and 2 x 8 blocks spent more on their 16 reductions than on the products
  // (bench_llm_attention 4096, avx512 table, one Zen 4 core: 40-46 ms against 28-30 with 2 x 4
  // and ReduceAdd8).
  constexpr int kHeadBlock = 4;
  auto head_block = [&]<int kH>(int g) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
      DotF16Block<V, 2, kH>(w + r * w_stride, w_stride, x + g * n, n, out + g * out_stride + r, out_stride);
    }
    if (r < rows) DotF16Block<V, 1, kH>(w + r * w_stride, w_stride, x + g * n, n, out + g * out_stride + r, out_stride);
  };
  int g = 0;
  if (n % V::kWidth == 0) {
    for (; g + kHeadBlock <= heads; g += kHeadBlock) head_block.template operator()<kHeadBlock>(g);
    // Groups of 4 query heads per key/value head (Llama 3, Mistral) on the 8-head width too.
    for (; g + 4 <= heads; g += 4) head_block.template operator()<4>(g);
  }
  for (; g < heads; ++g) {
    for (int r = 0; r < rows; ++r) out[g * out_stride + r] = Single(w + r * w_stride, x + g * n, n);
  }
}

// axpy_f16_rows for kH heads and vectors [i0, i0 + kC * W) of each: the accumulators stay in
// registers over the rows; each element takes AxpyF16's fma per row, rows in order.
template <class V, int kH, int kC>
void AxpyF16RowsBlock(const float* a, int64_t a_stride, const uint16_t* x, int64_t x_stride, int rows, float* y,
                      int64_t n, int64_t i0) {
  using R = typename V::R;
  constexpr int W = V::kWidth;
  R acc[kH][kC];
  #pragma GCC unroll 8
  for (int h = 0; h < kH; ++h) {
    #pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) acc[h][c] = V::Load(y + h * n + i0 + c * W);
  }
  for (int r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * x_stride + i0;
    R xv[kC];
    #pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) xv[c] = V::LoadHalf(xr + c * W);
    #pragma GCC unroll 8
    for (int h = 0; h < kH; ++h) {
      const R av = V::Set(a[h * a_stride + r]);
      #pragma GCC unroll 8
      for (int c = 0; c < kC; ++c) acc[h][c] = V::Fma(av, xv[c], acc[h][c]);
    }
  }
  #pragma GCC unroll 8
  for (int h = 0; h < kH; ++h) {
    #pragma GCC unroll 8
    for (int c = 0; c < kC; ++c) V::Store(y + h * n + i0 + c * W, acc[h][c]);
  }
}

template <class V>
void AxpyF16Rows(const float* a, int64_t a_stride, const uint16_t* x, int64_t x_stride, int rows, float* y, int64_t n,
                 int heads) {
  constexpr int W = V::kWidth;
  constexpr int kHeadBlock = W >= 16 ? 4 : 2;  // 4 x 4 accumulators in 32 registers, 2 x 4 in 16
  const int64_t vecs = n / W;
  auto head_block = [&]<int kH>(int g) {
    int64_t c = 0;
    for (; c + 4 <= vecs; c += 4) AxpyF16RowsBlock<V, kH, 4>(a + g * a_stride, a_stride, x, x_stride, rows, y + g * n, n, c * W);
    for (; c < vecs; ++c) AxpyF16RowsBlock<V, kH, 1>(a + g * a_stride, a_stride, x, x_stride, rows, y + g * n, n, c * W);
  };
  int g = 0;
  for (; g + kHeadBlock <= heads; g += kHeadBlock) head_block.template operator()<kHeadBlock>(g);
  for (; g < heads; ++g) head_block.template operator()<1>(g);
  if (vecs * W < n) {  // the tail: AxpyF16's own, row by row
    const int64_t i0 = vecs * W;
    for (g = 0; g < heads; ++g) {
      for (int r = 0; r < rows; ++r) AxpyF16<V>(a[g * a_stride + r], x + r * x_stride + i0, y + g * n + i0, n - i0);
    }
  }
}

// The table's dot_q8_0_rows over its own dot_q8_0 (Dot, inlined here: the same arithmetic).
template <float (*Dot)(const uint8_t*, const Q8Row&, int64_t)>
void DotQ8_0Rows(const uint8_t* w, int64_t w_stride, int rows, const Q8Row* x, int heads, int64_t n, float* out,
                 int64_t out_stride) {
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < heads; ++g) out[g * out_stride + r] = Dot(w + r * w_stride, x[g], n);
  }
}

// The table's swiglu: the scalar table's arithmetic per lane. Element by element with libm's
// expf it was 0.47 ms of each TinyLlama-shaped decode step (22 layers x 5632 values, one AMD EPYC
// Zen 4 core), all of it on the calling thread between two products.
template <class V>
void SwiGlu(const float* gate, const float* up, float* y, int64_t n) {
  using R = typename V::R;
  constexpr int W = V::kWidth;
  const R one = V::Set(1.0f);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const R g = V::Load(gate + i);
    V::Store(y + i, V::Mul(V::Div(g, V::Add(one, simd::Exp<V>(V::Neg(g)))), V::Load(up + i)));
  }
  if (i < n) {
    const R g = V::LoadTail(gate + i, n - i, 0.0f);
    V::StoreTail(y + i, V::Mul(V::Div(g, V::Add(one, simd::Exp<V>(V::Neg(g)))), V::LoadTail(up + i, n - i, 0.0f)), n - i);
  }
}

// The table's scale_max. max_ps gives its second operand when either is NaN, so a NaN score
// leaves the running maxima as they were, as std::max(mx, s) does in the scalar table; the
// largest value does not depend on the order it is found in. The scalar loop, a chain of maxss,
// was about a sixth of a grouped decode step's attention at 256 positions (bench_llm_attention).
template <class V>
float ScaleMax(float* s, int64_t n, float scale) {
  using R = typename V::R;
  constexpr int W = V::kWidth;
  const R sc = V::Set(scale);
  R m0 = V::Set(-INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const R a = V::Mul(V::Load(s + i), sc), b = V::Mul(V::Load(s + i + W), sc);
    V::Store(s + i, a);
    V::Store(s + i + W, b);
    m0 = V::Max(a, m0);
    m1 = V::Max(b, m1);
  }
  for (; i < n; i += W) {
    const int64_t k = std::min<int64_t>(W, n - i);
    const R a = V::Mul(k == W ? V::Load(s + i) : V::LoadTail(s + i, k, -INFINITY), sc);
    if (k == W) {
      V::Store(s + i, a);
    } else {
      V::StoreTail(s + i, a, k);
    }
    m0 = V::Max(a, m0);
  }
  return V::ReduceMax(V::Max(m0, m1));
}

template <class V>
void SoftmaxWeightsF16(float* s, int64_t n, float mx) {
  using R = typename V::R;
  constexpr int W = V::kWidth;
  const R m = V::Set(mx);
  R total = V::Set(0.0f);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const R e = simd::Exp<V, true, false>(V::Sub(V::Load(s + i), m));  // s - mx <= 0 (or NaN)
    V::Store(s + i, e);
    total = V::Add(total, e);
  }
  if (i < n) {
    const R e = V::ZeroTail(simd::Exp<V, true, false>(V::Sub(V::LoadTail(s + i, n - i, mx), m)), n - i);
    V::StoreTail(s + i, e, n - i);
    total = V::Add(total, e);
  }
  const R inv = V::Set(1.0f / V::ReduceAdd(total));
  alignas(64) uint16_t half[W];
  for (i = 0; i < n; i += W) {
    const int64_t k = std::min<int64_t>(W, n - i);
    V::StoreHalf(half, V::Mul(k == W ? V::Load(s + i) : V::LoadTail(s + i, k, 0.0f), inv));
    if (k == W) {
      V::Store(s + i, V::LoadHalf(half));
    } else {
      V::StoreTail(s + i, V::LoadHalf(half), k);
    }
  }
}

// axpy_q8_0_heads: each value vector dequantized once (v = d * q), then y = fma(v, a[g], y) per head.
template <class V>
void AxpyQ8_0Heads(const float* a, const uint8_t* x, float* y, int64_t n, int heads) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = x + b * 34;
    const typename V::R d = V::Set(HalfAt(blk));
    for (int k = 0; k < 32 / V::kWidth; ++k) {
      const typename V::R v = V::Mul(V::LoadI8(blk + 2 + V::kWidth * k), d);
      for (int g = 0; g < heads; ++g) {
        float* yg = y + g * n + b * 32 + V::kWidth * k;
        V::Store(yg, V::Fma(v, V::Set(a[g]), V::Load(yg)));
      }
    }
  }
}

template <class V>
void AxpyQ8_0(float a, const uint8_t* x, float* y, int64_t n) {
  AxpyQ8_0Heads<V>(&a, x, y, n, 1);
}

template <class V>
void ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::StoreHalf(y + i, V::Load(x + i));
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

// The scalar table with `name` and the entries written here: the K-quant dots and products (up to
// kMaxNT activation rows per pass over a weight row) and the element-wise loops at V's width.
template <class V, int kMaxNT>
LlmKernelTable TableWithSharedKernels(const char* name) {
  LlmKernelTable t = *ScalarLlmKernels();
  t.name = name;
  t.dot_q4_k = DotK<false>;
  t.dot_q6_k = DotK<true>;
  t.gemm_q4_k = GemmK<false, kMaxNT>;
  t.gemm_q6_k = GemmK<true, kMaxNT>;
  t.axpy_f16 = AxpyF16<V>;
  t.axpy_f16_rows = AxpyF16Rows<V>;
  t.softmax_weights_f16 = SoftmaxWeightsF16<V>;
  t.swiglu = SwiGlu<V>;
  t.scale_max = ScaleMax<V>;
  t.to_f16 = ToF16<V>;
  t.axpy_q8_0 = AxpyQ8_0<V>;
  t.axpy_q8_0_heads = AxpyQ8_0Heads<V>;
  t.quantize_q8 = QuantizeQ8Vec;
  t.quantize_q8_k = QuantizeQ8KVec;
  return t;
}

}  // namespace
}  // namespace inferloop::llm
