// small_conv.h: weight packing and row padding (plain C++), and the dispatch of the rows to the
// ActiveIsa() instantiation of small_conv_impl.h (isa_dispatch.h).
#include "compute/simd/small_conv.h"

#include <cstring>

#include "compute/simd/isa_dispatch.h"

namespace inferloop {
namespace simd {

// small_conv_impl.h, instantiated in small_conv_{scalar,avx2,avx512}.cc.
namespace small_conv_impl {
template <Isa kIsa>
void RowsFor(const SmallConvGeom& g, const float* padded, const float* packed, const float* z, const SmallConvEpilogue& e,
             float* y, int64_t begin, int64_t end);
template <Isa kIsa>
void UpRowsFor(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e, float* y,
               int64_t begin, int64_t end);
}  // namespace small_conv_impl

namespace {
int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
}  // namespace

bool SmallConvSupported(const SmallConvGeom& g) {
  const int64_t sizes[] = {g.C, g.M, g.D, g.H, g.W, g.KD, g.KH, g.KW, g.Do, g.Ho, g.Wo};
  for (int64_t s : sizes)
    if (s <= 0) return false;
  // Depth and height taps outside the input are skipped (an output row whose window lies wholly
  // in the padding gets the bias alone); the width padding is read from the padded rows.
  return g.pd >= 0 && g.ph >= 0 && g.pw >= 0 && g.pw <= kSmallConvLead;
}

bool SmallConvNeedsPadding(const SmallConvGeom& g) {
  return !(g.KD == 1 && g.KH == 1 && g.KW == 1 && g.pd == 0 && g.ph == 0 && g.pw == 0 && g.Do == g.D && g.Ho == g.H &&
           g.Wo == g.W);
}

int64_t SmallConvPackedSize(const SmallConvGeom& g) {
  return RoundUp(g.M, kSmallConvOutBlock) * g.C * g.KD * g.KH * g.KW;
}

void PackSmallConvWeights(const SmallConvGeom& g, const float* w, float* packed) {
  const int64_t taps = g.KD * g.KH * g.KW;
  const int64_t blocks = RoundUp(g.M, kSmallConvOutBlock) / kSmallConvOutBlock;
  for (int64_t mb = 0; mb < blocks; ++mb)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t t = 0; t < taps; ++t)
        for (int j = 0; j < kSmallConvOutBlock; ++j) {
          const int64_t m = mb * kSmallConvOutBlock + j;
          packed[((mb * g.C + c) * taps + t) * kSmallConvOutBlock + j] = m < g.M ? w[(m * g.C + c) * taps + t] : 0.f;
        }
}

int64_t SmallConvRowStride(const SmallConvGeom& g) {
  // Loads reach column kSmallConvLead - pw + (vectors * width - 1) + KW - 1; vectors * width is
  // at most Wo rounded up to 16 for every instruction set.
  return RoundUp(kSmallConvLead + RoundUp(g.Wo, 16) + g.KW, 16);
}

int64_t SmallConvPaddedSize(const SmallConvGeom& g) { return g.C * g.D * g.H * SmallConvRowStride(g); }

void PadSmallConvRows(const SmallConvGeom& g, const float* x, float* padded, int64_t begin, int64_t end) {
  const int64_t stride = SmallConvRowStride(g);
  const size_t tail = static_cast<size_t>(stride - kSmallConvLead - g.W);
  for (int64_t r = begin; r < end; ++r) {
    float* row = padded + r * stride;
    std::memset(row, 0, kSmallConvLead * sizeof(float));
    std::memcpy(row + kSmallConvLead, x + r * g.W, static_cast<size_t>(g.W) * sizeof(float));
    std::memset(row + kSmallConvLead + g.W, 0, tail * sizeof(float));
  }
}

void SmallConvRows(const SmallConvGeom& g, const float* padded, const float* packed, const float* z,
                   const SmallConvEpilogue& e, float* y, int64_t begin, int64_t end) {
  CallForActiveIsa(
      [&](auto isa) { small_conv_impl::RowsFor<decltype(isa)::value>(g, padded, packed, z, e, y, begin, end); });
}

bool SmallUpConvSupported(const SmallConvGeom& g) {
  const int64_t sizes[] = {g.C, g.M, g.D, g.H, g.W, g.KD, g.KH, g.KW};
  for (int64_t s : sizes)
    if (s <= 0) return false;
  if (g.KW != 1 && g.KW != 2 && g.KW != 4 && g.KW != 8) return false;  // phases repeat within 8 and 16 lanes
  if (g.pd != 0 || g.ph != 0 || g.pw != 0 || g.Do != g.D * g.KD || g.Ho != g.H * g.KH || g.Wo != g.W * g.KW) return false;
  return g.C * RoundUp(g.Wo, 16) <= kSmallUpConvMaxRow;
}

int64_t SmallUpConvPackedSize(const SmallConvGeom& g) {
  return g.KD * g.KH * RoundUp(g.M, kSmallConvOutBlock) * g.C * 16;
}

void PackSmallUpConvWeights(const SmallConvGeom& g, const float* w, float* packed) {
  const int64_t blocks = RoundUp(g.M, kSmallConvOutBlock) / kSmallConvOutBlock;
  for (int64_t a = 0; a < g.KD; ++a)
    for (int64_t b = 0; b < g.KH; ++b)
      for (int64_t mb = 0; mb < blocks; ++mb)
        for (int64_t c = 0; c < g.C; ++c)
          for (int j = 0; j < kSmallConvOutBlock; ++j) {
            const int64_t m = mb * kSmallConvOutBlock + j;
            float* out = packed + ((((a * g.KH + b) * blocks + mb) * g.C + c) * kSmallConvOutBlock + j) * 16;
            for (int l = 0; l < 16; ++l)
              out[l] = m < g.M ? w[(((c * g.M + m) * g.KD + a) * g.KH + b) * g.KW + l % g.KW] : 0.f;
          }
}

void SmallUpConvRows(const SmallConvGeom& g, const float* x, const float* packed, const SmallConvEpilogue& e, float* y,
                     int64_t begin, int64_t end) {
  CallForActiveIsa([&](auto isa) { small_conv_impl::UpRowsFor<decltype(isa)::value>(g, x, packed, e, y, begin, end); });
}

}  // namespace simd
}  // namespace inferloop
