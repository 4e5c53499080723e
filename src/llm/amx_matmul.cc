// AMX int8 tile kernel for repacked Q8_0 / Q4_0 weights (amx_matmul.h). Built with
// -mamx-tile -mamx-int8 and AVX-512 (CMakeLists.txt); only called when AmxAvailable().
//
// Tiles: 0-1 activations (M token rows x 32 int8 of one block), 2-3 weights (the packed "B"
// tile of one block: 8 rows of 16 x 4 int8), 4-7 int32 results (M x 16), two blocks per step
// and two sets of results in flight.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "llm/amx_matmul.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

// Up to this many tokens the VNNI form is faster than tiles (bench/llm_matmul.cc).
constexpr int kVnniMaxTokens = 8;

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void Configure(int m) {
  TileConfig c;
  for (int t : {0, 1}) { c.rows[t] = static_cast<uint8_t>(m); c.colsb[t] = 32; }
  for (int t : {2, 3}) { c.rows[t] = 8; c.colsb[t] = 64; }
  for (int t : {4, 5, 6, 7}) { c.rows[t] = static_cast<uint8_t>(m); c.colsb[t] = 64; }
  // (GCC 12's _tile_loadconfig declares only a pointer-sized memory operand, so the stores
  // above could be dropped; this operand is the whole configuration.)
  asm volatile("ldtilecfg %0" : : "m"(c));
}

// One packed Q4_0 block (256 bytes, two values per byte) to the int8 B tile (512 bytes): low
// nibbles are values 0-15 (tile rows 0-3), high nibbles values 16-31 (rows 4-7); minus 8.
inline void UnpackQ4(const uint8_t* src, int8_t* dst) {
  const __m512i m = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
  for (int k = 0; k < 4; ++k) {
    const __m512i v = _mm512_loadu_si512(src + 64 * k);
    _mm512_storeu_si512(dst + 64 * k, _mm512_sub_epi8(_mm512_and_si512(v, m), eight));
    _mm512_storeu_si512(dst + 256 + 64 * k, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m), eight));
  }
}

// Result-tile operations on tile C (4-7). The tile intrinsics paste their tile number into the
// instruction text, so it must be a literal.
template <int C>
inline void TileZero() {
  if constexpr (C == 4) _tile_zero(4);
  if constexpr (C == 5) _tile_zero(5);
  if constexpr (C == 6) _tile_zero(6);
  if constexpr (C == 7) _tile_zero(7);
}
// C += A * B with A = tile 0 (B = tile 2) or tile 1 (B = tile 3).
template <int C, int A>
inline void TileDot() {
  if constexpr (C == 4 && A == 0) _tile_dpbssd(4, 0, 2);
  if constexpr (C == 5 && A == 1) _tile_dpbssd(5, 1, 3);
  if constexpr (C == 6 && A == 0) _tile_dpbssd(6, 0, 2);
  if constexpr (C == 7 && A == 1) _tile_dpbssd(7, 1, 3);
}
template <int C>
inline void TileStore(int32_t* dst) {
  if constexpr (C == 4) _tile_stored(4, dst, 64);
  if constexpr (C == 5) _tile_stored(5, dst, 64);
  if constexpr (C == 6) _tile_stored(6, dst, 64);
  if constexpr (C == 7) _tile_stored(7, dst, 64);
}

// Stores made by vector code before a tile load reads them: the tile intrinsics are asm
// statements that do not declare the memory they read.
inline void CompilerBarrier() { asm volatile("" ::: "memory"); }

// acc[m] += float(c[m]) * (d_w * d_x[m]) for one block's int32 results c (M x 16).
template <int M>
inline void Accumulate(__m512 (&acc)[16], const int32_t* c, __m512 dw, const float* xd, int64_t nb) {
#pragma GCC unroll 16
  for (int m = 0; m < M; ++m) {
    const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(xd[m * nb]));
    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + m * 16)), s, acc[m]);
  }
}

inline __m512 Scales(const uint8_t* blk) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
}

