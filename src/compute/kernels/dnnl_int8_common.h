// Internal to the com.inferloop INT8 kernels of the QDQ fusion (dnnl_int8*.cc; the ops and their
// semantics are described in dnnl_int8.cc): quantization parameters read from constant inputs,
// the oneDNN int8 primitive attributes, the float32 fallback's conversions, and the factories
// that dnnl_int8.cc registers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compute/kernels/dnnl_common.h"
#include "compute/simd/int8_loops.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

// Factories (dnnl_int8_conv.cc, dnnl_int8_matmul.cc, dnnl_int8_elementwise.cc, dnnl_int8_pool.cc).
Result<std::unique_ptr<Kernel>> MakeQConv(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeQMatMul(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeDynamicQMatMul(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeQAdd(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeQConcat(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeQMaxPool(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeQAveragePool(const KernelInfo& info);
Result<std::unique_ptr<Kernel>> MakeQGlobalAveragePool(const KernelInfo& info);

// ---------------------------------------------------------------------------------------------
// Quantization parameters (dnnl_int8_qparams.cc)

inline bool Is8Bit(DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; }
// u8, s8, s32 for those dtypes; f32 for any other.
dt DnnlType(DataType t);

// The saturation bounds of 8-bit dtype t (uint8: [0, 255], int8: [-128, 127]) as floats.
inline float Lo(DataType t) { return t == DataType::kUInt8 ? 0.f : -128.f; }
inline float Hi(DataType t) { return t == DataType::kUInt8 ? 255.f : 127.f; }

// A scalar quantization parameter read from a constant input.
struct QParam {
  float scale = 1.f;
  int32_t zp = 0;
  DataType type = DataType::kUInt8;  // the zero point's (= the quantized tensor's) dtype
};

// The float32 constant at input i (at least one element); else an error naming `what`.
Result<std::vector<float>> ConstFloats(const KernelInfo& info, int i, const char* what);

// Scale at input si, zero point at zi (zi absent: 0 of `default_type`).
Result<QParam> ConstQParam(const KernelInfo& info, int si, int zi, DataType default_type, const char* what);

// Weight scales (1 or `channels`) and a check that the weight zero points are all 0.
Result<std::vector<float>> WeightScales(const KernelInfo& info, int si, int zi, int64_t channels);

// The optional int32 bias at input i (`channels` elements) as a constant copy.
Result<Tensor> ConstBias(const KernelInfo& info, int i, int64_t channels);

// Output quantization: y_scale / y_zp at inputs si, zi, both absent for a float32 output.
struct OutQuant {
  bool float_out = true;
  QParam q;
};
Result<OutQuant> ParseOut(const KernelInfo& info, int si, int zi);

// Attribute `layout`: false for "NCHW" (the default), true for "NHWC"; else an error.
Result<bool> NhwcFromInfo(const KernelInfo& info);

// ---------------------------------------------------------------------------------------------
// oneDNN int8 primitives (dnnl_int8_qparams.cc)

// Builds the primitive attribute: output scales, runtime zero points where nonzero, the
// activation post-op. oneDNN computes dst = sat(round(post_ops(scales * (acc + bias))) + dst_zp)
// with acc = sum (src - src_zp) * wei.
// With `correction` (a float32 tensor shaped like dst), a binary-add post-op of it comes first:
// post_ops(scales * (acc + bias) + correction) (the exact path without VNNI, below).
dnnl::primitive_attr QuantAttr(const std::vector<float>& scales, int per_channel_mask, int32_t src_zp, const OutQuant& out,
                               const Activation& act, const memory::desc* correction = nullptr);

// x_scale * w_scale[c] / y_scale (y_scale 1 for a float32 output), per channel c.
std::vector<float> OutputScales(float x_scale, const std::vector<float>& w_scale, const OutQuant& out);

// Scalar int32 zero points as oneDNN memories (read at execution).
struct ZeroPoints {
  int32_t src = 0, dst = 0;
  memory::desc md{{1}, dt::s32, tag::a};
};
// Adds the nonzero ones of `z` to `args`, wrapped in *src_m / *dst_m (which must outlive the call).
void AddZeroPoints(const ZeroPoints& z, ExecArgs& args, MemArg* src_m, MemArg* dst_m);

// True when oneDNN's int8 kernels on this CPU accumulate u8 x s8 products exactly: with VNNI
// (AVX512-VNNI, AVX-VNNI) or AMX. Without them (AVX2, AVX-512 before VNNI) oneDNN sums pairs of
// products in saturating int16, which overflows for full-range int8 weights; for such weights
// (Int8ProductsExact) QConv, QMatMul and DynamicQMatMul split u8 inputs (the window split
// below) and compute s8 inputs in float32 (dequantize, float primitive, quantize), the float
// graph's semantics. ONEDNN_MAX_CPU_ISA lowers what oneDNN reports here.
bool NativeInt8();
// True when oneDNN's int8 kernels compute products with the int8 weights `w` exactly on this CPU:
// NativeInt8(), or every |w| <= 64 (weights quantized to 7 bits, as ONNX Runtime's quantizer
// makes them with reduce_range, which its documentation advises for CPUs without VNNI): then no
// pair of u8 x s8 products can pass the int16 range (255 * (64 + 64) = 32640 <= 32767), so the
// saturating pair sums are exact and QConv / QMatMul keep the int8 kernels (test
// SevenBitWeightsExactOnAvx2). Scans w once (its plan is made once per shape).
bool Int8ProductsExact(const Tensor& w);

// ---------------------------------------------------------------------------------------------
// Exact int8 products without VNNI: the window split (dnnl_int8_window.cc)
//
// Without VNNI, a pair of u8 x s8 products stays exact in oneDNN's saturating int16 sums while
// the u8 values are at most 128: 128 * 127 * 2 = 32512 and 128 * -128 * 2 = -32768 fit. So QConv
// and QMatMul split a u8 input x with zero point zp, for full-range weights, as
//   x = shift + win + out,  win = clamp(x - shift, 0, 128),  shift = WindowShift(zp):
// oneDNN's int8 kernel multiplies win (its zero point zp - shift) exactly, and the few values
// outside the window (out != 0: 0.4% of ResNet-50's activations, 1.4% of BERT's, measured on the
// zoo's QDQ files) are added to the scaled accumulator by the kernel itself, as a float32
// binary-add post-op (the correction, exact up to float rounding of the scaled sum), before the
// activation. The result is the native int8 path's, not the float graph's: exact integer sums.

// True when QConv / QMatMul / DynamicQMatMul take the window split: no VNNI / AMX, a u8 input,
// weights beyond +-64.
bool UseWindowSplit(DataType x_type, const Tensor& w);
// A kernel's plan: make(true) (the window split where it applies); when oneDNN refuses that
// (dnnl::error) and `split_applies` (UseWindowSplit), make(false), the float32 path instead.
// Other errors, and any from make(false), propagate.
template <typename Make>
auto PlanWithWindowFallback(bool split_applies, Make&& make) -> decltype(make(true)) {
  try {
    return make(true);
  } catch (const dnnl::error&) {
    if (!split_applies) throw;
    return make(false);
  }
}
// The window's start for zero point zp: zp - 64 within [0, 127] (the window centred on zp).
int32_t WindowShift(int32_t zp);
struct WindowOutlier {
  int64_t index;     // into x
  int32_t residual;  // x - shift - win, nonzero
};
// Writes win into y (n values) and the values of x outside the window, in index order, into
// *outliers (cleared first), on the threads claimed by `threads`.
void SplitWindow(const uint8_t* x, uint8_t* y, int64_t n, int32_t shift, const ThreadScope& threads,
                 std::vector<WindowOutlier>* outliers);
// SplitWindow of the u8 tensor x into this thread's scratch (slot 1), which it returns (nullptr
// when out of memory).
const uint8_t* WindowOf(const Tensor& x, int32_t shift, const ThreadScope& threads, std::vector<WindowOutlier>* outliers);
// This thread's scratch for the correction (slot 4), n floats set to 0 (nullptr when out of memory).
float* ZeroedCorrection(int64_t n, const ThreadScope& threads);
// Adds the terms of every list, in list order, to the correction: c[t.y_offset + j] +=
// (t.r * w[t.w_offset + j]) * scales[j] for j < columns. In column slices of at most 256 (a slice
// of the weights stays in cache while the terms pick its rows), in parallel (no two threads write
// one element; each element gets its terms in order whatever the number of threads).
void AddCorrectionTerms(float* c, const int8_t* w, const float* scales, int64_t columns,
                        const std::vector<const std::vector<simd::ScaledS8Term>*>& lists, const ThreadScope& threads);
// `scales` (one, or one per column) as one per column.
std::vector<float> PerColumnScales(const std::vector<float>& scales, int64_t columns);

// ---------------------------------------------------------------------------------------------
// The float32 fallback's conversions (dnnl_int8_qparams.cc)

// Dequantizes n 8-bit values of dtype t into float32.
void DequantizeTo(DataType t, const void* x, float* y, int64_t n, const QParam& q, ThreadPool* pool);
// Quantizes n float32 values into 8-bit values of dtype q.type.
void QuantizeTo(const float* x, void* y, int64_t n, const QParam& q, ThreadPool* pool);

// Float32 copies of int8 weights and the int32 bias, dequantized: w * scale[c] with c the row
// (per_row) or the column of w's 2-D view [rows, n / rows]; bias * x_scale * scale[c].
std::vector<float> DequantWeights(const Tensor& w, const std::vector<float>& w_scale, bool per_row, int64_t rows);
std::vector<float> DequantBias(const Tensor& b, const std::vector<float>& w_scale, float x_scale);

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
