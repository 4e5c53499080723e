// Shape rules of the windowed ops (Conv, ConvInteger, ConvTranspose, MaxPool, AveragePool,
// LpPool) and the global pools.
#include <algorithm>
#include <string>

#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using namespace shape_rules;

// Spatial output dims of ConvTranspose (output_shape, else from strides, pads, output_padding).
void InferConvTransposeSpatial(ShapeContext& c, const InferredValue& x, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& strides, const std::vector<int64_t>& dil,
                               const std::vector<int64_t>& pads, const std::vector<int64_t>& outpad, DataType t, Dims d) {
  const Node& n = c.node();
  const size_t sp = x.dims.size() - 2;
  std::string auto_pad = n.FindAttribute("auto_pad") ? n.FindAttribute("auto_pad")->s : "NOTSET";
  if (const Attribute* os = n.FindAttribute("output_shape")) {
    for (size_t k = 0; k < sp && k < os->ints.size(); ++k) d[2 + k] = Fixed(os->ints[k]);
    c.Out(0, TensorInfo(t, d));
    return;
  }
  for (size_t k = 0; k < sp; ++k) {
    const Dim& in = x.dims[2 + k];
    if (!Known(in)) continue;
    int64_t eff = dil[k] * (kernel[k] - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") d[2 + k] = Fixed(in.value * strides[k]);
    else d[2 + k] = Fixed(strides[k] * (in.value - 1) + outpad[k] + eff - pads[k] - pads[k + sp]);
  }
  c.Out(0, TensorInfo(t, d));
}

// [N, C_out, spatial...] from kernel_shape (or W's spatial dims), strides, dilations, pads,
// auto_pad and ceil_mode; MaxPool's indices int64 of the same shape.
void InferWindowed(ShapeContext& c) {
  const Node& n = c.node();
  const std::string& op = n.op_type;
  const InferredValue& x = *c.In(0);
  const size_t r = x.dims.size();
  if (r < 3) return;
  const size_t sp = r - 2;
  const bool conv = op == "Conv" || op == "ConvInteger" || op == "ConvTranspose";
  const InferredValue* w = conv ? c.In(1) : nullptr;
  std::vector<int64_t> kernel = n.FindAttribute("kernel_shape") ? n.FindAttribute("kernel_shape")->ints : std::vector<int64_t>{};
  if (kernel.empty() && w && AllKnown(*w) && w->dims.size() == r)
    for (size_t k = 2; k < r; ++k) kernel.push_back(w->dims[k].value);
  DataType t = op == "ConvInteger" ? DataType::kInt32 : x.dtype;
  Dims d(r, Dim{});
  d[0] = x.dims[0];
  if (conv) {
    if (w && w->has_shape && !w->dims.empty()) {
      if (op == "ConvTranspose") {
        int64_t g = n.FindAttribute("group") ? n.FindAttribute("group")->i : 1;
        d[1] = w->dims.size() > 1 && Known(w->dims[1]) ? Fixed(w->dims[1].value * g) : Dim{};
      } else {
        d[1] = w->dims[0];
      }
    }
  } else {
    d[1] = x.dims[1];
  }
  if (kernel.size() != sp) { c.Out(0, TensorInfo(t, d)); return; }
  auto ints = [&](const char* name, int64_t def) {
    std::vector<int64_t> v = n.FindAttribute(name) ? n.FindAttribute(name)->ints : std::vector<int64_t>{};
    if (v.empty()) v.assign(std::string(name) == "pads" ? 2 * sp : sp, def);
    return v;
  };
  auto strides = ints("strides", 1), dil = ints("dilations", 1), pads = ints("pads", 0);
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp) return;
  std::string auto_pad = n.FindAttribute("auto_pad") ? n.FindAttribute("auto_pad")->s : "NOTSET";
  bool ceil_mode = n.FindAttribute("ceil_mode") && n.FindAttribute("ceil_mode")->i;
  if (op == "ConvTranspose") {
    InferConvTransposeSpatial(c, x, kernel, strides, dil, pads, ints("output_padding", 0), t, d);
    return;
  }
  for (size_t k = 0; k < sp; ++k) {
    const Dim& in = x.dims[2 + k];
    if (!Known(in) || strides[k] <= 0) continue;
    int64_t eff = dil[k] * (kernel[k] - 1) + 1;
    int64_t o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") o = (in.value + strides[k] - 1) / strides[k];
    else if (auto_pad == "VALID") o = (in.value - eff) / strides[k] + 1;
    else {
      int64_t span = in.value + pads[k] + pads[k + sp] - eff;
      o = ceil_mode ? (span + strides[k] - 1) / strides[k] + 1 : span / strides[k] + 1;
      if (ceil_mode && (o - 1) * strides[k] >= in.value + pads[k]) --o;
    }
    d[2 + k] = Fixed(std::max<int64_t>(o, 0));
  }
  c.Out(0, TensorInfo(t, d));
  if (op == "MaxPool") c.Out(1, TensorInfo(DataType::kInt64, d));
}

// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: spatial dims 1.
void InferGlobalPool(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  Dims d = x.dims;
  for (size_t k = 2; k < d.size(); ++k) d[k] = Fixed(1);
  c.Out(0, TensorInfo(x.dtype, d));
}

}  // namespace

void RegisterNnShapeRules(ShapeRuleRegistry& r) {
  for (const char* op : {"Conv", "ConvInteger", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"})
    r.Register("", op, InferWindowed);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) r.Register("", op, InferGlobalPool);
}

}  // namespace inferloop
