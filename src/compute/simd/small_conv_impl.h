// Internal to src/compute/simd: the loops of small_conv.h, written once against a vector type V
// (base/simd/vec_scalar.h, vec_avx2.h, vec_avx512.h) and instantiated by small_conv_scalar.cc,
// small_conv_avx2.cc and small_conv_avx512.cc with their instruction set's -m flags
// (IL_SMALL_CONV_INSTANTIATE, entered only through isa_dispatch.h's CallForActiveIsa). As in
// simd_impl.h, everything here is a template on V and nothing calls the standard library.
//
// One output row (batch item, output depth d, output row h) at a time, all of it: for a block of
// kOut output channels and kVecs vectors of output columns, kOut * kVecs accumulators stay in
// registers while every input channel and kernel tap streams by: per tap, kVecs loads of the
// padded input row (shifted by the tap's column) and kOut broadcast weights, kOut * kVecs
// multiply-adds. Input rows outside the volume (the depth / height padding) are skipped; the
// width padding is in the padded rows themselves (small_conv.h). A pointwise convolution reads
// X's rows directly, masking the loads past a row's end.
#pragma once

#include <cstdint>

#include "compute/simd/cpu_isa.h"
#include "compute/simd/simd_impl.h"
#include "compute/simd/small_conv.h"

