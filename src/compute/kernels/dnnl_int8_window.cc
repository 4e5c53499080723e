// The window split of QConv / QMatMul's u8 inputs: exact int8 products without VNNI
// (dnnl_int8_common.h).
#include <algorithm>
#include <cstring>

#include "compute/kernels/dnnl_int8_common.h"
#include "compute/simd/int8_loops.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

bool UseWindowSplit(DataType x_type, const Tensor& w) {
  return x_type == DataType::kUInt8 && w.dtype() == DataType::kInt8 && !Int8ProductsExact(w);
}

int32_t WindowShift(int32_t zp) { return std::clamp(zp - 64, 0, 127); }

namespace {

// The width of the correction's column slices: at most 256, at least 16, at least `threads` slices.
int64_t CorrectionSlice(int64_t columns, int threads) {
  const int64_t slices = std::max<int64_t>({int64_t{1}, threads, (columns + 255) / 256});
  return std::max<int64_t>(16, ((columns + slices - 1) / slices + 15) / 16 * 16);
}

// The outliers of x[0, n) (indices from `base`), appended to *out: blocks of 4 KiB are clamped
// (vectorized, counting the values outside); a block with some is scanned 8 bytes at a time,
// where a value inside the window is x = win + shift (win + shift <= 255: no carry between bytes).
void SplitRange(const uint8_t* x, uint8_t* y, int64_t n, int32_t shift, int64_t base, std::vector<WindowOutlier>* out) {
  constexpr int64_t kBlock = 4096;
  const uint64_t shifts = 0x0101010101010101ull * static_cast<uint64_t>(shift);
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    if (simd::ClampToWindow(x + b, y + b, len, shift) == 0) continue;
    int64_t i = b;
    for (; i + 8 <= b + len; i += 8) {
      uint64_t xs, ys;
      std::memcpy(&xs, x + i, 8);
      std::memcpy(&ys, y + i, 8);
      if (xs == ys + shifts) continue;
      for (int64_t j = i; j < i + 8; ++j) {
        const int32_t r = static_cast<int32_t>(x[j]) - shift - static_cast<int32_t>(y[j]);
        if (r != 0) out->push_back({base + j, r});
      }
    }
    for (; i < b + len; ++i) {
      const int32_t r = static_cast<int32_t>(x[i]) - shift - static_cast<int32_t>(y[i]);
      if (r != 0) out->push_back({base + i, r});
    }
  }
}

}  // namespace

void SplitWindow(const uint8_t* x, uint8_t* y, int64_t n, int32_t shift, const ThreadScope& threads,
                 std::vector<WindowOutlier>* outliers) {
  outliers->clear();
  const int64_t parts = n >= (int64_t{1} << 16) ? threads.threads() : 1;
  if (parts <= 1) return SplitRange(x, y, n, shift, 0, outliers);
  std::vector<std::vector<WindowOutlier>> found(static_cast<size_t>(parts));
  const int64_t per = (n + parts - 1) / parts;
  threads.ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t lo = std::min(n, t * per), hi = std::min(n, lo + per);
      SplitRange(x + lo, y + lo, hi - lo, shift, lo, &found[static_cast<size_t>(t)]);
    }
  });
  for (const auto& f : found) outliers->insert(outliers->end(), f.begin(), f.end());
}

const uint8_t* WindowOf(const Tensor& x, int32_t shift, const ThreadScope& threads, std::vector<WindowOutlier>* outliers) {
  auto* win = static_cast<uint8_t*>(ThreadScratch(1, static_cast<size_t>(x.size())));
  if (win != nullptr) SplitWindow(x.data<uint8_t>(), win, x.size(), shift, threads, outliers);
  return win;
}

float* ZeroedCorrection(int64_t n, const ThreadScope& threads) {
  auto* c = static_cast<float*>(ThreadScratch(4, static_cast<size_t>(n) * sizeof(float)));
  if (c != nullptr) threads.ParallelFor(n, 1 << 16, [&](int64_t b, int64_t e) { std::fill(c + b, c + e, 0.f); });
  return c;
}

void AddCorrectionTerms(float* c, const int8_t* w, const float* scales, int64_t columns,
                        const std::vector<const std::vector<simd::ScaledS8Term>*>& lists, const ThreadScope& threads) {
  const int64_t slice = CorrectionSlice(columns, threads.threads());
  threads.ParallelFor((columns + slice - 1) / slice, 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      const int64_t j0 = s * slice, len = std::min(slice, columns - j0);
      for (const auto* terms : lists)
        if (!terms->empty())
          simd::AddScaledS8Batch(c + j0, w + j0, scales + j0, terms->data(), static_cast<int64_t>(terms->size()), len);
    }
  });
}

std::vector<float> PerColumnScales(const std::vector<float>& scales, int64_t columns) {
  if (scales.size() != 1) return scales;
  return std::vector<float>(static_cast<size_t>(columns), scales[0]);
}

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
