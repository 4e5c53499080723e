// Scalar reference versions of the LLM dot kernels (any CPU).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/float_types.h"
#include "base/simd/vec_exp.h"
#include "base/simd/vec_scalar.h"
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

// A row of kBytes-byte blocks (half-float scale, then the values) times x: per block of 32,
// scale * d_x * BlockSum(values, activations), the integer dot of the block.
template <int kBytes, int32_t (*BlockSum)(const uint8_t*, const int8_t*)>
float DotBlocks(const uint8_t* w, const Q8Row& x, int64_t n) {
  float s = 0;
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + b * kBytes;
    s += Half(blk) * x.d[b] * static_cast<float>(BlockSum(blk + 2, x.q + b * 32));
  }
  return s;
}

int32_t SumQ8_0(const uint8_t* qs, const int8_t* xq) {
  int32_t acc = 0;
  for (int i = 0; i < 32; ++i) acc += static_cast<int8_t>(qs[i]) * xq[i];
  return acc;
}

// Low nibbles are elements 0-15, high ones 16-31, each stored as q + 8.
int32_t SumQ4_0(const uint8_t* qs, const int8_t* xq) {
  int32_t acc = 0;
  for (int j = 0; j < 16; ++j) {
    acc += ((qs[j] & 0x0F) - 8) * xq[j];
    acc += ((qs[j] >> 4) - 8) * xq[j + 16];
  }
  return acc;
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

// Q4_K's 12 packed bytes as eight 6-bit sub-block scales and eight 6-bit mins (ggml_types.cc
// documents the packing).
void Q4KScalesMins(const uint8_t* p, uint8_t* sc, uint8_t* mn) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = p[j] & 63;
    mn[j] = p[j + 4] & 63;
    sc[j + 4] = (p[j + 8] & 0x0F) | ((p[j] >> 6) << 4);
    mn[j + 4] = (p[j + 8] >> 4) | ((p[j + 4] >> 6) << 4);
  }
}

// The K-quant dots add their float terms in one fixed order, that of llama.cpp's AVX2 kernels
// (the ones its x86 builds run), so that every table gives llama.cpp's results bit for bit:
// per super-block eight int32 lane sums (lane l holds values 4l..4l+3 of each 32-value piece,
// scaled by their sub-block scale), each added into its own float lane with a fused
// multiply-add by d_x * d; the eight lanes are summed as (l0+l4 + l2+l6) + (l1+l5 + l3+l7).
// Q4_K's mins go into four lanes (pairs of sub-blocks) the same way, summed as (m0+m2)+(m1+m3)
// and added last.
float SumLanes8(const float* a) {
  const float r0 = a[4] + a[0], r1 = a[5] + a[1], r2 = a[6] + a[2], r3 = a[7] + a[3];
  return (r0 + r2) + (r1 + r3);
}

float DotQ4K(const uint8_t* w, const Q8KRow& x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, accm[4] = {0, 0, 0, 0};
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* blk = w + b * 144;
    const int8_t* xq = x.q + b * 256;
    const int16_t* bs = x.bsum + b * 16;
    uint8_t sc[8], mn[8];
    Q4KScalesMins(blk + 4, sc, mn);
    int32_t sumi[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int c = 0; c < 4; ++c) {
      const uint8_t* qs = blk + 16 + 32 * c;
      for (int l = 0; l < 8; ++l) {
        int32_t lo = 0, hi = 0;
        for (int i = 4 * l; i < 4 * l + 4; ++i) {
          lo += (qs[i] & 0x0F) * xq[64 * c + i];
          hi += (qs[i] >> 4) * xq[64 * c + 32 + i];
        }
        sumi[l] += sc[2 * c] * lo + sc[2 * c + 1] * hi;
      }
    }
    const float d = x.d[b] * Half(blk), dmin = -x.d[b] * Half(blk + 2);
    for (int k = 0; k < 4; ++k) {
      // Sub-blocks 2k and 2k+1, each 32 values = two 16-value sums.
      const int32_t prod = mn[2 * k] * (bs[4 * k] + bs[4 * k + 1]) + mn[2 * k + 1] * (bs[4 * k + 2] + bs[4 * k + 3]);
      accm[k] = std::fma(dmin, static_cast<float>(prod), accm[k]);
    }
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(sumi[l]), acc[l]);
  }
  return SumLanes8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