namespace inferloop {
namespace simd {
namespace small_conv_impl {

template <class V>
inline typename V::R Activate(typename V::R v, const SmallConvEpilogue& e) {
  return e.has_act ? impl::UnaryOne<V>(e.act, e.act_args, v) : v;
}

// Every accumulator of output channel m = mb * 8 + j0 + j starts at bias[m] (0 without a bias or
// past M).
template <class V, int kOut, int kVecs>
inline void InitWithBias(const SmallConvGeom& g, const SmallConvEpilogue& e, int64_t mb, int j0,
                         typename V::R (&acc)[kOut][kVecs]) {
#pragma GCC unroll 16
  for (int j = 0; j < kOut; ++j) {
    const int64_t m = mb * kSmallConvOutBlock + j0 + j;
    const typename V::R b = V::Set(e.bias != nullptr && m < g.M ? e.bias[m] : 0.f);
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[j][v] = b;
  }
}

// Output channels [m0, m0 + kOut) (within packed block `mb`, starting at lane j0 of it) and
// output vectors [v0, v0 + kVecs) of output row (d, h) of one batch item. kMasked: a pointwise
// tile reaching past the row's end (its input loads masked; decided outside the loops, so that
// the accumulators and inputs of the common case stay in registers).
// `rows`: the padded rows (stride SmallConvRowStride, input column 0 at `lead` = kSmallConvLead)
// or, pointwise, X's own rows (stride W, lead 0), as Rows sets them once.
struct RowView {
  const float* rows;
  int64_t stride, lead;
};

template <class V, int kOut, int kVecs, bool kMasked, int kKW>
inline void Tile(const SmallConvGeom& g, const RowView& in, const float* packed, int64_t mb, int j0, int64_t d,
                 int64_t h, int64_t v0, const float* z, const SmallConvEpilogue& e, float* y) {
  using R = typename V::R;
  constexpr int W = V::kWidth;
  R acc[kOut][kVecs];
  InitWithBias<V, kOut, kVecs>(g, e, mb, j0, acc);
  const int64_t cols_left = g.Wo - v0 * W;  // input columns from this tile's first on (pointwise)
  const int64_t kd0 = g.pd - d > 0 ? g.pd - d : 0, kd1 = g.D + g.pd - d < g.KD ? g.D + g.pd - d : g.KD;
  const int64_t kh0 = g.ph - h > 0 ? g.ph - h : 0, kh1 = g.H + g.ph - h < g.KH ? g.H + g.ph - h : g.KH;
  const int64_t col0 = in.lead - g.pw + v0 * W;  // pointwise: pw = 0
  for (int64_t c = 0; c < g.C; ++c) {
    for (int64_t kd = kd0; kd < kd1; ++kd) {
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const float* row = in.rows + ((c * g.D + d + kd - g.pd) * g.H + (h + kh - g.ph)) * in.stride + col0;
        const float* wt = packed + (((mb * g.C + c) * g.KD + kd) * g.KH + kh) * g.KW * kSmallConvOutBlock + j0;
        // kKW > 0: the kernel width as a constant (3: the common case, unrolled); else g.KW.
        const int64_t kws = kKW > 0 ? kKW : g.KW;
#pragma GCC unroll 3
        for (int64_t kw = 0; kw < kws; ++kw, wt += kSmallConvOutBlock) {
          R x[kVecs];
#pragma GCC unroll 4
          for (int v = 0; v < kVecs; ++v) {
            if constexpr (kMasked) {
              const int64_t left = cols_left - v * W;
              x[v] = left >= W ? V::Load(row + v * W) : V::LoadTail(row + v * W, left > 0 ? left : 0, 0.f);
            } else {
              x[v] = V::Load(row + kw + v * W);
            }
          }
#pragma GCC unroll 16
          for (int j = 0; j < kOut; ++j) {
            const R w = V::Set(wt[j]);
#pragma GCC unroll 4
            for (int v = 0; v < kVecs; ++v) acc[j][v] = V::Fma(x[v], w, acc[j][v]);
          }
        }
      }
    }
  }
  const int64_t plane = g.Do * g.Ho * g.Wo;
  const int64_t base = (d * g.Ho + h) * g.Wo + v0 * W;
#pragma GCC unroll 16
  for (int j = 0; j < kOut; ++j) {
    const int64_t m = mb * kSmallConvOutBlock + j0 + j;
    if (m >= g.M) break;
    float* out = y + m * plane + base;
    const float* res = z != nullptr ? z + m * plane + base : nullptr;
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      const int64_t left = g.Wo - v0 * W - v * W;  // columns left in the row from this vector on
      R r = acc[j][v];
      if (left >= W) {
        if (res != nullptr) r = V::Add(r, V::Load(res + v * W));
        V::Store(out + v * W, Activate<V>(r, e));
      } else {
        if (res != nullptr) r = V::Add(r, V::LoadTail(res + v * W, left, 0.f));
        V::StoreTail(out + v * W, Activate<V>(r, e), left);
      }
    }
  }
}

// Tile with the kernel width fixed at 3 when it is 3.
template <class V, int kOut, int kVecs, bool kMasked>
inline void TileKW(const SmallConvGeom& g, const RowView& in, const float* packed, int64_t mb, int j0, int64_t d,
                   int64_t h, int64_t v0, const float* z, const SmallConvEpilogue& e, float* y) {
  if (g.KW == 3) Tile<V, kOut, kVecs, kMasked, 3>(g, in, packed, mb, j0, d, h, v0, z, e, y);
  else Tile<V, kOut, kVecs, kMasked, 0>(g, in, packed, mb, j0, d, h, v0, z, e, y);
}

// Output rows [row_begin, row_end) (row = d * Ho + h) of one batch item. kOut output channels
// per tile (a divisor of kSmallConvOutBlock) and up to kVecs vectors of columns.
template <class V, int kOut, int kVecs>
void Rows(const SmallConvGeom& g, const float* padded, const float* packed, const float* z, const SmallConvEpilogue& e,
          float* y, int64_t row_begin, int64_t row_end) {
  constexpr int W = V::kWidth;
  const int64_t vecs = (g.Wo + W - 1) / W;
  const int64_t blocks = (g.M + kSmallConvOutBlock - 1) / kSmallConvOutBlock;
  const bool pointwise = !SmallConvNeedsPadding(g);
  const RowView in{padded, pointwise ? g.W : SmallConvRowStride(g), pointwise ? 0 : kSmallConvLead};
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t d = row / g.Ho, h = row % g.Ho;
    for (int64_t mb = 0; mb < blocks; ++mb) {
      for (int j0 = 0; j0 < kSmallConvOutBlock; j0 += kOut) {
        if (mb * kSmallConvOutBlock + j0 >= g.M) break;
        int64_t v = 0;
        for (; v + kVecs <= vecs; v += kVecs) {
          if (pointwise && (v + kVecs) * W > g.Wo) TileKW<V, kOut, kVecs, true>(g, in, packed, mb, j0, d, h, v, z, e, y);
          else TileKW<V, kOut, kVecs, false>(g, in, packed, mb, j0, d, h, v, z, e, y);
        }
        for (; v < vecs; ++v) {
          if (pointwise && (v + 1) * W > g.Wo) TileKW<V, kOut, 1, true>(g, in, packed, mb, j0, d, h, v, z, e, y);
          else TileKW<V, kOut, 1, false>(g, in, packed, mb, j0, d, h, v, z, e, y);
        }
      }
    }
  }
}

