// The repacking of Q8_0 / Q4_0 weights into 16-row tile groups (layout: amx_matmul.h), and of
// Q4_K / Q6_K weights into 16-row groups of super-blocks (layout: llm_kernels.h gemm_g16_q4_k).
#include <cstring>
#include <string>

#include "llm/amx_matmul.h"
#include "llm/weight_matrix.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace inferloop::llm {
namespace {

// Row n's super-block `src` (144 bytes: fp16 d, fp16 dmin, 12 bytes of 6-bit scales and mins, 128
// bytes of nibbles) into group super-block `dst` (2368 bytes).
void PackQ4KBlock(const uint8_t* src, int n, uint8_t* dst) {
  std::memcpy(dst + 2 * n, src, 2);
  std::memcpy(dst + 32 + 2 * n, src + 2, 2);
  const uint8_t* q = src + 4;
  for (int j = 0; j < 8; ++j) {
    // ggml's get_scale_min_k4.
    const uint8_t sc = j < 4 ? q[j] & 63 : (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    const uint8_t mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    dst[64 + 16 * j + n] = sc;
    dst[192 + 32 * (j / 2) + 2 * n + j % 2] = mn;
  }
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 8; ++l) std::memcpy(dst + 320 + 64 * (4 * l + c) + 4 * n, src + 16 + 32 * c + 4 * l, 4);
  }
}

// Row n's Q6_K super-block `src` (210 bytes: 128 bytes of low 4 bits, 64 of top 2 bits, 16 int8
// scales, fp16 d) into group super-block `dst` (3360 bytes, zeroed).
void PackQ6KBlock(const uint8_t* src, int n, uint8_t* dst) {
  uint8_t q[256];  // the 6-bit values (0..63) in element order, as ggml's dequantize_row_q6_K
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = src + 64 * h;
    const uint8_t* qh = src + 128 + 32 * h;
    for (int l = 0; l < 32; ++l) {
      q[128 * h + l] = static_cast<uint8_t>((ql[l] & 0x0F) | ((qh[l] & 3) << 4));
      q[128 * h + l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
      q[128 * h + l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      q[128 * h + l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
  std::memcpy(dst + 2 * n, src + 208, 2);
  for (int k = 0; k < 8; ++k) std::memcpy(dst + 32 + 32 * k + 2 * n, src + 192 + 2 * k, 2);
  for (int l = 0; l < 8; ++l) {
    for (int e = 0; e < 4; ++e) {
      const int at = 4 * n + e;
      for (int j = 0; j < 4; ++j) {
        dst[288 + 384 * l + 128 + 64 * j + at] =
            static_cast<uint8_t>((q[32 * (2 * j) + 4 * l + e] & 0x0F) | ((q[32 * (2 * j + 1) + 4 * l + e] & 0x0F) << 4));
      }
      for (int j = 0; j < 2; ++j) {
        uint8_t bits = 0;
        for (int u = 0; u < 4; ++u) bits |= static_cast<uint8_t>((q[32 * (4 * j + u) + 4 * l + e] >> 4) << (2 * u));
        dst[288 + 384 * l + 64 * j + at] = bits;
      }
    }
  }
}

}  // namespace

Result<std::unique_ptr<AmxPackedWeight>> AmxPackedWeight::Pack(const WeightMatrix& w) {
  const bool k_quant = w.type == GgmlType::kQ4_K || w.type == GgmlType::kQ6_K;
  if ((w.type != GgmlType::kQ8_0 && w.type != GgmlType::kQ4_0 && !k_quant) || w.cols % (k_quant ? 256 : 32) != 0 ||
      w.rows <= 0) {
    return Status::InvalidArgument("16-row group packing takes Q8_0 or Q4_0 weights with a multiple of 32 columns, "
                                   "Q4_K or Q6_K with a multiple of 256 ('" + w.name + "' is " +
                                   GgmlTypeName(w.type) + " with " + std::to_string(w.cols) + " columns)");
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
  const int64_t nb = p->blocks(), bb = p->block_bytes();
  if (k_quant) {
    const int src_block = w.type == GgmlType::kQ4_K ? 144 : 210;
    for (int64_t g = 0; g < p->groups(); ++g) {
      uint8_t* dst = p->data_.get() + g * nb * bb;
      for (int n = 0; n < kGroupRows && g * kGroupRows + n < w.rows; ++n) {
        const uint8_t* row = w.data.data() + (g * kGroupRows + n) * w.row_bytes;
        for (int64_t b = 0; b < nb; ++b) {
          if (w.type == GgmlType::kQ4_K) {
            PackQ4KBlock(row + b * src_block, n, dst + b * bb);
          } else {
            PackQ6KBlock(row + b * src_block, n, dst + b * bb);
          }
        }
      }
    }
    return p;
  }
  const bool q8 = w.type == GgmlType::kQ8_0;
  const int src_block = q8 ? 34 : 18;
  const int k4_rows = q8 ? 8 : 4;  // 4-byte groups per row and block in the packed values
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
