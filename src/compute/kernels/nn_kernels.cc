// Registration of the nn kernel family: convolutions (nn_conv.cc), pooling (nn_pool.cc),
// normalizations (nn_norm.cc) and Dropout (here), plus the window geometry they share.
#include <cmath>
#include <random>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/nn_common.h"

namespace inferloop {
namespace nn {

Result<WindowAttrs> ParseWindowAttrs(const KernelInfo& info, bool require_kernel) {
  WindowAttrs a;
  const std::string ap = info.GetString("auto_pad", "NOTSET");
  if (ap == "NOTSET" || ap.empty()) a.auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER") a.auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER") a.auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID") a.auto_pad = AutoPad::kValid;
  else return info.Invalid("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + ap + "'");
  a.kernel_shape = info.GetInts("kernel_shape");
  a.strides = info.GetInts("strides");
  a.dilations = info.GetInts("dilations");
  a.pads = info.GetInts("pads");
  a.group = info.GetInt("group", 1);
  a.ceil_mode = info.GetInt("ceil_mode", 0) != 0;
  if (require_kernel && a.kernel_shape.empty()) return info.Invalid("attribute kernel_shape is required");
  for (int64_t k : a.kernel_shape)
    if (k <= 0) return info.Invalid("kernel_shape values must be positive, got " + VecToString(a.kernel_shape));
  for (int64_t s : a.strides)
    if (s <= 0) return info.Invalid("strides must be positive, got " + VecToString(a.strides));
  for (int64_t d : a.dilations)
    if (d <= 0) return info.Invalid("dilations must be positive, got " + VecToString(a.dilations));
  for (int64_t p : a.pads)
    if (p < 0) return info.Invalid("pads must be non-negative, got " + VecToString(a.pads));
  if (a.pads.size() % 2 != 0) return info.Invalid("pads must have 2 values per spatial axis, got " + VecToString(a.pads));
  if (a.group <= 0) return info.Invalid("group must be positive, got " + std::to_string(a.group));
  if (!a.kernel_shape.empty()) {
    const size_t nd = a.kernel_shape.size();
    if (!a.strides.empty() && a.strides.size() != nd)
      return info.Invalid("strides has " + std::to_string(a.strides.size()) + " values but kernel_shape has " + std::to_string(nd));
    if (!a.dilations.empty() && a.dilations.size() != nd)
      return info.Invalid("dilations has " + std::to_string(a.dilations.size()) + " values but kernel_shape has " + std::to_string(nd));
    if (!a.pads.empty() && a.pads.size() != 2 * nd)
      return info.Invalid("pads has " + std::to_string(a.pads.size()) + " values, expected " + std::to_string(2 * nd));
  }
  return a;
}

Result<WindowGeom> ResolveWindow(const KernelContext& ctx, const WindowAttrs& a, const Shape& in_spatial,
                                 const std::vector<int64_t>& kernel, bool pool_style) {
  WindowGeom g;
  g.nd = static_cast<int>(in_spatial.size());
  const size_t nd = in_spatial.size();
  if (nd == 0) return ctx.Invalid("input needs at least one spatial axis (rank >= 3)");
  if (kernel.size() != nd)
    return ctx.Invalid("kernel has " + std::to_string(kernel.size()) + " spatial axes but the input has " + std::to_string(nd));
  if (!a.strides.empty() && a.strides.size() != nd)
    return ctx.Invalid("strides has " + std::to_string(a.strides.size()) + " values, expected " + std::to_string(nd));
  if (!a.dilations.empty() && a.dilations.size() != nd)
    return ctx.Invalid("dilations has " + std::to_string(a.dilations.size()) + " values, expected " + std::to_string(nd));
  if (!a.pads.empty() && a.pads.size() != 2 * nd)
    return ctx.Invalid("pads has " + std::to_string(a.pads.size()) + " values, expected " + std::to_string(2 * nd));
  g.in = in_spatial;
  g.kernel = kernel;
  g.strides = a.strides.empty() ? std::vector<int64_t>(nd, 1) : a.strides;
  g.dilations = a.dilations.empty() ? std::vector<int64_t>(nd, 1) : a.dilations;
  g.pad_begin.assign(nd, 0);
  g.pad_end.assign(nd, 0);
  g.out.assign(nd, 0);
  for (size_t i = 0; i < nd; ++i) {
    if (kernel[i] <= 0) return ctx.Invalid("kernel dims must be positive, got " + VecToString(kernel));
    const int64_t in = in_spatial[i], s = g.strides[i];
    const int64_t ek = (kernel[i] - 1) * g.dilations[i] + 1;
    switch (a.auto_pad) {
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        const int64_t out = CeilDiv(in, s);
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
        g.pad_begin[i] = a.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
        g.pad_end[i] = total - g.pad_begin[i];
        g.out[i] = out;
        break;
      }
      case AutoPad::kValid:
      case AutoPad::kNotSet: {
        if (a.auto_pad == AutoPad::kNotSet && !a.pads.empty()) {
          g.pad_begin[i] = a.pads[i];
          g.pad_end[i] = a.pads[i + nd];
        }
        const int64_t span = in + g.pad_begin[i] + g.pad_end[i] - ek;
        if (span < 0)
          return ctx.Invalid("kernel " + VecToString(kernel) + " (dilations " + VecToString(g.dilations) +
                             ") does not fit the padded input of spatial shape " + VecToString(in_spatial));
        int64_t out = (pool_style && a.ceil_mode ? CeilDiv(span, s) : span / s) + 1;
        // The last window must start inside the input or its leading padding.
        if (pool_style && a.ceil_mode && (out - 1) * s >= in + g.pad_begin[i]) --out;
        g.out[i] = out;
        break;
      }
    }
    if (g.out[i] <= 0) return ctx.Invalid("output spatial size would be empty for input " + VecToString(in_spatial));
  }
  return g;
}

namespace {

// Dropout. Before opset 12 it is always the inference identity; from 12 the training_mode
// input decides, and training with ratio > 0 draws a random keep mask.
Result<std::unique_ptr<Kernel>> MakeDropout(const KernelInfo& info) {
  const int64_t opset = info.opset();
  const float attr_ratio = info.GetFloat("ratio", 0.5f);
  const bool has_seed = info.has_attr("seed");
  const int64_t seed = has_seed ? info.GetInt("seed", 0) : 0;
  if (opset < 12 && (attr_ratio < 0.f || attr_ratio >= 1.f))
    return info.Invalid("ratio must be in [0, 1), got " + std::to_string(attr_ratio));
  return MakeKernel([opset, has_seed, seed](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    bool training = false;
    double ratio = 0.5;
    if (opset >= 12) {
      if (const Tensor* r = ctx.input(1)) {
        if (r->size() != 1) return ctx.Invalid("ratio must be a scalar, got shape " + ShapeToString(r->shape()));
        IL_ASSIGN_OR_RETURN(Tensor rd, ConvertTo(*r, DataType::kDouble));
        ratio = rd.data<double>()[0];
      }
      if (const Tensor* t = ctx.input(2)) {
        if (t->size() != 1) return ctx.Invalid("training_mode must be a scalar, got shape " + ShapeToString(t->shape()));
        if (t->dtype() != DataType::kBool) return ctx.Invalid(std::string("training_mode must be bool, got ") + DataTypeName(t->dtype()));
        training = t->data<uint8_t>()[0] != 0;
      }
      if (!(ratio >= 0.0 && ratio < 1.0)) return ctx.Invalid("ratio must be in [0, 1), got " + std::to_string(ratio));
    }
    const bool want_mask = ctx.num_outputs() > 1 && ctx.output_wanted(1);
    const DataType mask_type = opset >= 10 ? DataType::kBool : x->dtype();
    if (!training || ratio == 0.0) {
      ctx.SetOutput(0, *x);
      if (want_mask) {
        if (mask_type == DataType::kBool) {
          IL_ASSIGN_OR_RETURN(Tensor m, ctx.Allocate(DataType::kBool, x->shape()));
          std::fill_n(m.data<uint8_t>(), m.size(), uint8_t{1});
          ctx.SetOutput(1, std::move(m));
        } else {
          // Opsets 7-9: the mask has X's type; ones.
          IL_ASSIGN_OR_RETURN(Tensor ones, ctx.Allocate(DataType::kFloat, x->shape()));
          std::fill_n(ones.data<float>(), ones.size(), 1.0f);
          IL_RETURN_IF_ERROR(SetOutputAs(ctx, 1, std::move(ones), mask_type));
        }
      }
      return Status::Ok();
    }
    // Training mode: random mask, kept values scaled by 1 / (1 - ratio).
    if (!IsFloatLike(x->dtype())) return UnsupportedType("Dropout (training mode)", x->dtype());
    // Uniform doubles drawn the way numpy's legacy RandomState(seed).random_sample does (53 bits
    // from two MT19937 outputs), so a given seed reproduces the ONNX reference masks.
    std::mt19937 rng(has_seed ? static_cast<uint32_t>(seed) : std::random_device{}());
    IL_ASSIGN_OR_RETURN(Tensor m, ctx.Allocate(DataType::kBool, x->shape()));
    uint8_t* pm = m.data<uint8_t>();
    for (int64_t i = 0; i < m.size(); ++i) {
      const uint32_t a = rng() >> 5, b = rng() >> 6;
      const double u = (a * 67108864.0 + b) / 9007199254740992.0;
      pm[i] = u >= ratio ? 1 : 0;
    }
    const DataType ct = ComputeTypeOf(x->dtype());
    IL_ASSIGN_OR_RETURN(Tensor xc, ConvertTo(*x, ct));
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ct, x->shape()));
    IL_RETURN_IF_ERROR(DispatchFloatCompute(x->dtype(), "Dropout", [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* px = xc.data<T>();
      T* py = y.data<T>();
      const T scale = static_cast<T>(1.0 / (1.0 - ratio));
      for (int64_t i = 0; i < y.size(); ++i) py[i] = pm[i] ? px[i] * scale : T(0);
      return Status::Ok();
    }));
    IL_RETURN_IF_ERROR(SetOutputAs(ctx, 0, std::move(y), x->dtype()));
    if (want_mask) ctx.SetOutput(1, std::move(m));
    return Status::Ok();
  });
}

}  // namespace
}  // namespace nn

void RegisterNnKernels(KernelRegistry& r) {
  nn::RegisterConvKernels(r);
  nn::RegisterPoolKernels(r);
  nn::RegisterNormKernels(r);
  r.Register("", "Dropout", 1, nn::MakeDropout);
}

}  // namespace inferloop