// SmallUpConvRows: output channels [m0, m0 + kOut) of block mb and vectors [v0, v0 + kVecs) of
// one output row, from the widened input row `xu` ([C][RoundUp(Wo, 16)]) and the packed weights
// of this row's (a, b) phase ([blocks][C][8][16], each 16 the KW column phases repeated).
template <class V, int kOut, int kVecs>
inline void UpTile(const SmallConvGeom& g, const float* xu, int64_t xu_stride, const float* packed_ab, int64_t mb, int j0,
                   int64_t v0, const SmallConvEpilogue& e, float* yrow) {
  using R = typename V::R;
  constexpr int W = V::kWidth;
  R acc[kOut][kVecs];
  InitWithBias<V, kOut, kVecs>(g, e, mb, j0, acc);
  for (int64_t c = 0; c < g.C; ++c) {
    R x[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) x[v] = V::Load(xu + c * xu_stride + (v0 + v) * W);
    const float* wt = packed_ab + ((mb * g.C + c) * kSmallConvOutBlock + j0) * 16;
#pragma GCC unroll 16
    for (int j = 0; j < kOut; ++j) {
      if constexpr (W >= 8) {  // every vector starts at phase 0 (KW divides 8)
        const R w = V::Load(wt + j * 16);
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) acc[j][v] = V::Fma(x[v], w, acc[j][v]);
      } else {  // narrower vectors (scalar): the phase of each vector's first column
        for (int v = 0; v < kVecs; ++v) acc[j][v] = V::Fma(x[v], V::Load(wt + j * 16 + ((v0 + v) * W) % 16), acc[j][v]);
      }
    }
  }
  const int64_t plane = g.Do * g.Ho * g.Wo;
#pragma GCC unroll 16
  for (int j = 0; j < kOut; ++j) {
    const int64_t m = mb * kSmallConvOutBlock + j0 + j;
    if (m >= g.M) break;
    float* out = yrow + m * plane + v0 * W;
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      const int64_t left = g.Wo - v0 * W - v * W;
      if (left >= W) V::Store(out + v * W, acc[j][v]);
      else if (left > 0) V::StoreTail(out + v * W, acc[j][v], left);
    }
  }
}

