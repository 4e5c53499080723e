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

// ---- Q4_K / Q6_K on tiles ----
// The per-row K-quant dots (and the table's group kernels) sum each row's products per super-block
// into eight int32 lanes, lane l holding the values at positions p with p % 32 in [4l, 4l + 4),
// each product scaled by its sub-block's integer scale. A tile product with K = 32 gives exactly
// such a lane for 16 tokens x 16 rows when its B tile holds scale * value for the lane's 32
// positions (row k32 of the B tile: chunk k32 of 32 values, 4 bytes per weight row: the packed
// column vector's layout). scale * value does not fit a byte (Q4_K up to 63 * 15, Q6_K -128 * 63
// .. 127 * 63), so it is split into v = 256 * hi + lo with lo unsigned (0..255, tdpbsud) and hi
// signed (tdpbssd): lane = 256 * C_hi + C_lo, the same integer. These digit tiles are made once
// per group for all token tiles (16 KiB per super-block), so tiles are used from
// kAmxKMinTokens tokens on; the float steps are the table kernels' (llm_kernels_impl.h G16Q4K,
// G16Q6K), so the bits are the same on every path and for any T.
constexpr int kAmxKMinTokens = 17;

void ConfigureK(int m) {
  TileConfig c;
  for (int t : {0, 7}) { c.rows[t] = static_cast<uint8_t>(m); c.colsb[t] = 32; }
  for (int t : {1, 2}) { c.rows[t] = 8; c.colsb[t] = 64; }
  for (int t : {3, 4, 5, 6}) { c.rows[t] = static_cast<uint8_t>(m); c.colsb[t] = 64; }
  asm volatile("ldtilecfg %0" : : "m"(c));
}

// 32 int16 lanes, lane i taking element base + step * (i / 4) of a vector of 32 int16.
inline __m512i RowIndex(int base, int step) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = static_cast<int16_t>(base + step * (i / 4));
  return _mm512_load_si512(idx);
}

// One packed super-block of a group (llm_kernels.h layouts) as 8 lanes x (lo, hi) digit B tiles
// of 512 bytes each: dst + (2 l) * 512 the lo tile of lane l, dst + (2 l + 1) * 512 the hi tile.
template <bool kQ6>
void UnpackKDigits(const uint8_t* blk, uint8_t* dst) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const __m512i idx4[2] = {RowIndex(0, 1), RowIndex(8, 1)};
  const __m512i idx6[2][2] = {{RowIndex(0, 2), RowIndex(16, 2)}, {RowIndex(1, 2), RowIndex(17, 2)}};
  for (int l = 0; l < 8; ++l) {
    uint8_t* lo_tile = dst + (2 * l) * 512;
    uint8_t* hi_tile = dst + (2 * l + 1) * 512;
    for (int k32 = 0; k32 < 8; ++k32) {
      __m512i q, s32;  // the 64 value bytes (16 rows x 4); the rows' scales as int16
      __m512i sv[2];   // per half of the 64 bytes (8 rows): each row's scale on its 4 int16 lanes
      if constexpr (!kQ6) {
        const __m512i v = _mm512_loadu_si512(blk + 320 + 64 * (8 * (k32 / 2) + l));
        q = (k32 & 1) ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_and_si512(v, m4);
        s32 = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 64 + 16 * k32))));
        sv[0] = _mm512_permutexvar_epi16(idx4[0], s32);
        sv[1] = _mm512_permutexvar_epi16(idx4[1], s32);
      } else {
        const __m512i lv = _mm512_loadu_si512(blk + 288 + 64 * (8 * (k32 / 2) + l));
        const __m512i hb = _mm512_loadu_si512(blk + 2336 + 64 * (8 * (k32 / 4) + l));
        const __m512i lo4 = (k32 & 1) ? _mm512_and_si512(_mm512_srli_epi16(lv, 4), m4) : _mm512_and_si512(lv, m4);
        __m512i hi2;
        switch (k32 & 3) {
          case 0: hi2 = _mm512_slli_epi16(hb, 4); break;
          case 1: hi2 = _mm512_slli_epi16(hb, 2); break;
          case 2: hi2 = hb; break;
          default: hi2 = _mm512_srli_epi16(hb, 2); break;
        }
        q = _mm512_or_si512(lo4, _mm512_and_si512(hi2, m30));
        // Scales 2 k32 and 2 k32 + 1 of the 16 rows as int16 pairs; lanes 0-3 use the first, 4-7 the second.
        s32 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 32 * k32)));
        sv[0] = _mm512_permutexvar_epi16(idx6[l >= 4][0], s32);
        sv[1] = _mm512_permutexvar_epi16(idx6[l >= 4][1], s32);
      }
      for (int h = 0; h < 2; ++h) {
        const __m512i q16 = _mm512_cvtepu8_epi16(h == 0 ? _mm512_castsi512_si256(q) : _mm512_extracti64x4_epi64(q, 1));
        const __m512i v = _mm512_mullo_epi16(q16, sv[h]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo_tile + 64 * k32 + 32 * h), _mm512_cvtepi16_epi8(v));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi_tile + 64 * k32 + 32 * h),
                            _mm512_cvtepi16_epi8(_mm512_srai_epi16(v, 8)));
      }
    }
  }
}

