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

int64_t CorrectionSlice(int64_t columns, int threads) {
  const int64_t slices = std::max<int64_t>({int64_t{1}, threads, (columns + 255) / 256});
  return std::max<int64_t>(16, ((columns + slices - 1) / slices + 15) / 16 * 16);
}

namespace {

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

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
