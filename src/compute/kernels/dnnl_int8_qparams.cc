// Quantization parameters of the INT8 kernels, the oneDNN int8 primitive attributes and the
// float32 fallback's conversions (dnnl_int8_common.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_int8_common.h"
#include "compute/simd/quantize_linear.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

dt DnnlType(DataType t) {
  switch (t) {
    case DataType::kUInt8: return dt::u8;
    case DataType::kInt8: return dt::s8;
    case DataType::kInt32: return dt::s32;
    default: return dt::f32;
  }
}

Result<std::vector<float>> ConstFloats(const KernelInfo& info, int i, const char* what) {
  const Tensor* t = info.constant_input(i);
  if (!t || t->dtype() != DataType::kFloat || t->size() < 1)
    return info.Invalid(std::string(what) + " must be a float32 constant");
  return std::vector<float>(t->data<float>(), t->data<float>() + t->size());
}

Result<QParam> ConstQParam(const KernelInfo& info, int si, int zi, DataType default_type, const char* what) {
  QParam q;
  IL_ASSIGN_OR_RETURN(auto s, ConstFloats(info, si, what));
  if (s.size() != 1 || !(s[0] > 0) || !std::isfinite(s[0]))
    return info.Invalid(std::string(what) + " scale must be one positive finite float");
  q.scale = s[0];
  q.type = default_type;
  if (info.has_input(zi)) {
    const Tensor* z = info.constant_input(zi);
    if (!z || z->size() != 1 || !Is8Bit(z->dtype())) return info.Invalid(std::string(what) + " zero point must be an 8-bit constant scalar");
    q.type = z->dtype();
    q.zp = z->dtype() == DataType::kUInt8 ? z->data<uint8_t>()[0] : z->data<int8_t>()[0];
  }
  return q;
}

Result<std::vector<float>> WeightScales(const KernelInfo& info, int si, int zi, int64_t channels) {
  IL_ASSIGN_OR_RETURN(auto s, ConstFloats(info, si, "weight scale"));
  if (s.size() != 1 && static_cast<int64_t>(s.size()) != channels)
    return info.Invalid("weight scale must have 1 or " + std::to_string(channels) + " elements, got " + std::to_string(s.size()));
  if (info.has_input(zi)) {
    const Tensor* z = info.constant_input(zi);
    if (!z || z->dtype() != DataType::kInt8) return info.Invalid("weight zero point must be an int8 constant");
    for (int64_t k = 0; k < z->size(); ++k)
      if (z->data<int8_t>()[k] != 0) return info.Invalid("weight zero points must be 0 (symmetric int8 weights)");
  }
  return s;
}

Result<Tensor> ConstBias(const KernelInfo& info, int i, int64_t channels) {
  if (!info.has_input(i)) return Tensor();
  const Tensor* b = info.constant_input(i);
  if (!b || b->dtype() != DataType::kInt32 || b->size() != channels)
    return info.Invalid("bias must be an int32 constant of " + std::to_string(channels) + " elements");
  return b->Clone();
}

Result<OutQuant> ParseOut(const KernelInfo& info, int si, int zi) {
  OutQuant o;
  if (!info.has_input(si)) {
    if (info.has_input(zi)) return info.Invalid("y_zero_point given without y_scale");
    return o;
  }
  o.float_out = false;
  IL_ASSIGN_OR_RETURN(o.q, ConstQParam(info, si, zi, DataType::kUInt8, "y"));
  return o;
}

Result<bool> NhwcFromInfo(const KernelInfo& info) {
  const std::string l = info.GetString("layout", "NCHW");
  if (l == "NCHW") return false;
  if (l == "NHWC") return true;
  return info.Invalid("layout must be NCHW or NHWC, got '" + l + "'");
}

dnnl::primitive_attr QuantAttr(const std::vector<float>& scales, int per_channel_mask, int32_t src_zp, const OutQuant& out,
                               const Activation& act, const memory::desc* correction) {
  dnnl::post_ops po;
  if (correction != nullptr) po.append_binary(dnnl::algorithm::binary_add, *correction);
  AppendActivation(act, po);
  dnnl::primitive_attr attr = MakeAttr(po);
  attr.set_output_scales(scales.size() > 1 ? per_channel_mask : 0, scales);
  if (src_zp != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (!out.float_out && out.q.zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  return attr;
}

std::vector<float> OutputScales(float x_scale, const std::vector<float>& w_scale, const OutQuant& out) {
  std::vector<float> s(w_scale.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = x_scale * w_scale[i] / (out.float_out ? 1.f : out.q.scale);
  return s;
}

void AddZeroPoints(const ZeroPoints& z, ExecArgs& args, MemArg* src_m, MemArg* dst_m) {
  if (z.src != 0) {
    *src_m = MemArg(z.md, &z.src);
    args.Add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, src_m->get());
  }
  if (z.dst != 0) {
    *dst_m = MemArg(z.md, &z.dst);
    args.Add(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, dst_m->get());
  }
}

bool NativeInt8() {
  static const bool native = [] {
    const auto isa = EffectiveIsa();
    using I = dnnl::cpu_isa;
    return isa == I::avx512_core_vnni || isa == I::avx512_core_bf16 || isa == I::avx512_core_amx || isa == I::avx2_vnni;
  }();
  return native;
}

bool Int8ProductsExact(const Tensor& w) {
  if (NativeInt8()) return true;
  if (w.dtype() != DataType::kInt8) return false;
  const int8_t* p = w.data<int8_t>();
  return std::all_of(p, p + w.size(), [](int8_t v) { return v >= -64 && v <= 64; });
}

void DequantizeTo(DataType t, const void* x, float* y, int64_t n, const QParam& q, ThreadPool* pool) {
  ParallelFor(pool, n, 1 << 16, [&](int64_t b, int64_t e) {
    if (t == DataType::kUInt8) simd::DequantizeU8(static_cast<const uint8_t*>(x) + b, y + b, e - b, q.scale, q.zp);
    else simd::DequantizeS8(static_cast<const int8_t*>(x) + b, y + b, e - b, q.scale, q.zp);
  });
}
void QuantizeTo(const float* x, void* y, int64_t n, const QParam& q, ThreadPool* pool) {
  ParallelFor(pool, n, 1 << 16, [&](int64_t b, int64_t e) {
    if (q.type == DataType::kUInt8) simd::QuantizeToU8(x + b, static_cast<uint8_t*>(y) + b, e - b, q.scale, q.zp);
    else simd::QuantizeToS8(x + b, static_cast<int8_t*>(y) + b, e - b, q.scale, q.zp);
  });
}

std::vector<float> DequantWeights(const Tensor& w, const std::vector<float>& w_scale, bool per_row, int64_t rows) {
  const int64_t n = w.size(), cols = n / rows;
  std::vector<float> out(static_cast<size_t>(n));
  const int8_t* p = w.data<int8_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t ch = w_scale.size() == 1 ? 0 : static_cast<size_t>(per_row ? r : c);
      out[r * cols + c] = static_cast<float>(p[r * cols + c]) * w_scale[ch];
    }
  return out;
}
std::vector<float> DequantBias(const Tensor& b, const std::vector<float>& w_scale, float x_scale) {
  std::vector<float> out(static_cast<size_t>(b.size()));
  for (int64_t c = 0; c < b.size(); ++c)
    out[c] = static_cast<float>(static_cast<double>(b.data<int32_t>()[c]) * x_scale * w_scale[w_scale.size() == 1 ? 0 : c]);
  return out;
}

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
