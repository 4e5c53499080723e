// Scalar reference versions of the LLM dot kernels (any CPU).
#include <cmath>
#include <cstring>

#include "base/float_types.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return HalfToFloat(h);
}

float DotF32(const float* w, const float* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += w[i] * x[i];
  return s;
}

float DotF16(const uint16_t* w, const float* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += HalfToFloat(w[i]) * x[i];
  return s;
}

float DotQ8_0(const uint8_t* w, const Q8Row& x, int64_t n) {
  float s = 0;
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + b * 34;
    const int8_t* xq = x.q + b * 32;
    int32_t acc = 0;
    for (int i = 0; i < 32; ++i) acc += static_cast<int8_t>(blk[2 + i]) * xq[i];
    s += Half(blk) * x.d[b] * static_cast<float>(acc);
  }
  return s;
}

float DotQ4_0(const uint8_t* w, const Q8Row& x, int64_t n) {
  float s = 0;
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + b * 18;
    const int8_t* xq = x.q + b * 32;
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) {
      acc += ((blk[2 + j] & 0x0F) - 8) * xq[j];
      acc += ((blk[2 + j] >> 4) - 8) * xq[j + 16];
    }
    s += Half(blk) * x.d[b] * static_cast<float>(acc);
  }
  return s;
}

void QuantizeQ8(const float* x, int64_t n, int8_t* q, float* d, float* sum) {
  for (int64_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[b * 32 + i]));
    const float db = amax / 127.0f;
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;  // as llama.cpp's quantize_row_q8_0
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) {
      const int v = static_cast<int>(std::nearbyint(x[b * 32 + i] * inv));
      q[b * 32 + i] = static_cast<int8_t>(v);
      s += v;
    }
    // The scale is kept at half precision, as llama.cpp's Q8_0 activation blocks keep it (the
    // values are quantized with the full-precision scale, as there).
    d[b] = HalfToFloat(FloatToHalf(db));
    sum[b] = d[b] * static_cast<float>(s);
  }
}

void AxpyF16(float a, const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * HalfToFloat(x[i]);
}

void AxpyQ8_0(float a, const uint8_t* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = x + b * 34;
    const float d = Half(blk);
    for (int i = 0; i < 32; ++i) {
      const float v = d * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
      y[b * 32 + i] = std::fma(v, a, y[b * 32 + i]);
    }
  }
}

void ToF16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = FloatToHalf(x[i]);
}

const LlmKernelTable kTable = {"scalar", DotF32,  DotF16,  DotQ8_0, DotQ4_0, QuantizeQ8,
                               AxpyF16,  ToF16,   nullptr, nullptr, AxpyQ8_0};

}  // namespace

const LlmKernelTable* ScalarLlmKernels() { return &kTable; }

}  // namespace inferloop::llm