template <bool kQ6>
void RunK(const AmxPackedWeight& w, const Q8KRows& x, int64_t T, float* Y, int64_t y_stride, int64_t g0, int64_t g1) {
  constexpr int kBlockBytes = kQ6 ? 3360 : 2368;
  const int64_t nsb = w.blocks();
  // Activations as A tiles: per tile of 16 tokens, super-block and lane, the tokens' 32 values of
  // that lane (4 from each chunk of 32) contiguously.
  const int64_t tiles = (T + 15) / 16;
  std::vector<int8_t> xa(tiles * nsb * 8 * 16 * 32, 0);
  // Per token and super-block: Q4_K the 32-value sums in int16 pairs (8), Q6_K the 16-value sums.
  std::vector<int16_t> bs32(kQ6 ? 0 : T * nsb * 8);
  for (int64_t t = 0; t < T; ++t) {
    const Q8KRow r = x.Row(t);
    for (int64_t b = 0; b < nsb; ++b) {
      for (int l = 0; l < 8; ++l) {
        int8_t* dst = xa.data() + (((t / 16) * nsb + b) * 8 + l) * 512 + (t % 16) * 32;
        for (int k32 = 0; k32 < 8; ++k32) std::memcpy(dst + 4 * k32, r.q + b * 256 + 32 * k32 + 4 * l, 4);
      }
    }
    if constexpr (!kQ6) {
      for (int64_t i = 0; i < nsb * 8; ++i) bs32[t * nsb * 8 + i] = static_cast<int16_t>(r.bsum[2 * i] + r.bsum[2 * i + 1]);
    }
  }
  std::vector<uint8_t> digits(nsb * 8 * 1024);
  alignas(64) int32_t clo[16 * 16], chi[16 * 16];
  // Per token of the tile: its 8 lane accumulators and Q4_K's 4 mins accumulators (16 rows each).
  std::vector<float> acc_buf(16 * 12 * 16 + 16);
  float* acc = acc_buf.data() + (16 - reinterpret_cast<uintptr_t>(acc_buf.data()) / 4 % 16) % 16;  // 64-byte aligned
  auto A = [&](int i) { return acc + i * 16; };
  int configured = -1;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* gp = w.group(g);
    for (int64_t b = 0; b < nsb; ++b) UnpackKDigits<kQ6>(gp + b * kBlockBytes, digits.data() + b * 8 * 1024);
    const int valid = static_cast<int>(std::min<int64_t>(16, w.rows() - g * 16));
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
    for (int64_t tt = 0; tt < tiles; ++tt) {
      const int m = static_cast<int>(std::min<int64_t>(16, T - tt * 16));
      if (m != configured) {
        ConfigureK(m);
        configured = m;
      }
      for (int i = 0; i < m * 12; ++i) _mm512_store_ps(A(i), _mm512_setzero_ps());
      for (int64_t b = 0; b < nsb; ++b) {
        const uint8_t* blk = gp + b * kBlockBytes;
        const __m512 dv = Scales(blk);
        __m512i s_off[8];
        if constexpr (kQ6) {
          for (int k = 0; k < 8; ++k) {
            const __m512i p = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 32 * k)));
            s_off[k] = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(p, 5));
          }
        }
        alignas(64) float dxd[16][16];
        for (int j = 0; j < m; ++j) _mm512_store_ps(dxd[j], _mm512_mul_ps(_mm512_set1_ps(x.Row(tt * 16 + j).d[b]), dv));
        const uint8_t* dig = digits.data() + b * 8 * 1024;
        const int8_t* xl = xa.data() + (tt * nsb + b) * 8 * 512;
        // Lane l's products are issued before lane l - 1's results are stored and scaled (two
        // sets of tiles: A 0 / 7, results 3-4 / 5-6), so the tile unit works while the vector
        // units scale; the float order per lane is unchanged.
        auto issue = [&](auto odd, int l) {
          CompilerBarrier();
          if constexpr (decltype(odd)::value) {
            _tile_loadd(7, xl + l * 512, 32);
            _tile_loadd(1, dig + (2 * l) * 512, 64);
            _tile_loadd(2, dig + (2 * l + 1) * 512, 64);
            _tile_zero(5);
            _tile_zero(6);
            _tile_dpbsud(5, 7, 1);
            _tile_dpbssd(6, 7, 2);
          } else {
            _tile_loadd(0, xl + l * 512, 32);
            _tile_loadd(1, dig + (2 * l) * 512, 64);
            _tile_loadd(2, dig + (2 * l + 1) * 512, 64);
            _tile_zero(3);
            _tile_zero(4);
            _tile_dpbsud(3, 0, 1);
            _tile_dpbssd(4, 0, 2);
          }
        };
        auto drain = [&](auto odd, int l) {
          if constexpr (decltype(odd)::value) {
            _tile_stored(5, clo, 64);
            _tile_stored(6, chi, 64);
          } else {
            _tile_stored(3, clo, 64);
            _tile_stored(4, chi, 64);
          }
          CompilerBarrier();
          for (int j = 0; j < m; ++j) {
            __m512i lane = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(chi + 16 * j), 8), _mm512_load_si512(clo + 16 * j));
            if constexpr (kQ6) {
              int32_t pair;
              std::memcpy(&pair, x.Row(tt * 16 + j).bsum + b * 16 + 2 * l, 4);
              lane = _mm512_add_epi32(lane, _mm512_dpwssd_epi32(_mm512_setzero_si512(), s_off[l], _mm512_set1_epi32(pair)));
            }
            _mm512_store_ps(A(j * 12 + l),
                            _mm512_fmadd_ps(_mm512_load_ps(dxd[j]), _mm512_cvtepi32_ps(lane), _mm512_load_ps(A(j * 12 + l))));
          }
        };
        using Even = std::integral_constant<bool, false>;
        using Odd = std::integral_constant<bool, true>;
        issue(Even{}, 0);
        for (int l = 1; l < 8; l += 2) {
          issue(Odd{}, l);
          drain(Even{}, l - 1);
          if (l + 1 < 8) issue(Even{}, l + 1);
          drain(Odd{}, l);
        }
        if constexpr (!kQ6) {
          const __m512 dmv = Scales(blk + 32);
          for (int p = 0; p < 4; ++p) {
            const __m512i mp = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 192 + 32 * p)));
            for (int j = 0; j < m; ++j) {
              const int64_t t = tt * 16 + j;
              int32_t pair;
              std::memcpy(&pair, bs32.data() + (t * nsb + b) * 8 + 2 * p, 4);
              const __m512i pr = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mp, _mm512_set1_epi32(pair));
              const __m512 ndxm = _mm512_mul_ps(_mm512_set1_ps(-x.Row(t).d[b]), dmv);
              _mm512_store_ps(A(j * 12 + 8 + p),
                              _mm512_fmadd_ps(ndxm, _mm512_cvtepi32_ps(pr), _mm512_load_ps(A(j * 12 + 8 + p))));
            }
          }
        }
      }
      for (int j = 0; j < m; ++j) {
        __m512 a[12];
        for (int i = 0; i < 12; ++i) a[i] = _mm512_load_ps(A(j * 12 + i));
        __m512 r = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[4], a[0]), _mm512_add_ps(a[6], a[2])),
                                 _mm512_add_ps(_mm512_add_ps(a[5], a[1]), _mm512_add_ps(a[7], a[3])));
        if constexpr (!kQ6) r = _mm512_add_ps(r, _mm512_add_ps(_mm512_add_ps(a[8], a[10]), _mm512_add_ps(a[9], a[11])));
        _mm512_mask_storeu_ps(Y + (tt * 16 + j) * y_stride + g * 16, mask, r);
      }
    }
  }
  _tile_release();
}

}  // namespace

