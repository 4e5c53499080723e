// The repacking of Q8_0 / Q4_0 weights into 16-row tile groups
// (layout: amx_matmul.h).
#include <cstring>

#include "llm/amx_matmul.h"
#include "llm/weight_matrix.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace inferloop::llm {

Result<std::unique_ptr<AmxPackedWeight>> AmxPackedWeight::Pack(const WeightMatrix& w) {
  if ((w.type != GgmlType::kQ8_0 && w.type != GgmlType::kQ4_0) || w.cols % 32 != 0 || w.rows <= 0) {
    return Status::InvalidArgument("AMX packing takes Q8_0 or Q4_0 weights with a multiple of 32 columns ('" + w.name +
                                   "' is " + GgmlTypeName(w.type) + ")");
  }
  std::unique_ptr<AmxPackedWeight> p(new AmxPackedWeight());
  p->type_ = w.type;
  p->rows_ = w.rows;
  p->cols_ = w.cols;
  // Large buffers on 2 MiB boundaries in transparent huge pages where the kernel allows them
  // (fewer page faults while packing, fewer TLB misses while streaming the weights).
  constexpr uint64_t kHuge = 2u << 20;
  const uint64_t align = p->bytes() >= kHuge ? kHuge : 64;
  const uint64_t bytes = (p->bytes() + align - 1) / align * align;
  p->data_.reset(static_cast<uint8_t*>(std::aligned_alloc(align, bytes)));
  if (p->data_ == nullptr) return Status::ResourceExhausted("out of memory repacking '" + w.name + "' for AMX");
#if defined(__linux__)
  if (align == kHuge) ::madvise(p->data_.get(), bytes, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
  // Rows past the end of the last group are zero (scale 0).
  const uint64_t full = static_cast<uint64_t>(w.rows / kGroupRows * p->blocks() * p->block_bytes());
  std::memset(p->data_.get() + full, 0, bytes - full);
  const bool q8 = w.type == GgmlType::kQ8_0;
  const int src_block = q8 ? 34 : 18;
  const int k4_rows = q8 ? 8 : 4;  // 4-byte groups per row and block in the packed values
  const int64_t nb = p->blocks(), bb = p->block_bytes();
  for (int64_t g = 0; g < p->groups(); ++g) {
    uint8_t* dst = p->data_.get() + g * nb * bb;
    for (int n = 0; n < kGroupRows; ++n) {
      const int64_t r = g * kGroupRows + n;
      if (r >= w.rows) break;
      const uint8_t* row = w.data.data() + r * w.row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* src = row + b * src_block;
        uint8_t* blk = dst + b * bb;
        std::memcpy(blk + n * 2, src, 2);  // fp16 scale
        // Q8_0: 32 int8 values; Q4_0: 16 bytes holding values i (low nibble) and i + 16 (high).
        for (int k4 = 0; k4 < k4_rows; ++k4) std::memcpy(blk + 32 + k4 * 64 + n * 4, src + 2 + k4 * 4, 4);
      }
    }
  }
  return p;
}

}  // namespace inferloop::llm