// M token rows (x: their int8 values, row stride n; xd: their block scales, row stride nb)
// times one 16-row group. `unpacked` holds the group's Q4_0 blocks as int8 tiles (512 bytes
// each) or is null (Q8_0: tiles read in place; Q4_0: unpacked block by block into `buf`).
template <bool kQ4, int M>
void TokenRows(const uint8_t* gp, int64_t nb, int64_t bb, const int8_t* unpacked, int8_t* buf, const int8_t* x,
               int64_t n, const float* xd, float* y, int64_t y_stride, int valid) {
  __m512 acc[16];
#pragma GCC unroll 16
  for (int m = 0; m < M; ++m) acc[m] = _mm512_setzero_ps();
  alignas(64) int32_t c[2][16 * 16];
  auto tile_b = [&](int64_t b, int slot) -> const void* {
    if constexpr (!kQ4) {
      (void)slot;
      return gp + b * bb + 32;
    } else {
      if (unpacked != nullptr) return unpacked + b * 512;
      UnpackQ4(gp + b * bb + 32, buf + slot * 512);
      return buf + slot * 512;
    }
  };
  // Blocks go in pairs, software-pipelined over two sets of result tiles (4-5, 6-7): pair p's
  // products are issued before pair p-1's results are stored and scaled, so the tile unit
  // works while the vector units scale. The float order is still block after block.
  const int64_t pairs = nb / 2;
  auto issue = [&](auto ca, auto cb, int64_t p) {
    const int64_t b = 2 * p;
    const void* b0 = tile_b(b, static_cast<int>(2 * (p & 1)));
    const void* b1 = tile_b(b + 1, static_cast<int>(2 * (p & 1) + 1));
    CompilerBarrier();
    _tile_loadd(0, x + b * 512, 32);
    _tile_loadd(2, b0, 64);
    TileZero<decltype(ca)::value>();
    _tile_loadd(1, x + (b + 1) * 512, 32);
    _tile_loadd(3, b1, 64);
    TileZero<decltype(cb)::value>();
    TileDot<decltype(ca)::value, 0>();
    TileDot<decltype(cb)::value, 1>();
  };
  auto drain = [&](auto ca, auto cb, int64_t p) {
    const int64_t b = 2 * p;
    TileStore<decltype(ca)::value>(c[0]);
    TileStore<decltype(cb)::value>(c[1]);
    Accumulate<M>(acc, c[0], Scales(gp + b * bb), xd + b, nb);
    Accumulate<M>(acc, c[1], Scales(gp + (b + 1) * bb), xd + b + 1, nb);
  };
  using T4 = std::integral_constant<int, 4>;
  using T5 = std::integral_constant<int, 5>;
  using T6 = std::integral_constant<int, 6>;
  using T7 = std::integral_constant<int, 7>;
  if (pairs > 0) issue(T4{}, T5{}, 0);
  for (int64_t p = 1; p < pairs; ++p) {
    if (p & 1) {
      issue(T6{}, T7{}, p);
      drain(T4{}, T5{}, p - 1);
    } else {
      issue(T4{}, T5{}, p);
      drain(T6{}, T7{}, p - 1);
    }
  }
  if (pairs > 0) {
    if ((pairs - 1) & 1) {
      drain(T6{}, T7{}, pairs - 1);
    } else {
      drain(T4{}, T5{}, pairs - 1);
    }
  }
  if (nb & 1) {
    const int64_t b = nb - 1;
    const void* b0 = tile_b(b, 0);
    CompilerBarrier();
    _tile_loadd(0, x + b * 512, 32);
    _tile_loadd(2, b0, 64);
    _tile_zero(4);
    _tile_dpbssd(4, 0, 2);
    _tile_stored(4, c[0], 64);
    Accumulate<M>(acc, c[0], Scales(gp + b * bb), xd + b, nb);
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
#pragma GCC unroll 16
  for (int m = 0; m < M; ++m) _mm512_mask_storeu_ps(y + m * y_stride, mask, acc[m]);
}

template <bool kQ4>
using TokenRowsFn = void (*)(const uint8_t*, int64_t, int64_t, const int8_t*, int8_t*, const int8_t*, int64_t,
                             const float*, float*, int64_t, int);

template <bool kQ4, int... Ms>
constexpr auto MakeDispatch(std::integer_sequence<int, Ms...>) {
  return std::array<TokenRowsFn<kQ4>, sizeof...(Ms)>{&TokenRows<kQ4, Ms + 1>...};
}

template <bool kQ4>
void Run(const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y, int64_t y_stride, int64_t g0, int64_t g1) {
  static constexpr auto kFns = MakeDispatch<kQ4>(std::make_integer_sequence<int, 16>());
  const int64_t nb = w.blocks(), bb = w.block_bytes(), n = w.cols();
  const int8_t* xq = x.Row(0).q;
  const float* xd = x.Row(0).d;
  if (T <= kVnniMaxTokens) {
    // The AVX-512 VNNI table's group products (llm_kernels_avx512.cc): bit-identical to the tiles.
    return TableGroupMatMul(*Avx512VnniLlmKernels(), w, x, T, Y, y_stride, g0, g1);
  }
  // Q4_0 with more than one token group: unpack each weight group once for all of them.
  std::vector<int8_t> unpacked(kQ4 && T > 16 ? nb * 512 : 0);
  std::vector<int8_t> buf(4 * 512);
  // The activations as A tiles: per group of 16 tokens and block, the tokens' 32 values
  // contiguously (rows 32 bytes apart rather than a whole row apart, which would put a tile's
  // rows into few L1 sets).
  std::vector<int8_t> xa(((T + 15) / 16) * 16 * n);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t t0 = t / 16 * 16, r = t % 16;
    for (int64_t b = 0; b < nb; ++b) std::memcpy(xa.data() + t0 * n + b * 512 + r * 32, xq + t * n + b * 32, 32);
  }
  int configured = -1;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* gp = w.group(g);
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows() - g * 16));
    if (!unpacked.empty()) {
      for (int64_t b = 0; b < nb; ++b) UnpackQ4(gp + b * bb + 32, unpacked.data() + b * 512);
    }
    for (int64_t t0 = 0; t0 < T; t0 += 16) {
      const int m = static_cast<int>(std::min<int64_t>(16, T - t0));
      if (m != configured) {
        Configure(m);
        configured = m;
      }
      kFns[m - 1](gp, nb, bb, unpacked.empty() ? nullptr : unpacked.data(), buf.data(), xa.data() + t0 * n, n,
                  xd + t0 * nb, Y + t0 * y_stride + g * 16, y_stride, valid);
    }
  }
  _tile_release();
}

}  // namespace