template <class V, int kOut, int kVecs>
void UpRows(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e, float* y,
            int64_t row_begin, int64_t row_end) {
  constexpr int W = V::kWidth;
  const int64_t xu_stride = (g.Wo + 15) / 16 * 16;
  alignas(64) float xu[kSmallUpConvMaxRow];
  const int64_t vecs = (g.Wo + W - 1) / W;
  const int64_t blocks = (g.M + kSmallConvOutBlock - 1) / kSmallConvOutBlock;
  const int64_t phase_floats = blocks * g.C * kSmallConvOutBlock * 16;
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t d = row / g.H, h = row % g.H;
    for (int64_t c = 0; c < g.C; ++c) {  // widen: column w * KW + k takes input column w
      const float* in = x + (c * g.D + d) * g.H * g.W + h * g.W;
      float* out = xu + c * xu_stride;
      for (int64_t iw = 0; iw < g.W; ++iw)
        for (int64_t k = 0; k < g.KW; ++k) out[iw * g.KW + k] = in[iw];
      for (int64_t col = g.Wo; col < xu_stride; ++col) out[col] = 0.f;
    }
    for (int64_t a = 0; a < g.KD; ++a)
      for (int64_t b = 0; b < g.KH; ++b) {
        const float* packed_ab = packed + (a * g.KH + b) * phase_floats;
        float* yrow = y + ((d * g.KD + a) * g.Ho + (h * g.KH + b)) * g.Wo;
        for (int64_t mb = 0; mb < blocks; ++mb)
          for (int j0 = 0; j0 < kSmallConvOutBlock; j0 += kOut) {
            if (mb * kSmallConvOutBlock + j0 >= g.M) break;
            int64_t v = 0;
            for (; v + kVecs <= vecs; v += kVecs) UpTile<V, kOut, kVecs>(g, xu, xu_stride, packed_ab, mb, j0, v, e, yrow);
            for (; v < vecs; ++v) UpTile<V, kOut, 1>(g, xu, xu_stride, packed_ab, mb, j0, v, e, yrow);
          }
      }
  }
}

// What each instruction set's file tells the entry points below: its vector type and tile
// (kOut output channels x kVecs vectors of columns). Specialized only in that file.
template <Isa kIsa>
struct Tiles;

// The entry points small_conv.cc calls through CallForActiveIsa (small_conv.h's SmallConvRows
// and SmallUpConvRows), explicitly instantiated by IL_SMALL_CONV_INSTANTIATE. One output channel
// (a segmentation head) takes 1 x 4 tiles: no empty lanes of weights.
template <Isa kIsa>
void RowsFor(const SmallConvGeom& g, const float* padded, const float* packed, const float* z, const SmallConvEpilogue& e,
             float* y, int64_t begin, int64_t end) {
  using T = Tiles<kIsa>;
  if (g.M == 1) return Rows<typename T::Vec, 1, 4>(g, padded, packed, z, e, y, begin, end);
  Rows<typename T::Vec, T::kOut, T::kVecs>(g, padded, packed, z, e, y, begin, end);
}

template <Isa kIsa>
void UpRowsFor(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e, float* y,
               int64_t begin, int64_t end) {
  using T = Tiles<kIsa>;
  UpRows<typename T::Vec, T::kOut, T::kVecs>(g, x, packed, e, y, begin, end);
}

}  // namespace small_conv_impl
}  // namespace simd
}  // namespace inferloop

// In small_conv_<isa>.cc: that set's tiles and the instantiation of both entry points.
#define IL_SMALL_CONV_INSTANTIATE(ISA, VEC, OUT, VECS)                                                              \
  template <>                                                                                                    \
  struct inferloop::simd::small_conv_impl::Tiles<ISA> {                                                          \
    using Vec = VEC;                                                                                             \
    static constexpr int kOut = OUT, kVecs = VECS;                                                               \
  };                                                                                                             \
  template void inferloop::simd::small_conv_impl::RowsFor<ISA>(                                                  \
      const inferloop::simd::SmallConvGeom&, const float*, const float*, const float*,                           \
      const inferloop::simd::SmallConvEpilogue&, float*, int64_t, int64_t);                                      \
  template void inferloop::simd::small_conv_impl::UpRowsFor<ISA>(const inferloop::simd::SmallConvGeom&,         \
                                                                 const float*, const float*,                     \
                                                                 const inferloop::simd::SmallConvEpilogue&,      \
                                                                 float*, int64_t, int64_t);