// Lane l of each 32-value quarter: values 4l..4l+3, scale of the first 16 (l < 4) or the second;
// the offset of 32 enters lane l as -32 * scale_g * (16-value sum g) for groups g = 2l, 2l+1.
float DotQ6K(const uint8_t* w, const Q8KRow& x, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint8_t* blk = w + b * 210;
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const int8_t* xq = x.q + b * 256;
    const int16_t* bs = x.bsum + b * 16;
    int32_t sumi[8];
    for (int l = 0; l < 8; ++l) sumi[l] = -32 * (bs[2 * l] * sc[2 * l] + bs[2 * l + 1] * sc[2 * l + 1]);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + 64 * h;
      const uint8_t* qh = blk + 128 + 32 * h;
      for (int k = 0; k < 4; ++k) {  // quarter of the half: 32 values
        const int quarter = 4 * h + k;
        for (int l = 0; l < 8; ++l) {
          int32_t lane = 0;
          for (int i = 4 * l; i < 4 * l + 4; ++i) {
            const int lo = ((k % 2 == 0 ? ql[i] : ql[i + 32]) >> (k < 2 ? 0 : 4)) & 0x0F;
            const int hi = (qh[i] >> (2 * k)) & 3;
            lane += (lo | (hi << 4)) * xq[32 * quarter + i];
          }
          sumi[l] += sc[2 * quarter + (l < 4 ? 0 : 1)] * lane;
        }
      }
    }
    const float d = x.d[b] * Half(blk + 208);
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(sumi[l]), acc[l]);
  }
  return SumLanes8(acc);
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

// llama.cpp's quantize_row_q8_K (ggml-quants.c), element by element.
void QuantizeQ8K(const float* x, int64_t n, int8_t* q, float* d, int16_t* bsum) {
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* xb = x + b * 256;
    int8_t* qb = q + b * 256;
    float amax = 0, m = 0;
    for (int i = 0; i < 256; ++i) {
      const float a = std::fabs(xb[i]);
      if (a > amax) {
        amax = a;
        m = xb[i];
      }
    }
    if (amax == 0) {
      d[b] = 0;
      std::memset(qb, 0, 256);
      for (int j = 0; j < 16; ++j) bsum[b * 16 + j] = 0;
      continue;
    }
    const float iscale = -127.0f / m;
    for (int i = 0; i < 256; ++i) {
      // Round to nearest, ties to even (the default rounding mode), as llama.cpp's nearest_int.
      // Finite inputs give -127..127; the bounds (and NaN -> 0) only keep an infinite or NaN
      // activation from an undefined float-to-int conversion.
      const float r = std::nearbyint(iscale * xb[i]);
      qb[i] = static_cast<int8_t>(r >= 127.0f ? 127 : r <= -127.0f ? -127 : r == r ? static_cast<int>(r) : 0);
    }
    for (int j = 0; j < 16; ++j) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += qb[j * 16 + i];
      bsum[b * 16 + j] = static_cast<int16_t>(s);
    }
    d[b] = 1.0f / iscale;
  }
}

void DotF16Rows(const uint16_t* w, int64_t w_stride, int rows, const float* x, int64_t n, int heads, float* out,
                int64_t out_stride) {
  for (int g = 0; g < heads; ++g) {
    for (int r = 0; r < rows; ++r) out[g * out_stride + r] = DotF16(w + r * w_stride, x + g * n, n);
  }
}

void AxpyF16Rows(const float* a, int64_t a_stride, const uint16_t* x, int64_t x_stride, int rows, float* y, int64_t n,
                 int heads) {
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < heads; ++g) AxpyF16(a[g * a_stride + r], x + r * x_stride, y + g * n, n);
  }
}

void DotQ8_0Rows(const uint8_t* w, int64_t w_stride, int rows, const Q8Row* x, int heads, int64_t n, float* out,
                 int64_t out_stride) {
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < heads; ++g) out[g * out_stride + r] = DotBlocks<34, SumQ8_0>(w + r * w_stride, x[g], n);
  }
}

void AxpyQ8_0Heads(const float* a, const uint8_t* x, float* y, int64_t n, int heads) {
  for (int g = 0; g < heads; ++g) AxpyQ8_0(a[g], x, y + g * n, n);
}

void SoftmaxWeightsF16(float* s, int64_t n, float mx) {
  float total = 0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = simd::Exp<simd::scalar::Vec, true, false>(s[j] - mx);
    total += s[j];
  }
  const float inv = 1.0f / total;
  for (int64_t j = 0; j < n; ++j) s[j] = HalfToFloat(FloatToHalf(s[j] * inv));
}

float ScaleMax(float* s, int64_t n, float scale) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    s[j] *= scale;
    mx = std::max(mx, s[j]);
  }
  return mx;
}

void SwiGlu(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    y[i] = g / (1.0f + simd::Exp<simd::scalar::Vec>(-g)) * up[i];
  }
}

const LlmKernelTable kTable = {"scalar", DotF32, DotF16, DotBlocks<34, SumQ8_0>, DotBlocks<18, SumQ4_0>, QuantizeQ8,
                               AxpyF16, ToF16, nullptr, nullptr, AxpyQ8_0, DotQ4K, DotQ6K, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, QuantizeQ8K,
                               DotF16Rows, AxpyF16Rows, DotQ8_0Rows, AxpyQ8_0Heads, SoftmaxWeightsF16, ScaleMax, SwiGlu};

}  // namespace

const LlmKernelTable* ScalarLlmKernels() { return &kTable; }

}  // namespace inferloop::llm