namespace {

// Groups [group_begin, group_end) of `w` through a table's group kernel `gemm` (the rows of the
// last group may be fewer than 16).
template <class Rows>
void GroupsThrough(void (*gemm)(const uint8_t*, int64_t, int64_t, const Rows&, int64_t, float*, int64_t),
                   const AmxPackedWeight& w, const Rows& x, int64_t T, float* Y, int64_t y_stride, int64_t group_begin,
                   int64_t group_end) {
  if (T <= 0 || group_begin >= group_end) return;
  const int64_t G = AmxPackedWeight::kGroupRows;
  gemm(w.group(group_begin), group_end - group_begin, std::min(w.rows(), group_end * G) - group_begin * G, x, T,
       Y + group_begin * G, y_stride);
}

}  // namespace

void TableGroupMatMul(const LlmKernelTable& k, const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y,
                      int64_t y_stride, int64_t group_begin, int64_t group_end) {
  GroupsThrough(w.type() == GgmlType::kQ4_0 ? k.gemm_g16_q4_0 : k.gemm_g16_q8_0, w, x, T, Y, y_stride, group_begin,
                group_end);
}

void TableGroupMatMul(const LlmKernelTable& k, const AmxPackedWeight& w, const Q8KRows& x, int64_t T, float* Y,
                      int64_t y_stride, int64_t group_begin, int64_t group_end) {
  GroupsThrough(w.type() == GgmlType::kQ4_K ? k.gemm_g16_q4_k : k.gemm_g16_q6_k, w, x, T, Y, y_stride, group_begin,
                group_end);
}

void AmxMatMul(const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y, int64_t y_stride, int64_t group_begin,
               int64_t group_end) {
  if (T <= 0 || group_begin >= group_end) return;
  if (w.type() == GgmlType::kQ4_0) {
    Run<true>(w, x, T, Y, y_stride, group_begin, group_end);
  } else {
    Run<false>(w, x, T, Y, y_stride, group_begin, group_end);
  }
}

}  // namespace inferloop::llm
