#include "llm/ggml_types.h"

#include <cstring>

#include "base/float_types.h"
#include "base/status_macros.h"

namespace inferloop::llm {
namespace {

struct Entry {
  uint32_t id;
  GgmlTypeTraits traits;
};

constexpr Entry kTypes[] = {
    {0, {"F32", 1, 4, true}},        {1, {"F16", 1, 2, true}},         {2, {"Q4_0", 32, 18, true}},
    {3, {"Q4_1", 32, 20, false}},    {6, {"Q5_0", 32, 22, false}},     {7, {"Q5_1", 32, 24, false}},
    {8, {"Q8_0", 32, 34, true}},     {9, {"Q8_1", 32, 40, false}},     {10, {"Q2_K", 256, 84, false}},
    {11, {"Q3_K", 256, 110, false}}, {12, {"Q4_K", 256, 144, true}},   {13, {"Q5_K", 256, 176, false}},
    {14, {"Q6_K", 256, 210, true}},  {15, {"Q8_K", 256, 292, false}},  {16, {"IQ2_XXS", 256, 66, false}},
    {17, {"IQ2_XS", 256, 74, false}}, {18, {"IQ3_XXS", 256, 98, false}}, {19, {"IQ1_S", 256, 50, false}},
    {20, {"IQ4_NL", 32, 18, false}}, {21, {"IQ3_S", 256, 110, false}}, {22, {"IQ2_S", 256, 82, false}},
    {23, {"IQ4_XS", 256, 136, false}}, {24, {"I8", 1, 1, false}},      {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},      {27, {"I64", 1, 8, false}},       {28, {"F64", 1, 8, false}},
    {29, {"IQ1_M", 256, 56, false}}, {30, {"BF16", 1, 2, true}},       {34, {"TQ1_0", 256, 54, false}},
    {35, {"TQ2_0", 256, 66, false}}, {39, {"MXFP4", 32, 17, false}},   {40, {"NVFP4", 64, 36, false}},
    {41, {"Q1_0", 128, 18, false}},
};

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
float LoadHalf(const uint8_t* p) { return HalfToFloat(LoadU16(p)); }

// Q8_0: block of 32 = f16 scale d, then 32 int8 q; x = d * q.
void DequantizeQ8_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
}

// Q4_0: block of 32 = f16 scale d, then 16 bytes; byte j holds element j in its low nibble and
// element j+16 in its high nibble, both offset by 8: x = d * (nibble - 8).
void DequantizeQ4_0(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// Q4_K's 12 packed bytes hold eight 6-bit scales and eight 6-bit mins, one pair per sub-block of
// 32: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 take
// their low 4 bits from the nibbles of bytes 8-11 and their high 2 bits from the top bits of
// bytes 0-3 (scales) and 4-7 (mins).
void Q4KScaleMin(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K: super-block of 256 = f16 d, f16 dmin, 12 bytes scales/mins, 128 bytes of nibbles. Each
// 32 bytes of nibbles cover 64 elements: low nibbles are sub-block 2i, high nibbles 2i+1;
// x = d * scale * q - dmin * min.
void DequantizeQ4_K(const uint8_t* b, float* y) {
  const float d = LoadHalf(b);
  const float dmin = LoadHalf(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int chunk = 0; chunk < 4; ++chunk) {
    int sc0, m0, sc1, m1;
    Q4KScaleMin(scales, 2 * chunk, &sc0, &m0);
    Q4KScaleMin(scales, 2 * chunk + 1, &sc1, &m1);
    const float d0 = d * sc0, dm0 = dmin * m0, d1 = d * sc1, dm1 = dmin * m1;
    const uint8_t* q = qs + 32 * chunk;
    float* out = y + 64 * chunk;
    for (int l = 0; l < 32; ++l) {
      out[l] = d0 * static_cast<float>(q[l] & 0x0F) - dm0;
      out[l + 32] = d1 * static_cast<float>(q[l] >> 4) - dm1;
    }
  }
}

// Q6_K: super-block of 256 = 128 bytes low 4 bits (ql), 64 bytes high 2 bits (qh), 16 int8
// scales (one per 16 elements), f16 d. Per half of 128 elements: element l (0..31) of each of the
// four quarters takes its low bits from ql[l] / ql[l+32] (low nibble: quarters 0,1; high nibble:
// quarters 2,3) and its high bits from qh[l] bits 0-1, 2-3, 4-5, 6-7; x = d * scale * (q - 32).
void DequantizeQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = LoadHalf(b + 208);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

const GgmlTypeTraits* FindGgmlTypeTraits(uint32_t id) {
  for (const Entry& e : kTypes)
    if (e.id == id) return &e.traits;
  return nullptr;
}

std::string GgmlTypeName(uint32_t id) {
  const GgmlTypeTraits* t = FindGgmlTypeTraits(id);
  return t ? std::string(t->name) : "type " + std::to_string(id);
}

Result<uint64_t> GgmlRowBytes(uint32_t id, uint64_t elements) {
  const GgmlTypeTraits* t = FindGgmlTypeTraits(id);
  if (!t) return Status::InvalidArgument("unknown ggml tensor type id " + std::to_string(id));
  if (elements % t->block_elements != 0)
    return Status::InvalidArgument(std::string(t->name) + " row of " + std::to_string(elements) +
                                   " elements is not a multiple of the block size " +
                                   std::to_string(t->block_elements));
  const uint64_t blocks = elements / t->block_elements;
  if (blocks > UINT64_MAX / t->block_bytes)
    return Status::InvalidArgument(std::string(t->name) + " row of " + std::to_string(elements) +
                                   " elements overflows a 64-bit byte size");
  return blocks * t->block_bytes;
}

Status DequantizeRow(GgmlType type, std::span<const uint8_t> src, std::span<float> dst) {
  const uint32_t id = static_cast<uint32_t>(type);
  const GgmlTypeTraits* t = FindGgmlTypeTraits(id);
  if (!t || !t->dequantize_supported)
    return Status::Unimplemented("dequantizing ggml tensor type " + GgmlTypeName(id) +
                                 " is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");
  IL_ASSIGN_OR_RETURN(const uint64_t bytes, GgmlRowBytes(id, dst.size()));
  if (src.size() != bytes)
    return Status::InvalidArgument(std::string(t->name) + " row of " + std::to_string(dst.size()) +
                                   " elements needs " + std::to_string(bytes) + " bytes, got " +
                                   std::to_string(src.size()));
  const uint8_t* p = src.data();
  float* y = dst.data();
  const size_t n = dst.size();
  switch (type) {
    case GgmlType::kF32:
      if (n) std::memcpy(y, p, n * 4);
      break;
    case GgmlType::kF16:
      for (size_t i = 0; i < n; ++i) y[i] = HalfToFloat(LoadU16(p + 2 * i));
      break;
    case GgmlType::kBF16:
      for (size_t i = 0; i < n; ++i) y[i] = BFloat16ToFloat(LoadU16(p + 2 * i));
      break;
    case GgmlType::kQ8_0:
      for (size_t b = 0; b < n / 32; ++b) DequantizeQ8_0(p + 34 * b, y + 32 * b);
      break;
    case GgmlType::kQ4_0:
      for (size_t b = 0; b < n / 32; ++b) DequantizeQ4_0(p + 18 * b, y + 32 * b);
      break;
    case GgmlType::kQ4_K:
      for (size_t b = 0; b < n / 256; ++b) DequantizeQ4_K(p + 144 * b, y + 256 * b);
      break;
    case GgmlType::kQ6_K:
      for (size_t b = 0; b < n / 256; ++b) DequantizeQ6_K(p + 210 * b, y + 256 * b);
      break;
    default:
      return Status::Internal("DequantizeRow: " + GgmlTypeName(id) + " marked supported but not handled");
  }
  return Status::Ok();
}

}  // namespace inferloop::llm
