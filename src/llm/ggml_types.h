// The ggml tensor element types a GGUF file can hold: ids, block layouts, row sizes, and scalar
// reference dequantization for the supported subset (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K).
//
// Quantized types store elements in fixed-size blocks along the innermost dimension (a row is
// ne[0] elements and must be a whole number of blocks). Every known type has a size entry, so a
// file holding, say, Q5_K tensors still parses and its byte sizes are checked; only
// dequantization of a type outside the supported subset returns Unimplemented naming the type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "inferloop/status.h"

namespace inferloop::llm {

// Numeric ids as written in GGUF tensor infos (ggml's enum ggml_type).
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22,
  kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30,
  kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39, kNVFP4 = 40, kQ1_0 = 41,
};

struct GgmlTypeTraits {
  const char* name;          // "Q4_K"
  uint32_t block_elements;   // elements per block (1 for plain types)
  uint32_t block_bytes;      // bytes per block
  bool dequantize_supported; // DequantizeRow handles it
};

// Traits of a known type id, or nullptr for an id this build does not know.
const GgmlTypeTraits* FindGgmlTypeTraits(uint32_t id);
// "Q4_K", or "type 77" for an unknown id.
std::string GgmlTypeName(uint32_t id);
inline std::string GgmlTypeName(GgmlType t) { return GgmlTypeName(static_cast<uint32_t>(t)); }

// Bytes of a row of `elements` elements of type `id`. InvalidArgument when the type is unknown
// or `elements` is not a multiple of the block size; never overflows (errors instead).
Result<uint64_t> GgmlRowBytes(uint32_t id, uint64_t elements);

// Dequantizes `dst.size()` elements (a whole number of blocks) from `src`, which must hold
// exactly GgmlRowBytes(type, dst.size()) bytes. Scalar reference code (correctness first).
// Unimplemented naming the type for types outside the supported subset.
Status DequantizeRow(GgmlType type, std::span<const uint8_t> src, std::span<float> dst);

}  // namespace inferloop::llm