void TableGroupMatMul(const LlmKernelTable& k, const AmxPackedWeight& w, const Q8Rows& x, int64_t T, float* Y,
                      int64_t y_stride, int64_t group_begin, int64_t group_end) {
  if (T <= 0 || group_begin >= group_end) return;
  const int64_t G = AmxPackedWeight::kGroupRows;
  auto gemm = w.type() == GgmlType::kQ4_0 ? k.gemm_g16_q4_0 : k.gemm_g16_q8_0;
  gemm(w.group(group_begin), group_end - group_begin, std::min(w.rows(), group_end * G) - group_begin * G, x, T,
       Y + group_begin * G, y_stride);
}

void TableGroupMatMul(const LlmKernelTable& k, const AmxPackedWeight& w, const Q8KRows& x, int64_t T, float* Y,
                      int64_t y_stride, int64_t group_begin, int64_t group_end) {
  if (T <= 0 || group_begin >= group_end) return;
  const int64_t G = AmxPackedWeight::kGroupRows;
  auto gemm = w.type() == GgmlType::kQ4_K ? k.gemm_g16_q4_k : k.gemm_g16_q6_k;
  gemm(w.group(group_begin), group_end - group_begin, std::min(w.rows(), group_end * G) - group_begin * G, x, T,
       Y + group_begin * G, y_stride);
}

void AmxMatMulK(const AmxPackedWeight& w, const Q8KRows& x, int64_t T, float* Y, int64_t y_stride, int64_t group_begin,
                int64_t group_end) {
  if (T <= 0 || group_begin >= group_end) return;
  if (T < kAmxKMinTokens) {
    return TableGroupMatMul(*Avx512VnniLlmKernels(), w, x, T, Y, y_stride, group_begin, group_end);
  }
  if (w.type() == GgmlType::kQ6_K) {
    RunK<true>(w, x, T, Y, y_stride, group_begin, group_end);
  } else {
    RunK<false>(w, x, T, Y, y_stride, group_begin, group_end);
  }
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
