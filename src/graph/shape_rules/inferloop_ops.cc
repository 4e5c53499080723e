// Shape rules of the com.inferloop ops the optimizer writes (their kernels are in
// src/compute/kernels; graph sits below compute, so their rules live here, in one file):
// - layouts NCHW16c and NCHW8c (graph/channel_block.h): ReorderToNchwc / ReorderFromNchwc, and
//   FusedConv and the pools with such an attribute layout, inferred as their plain op on the
//   logical shapes;
// - the int8 ops of the QDQ fusion (dnnl_int8.cc): shaped like the float op they replace;
// - the fused ops (docs/FUSED_OPS.md): shaped like what they replace.
// Any com.inferloop op with a channel-blocked layout takes the blocked rule.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "graph/channel_block.h"
#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using namespace shape_rules;

// Channel-blocked storage [N, ceil(C/B), S..., B] of logical dims [N, C, S...].
Dims ToBlocked(const Dims& d, int64_t block) {
  Dims b = d;
  if (b.size() < 2) return b;
  b[1] = Known(d[1]) ? Fixed((d[1].value + block - 1) / block) : Dim{};
  b.push_back(Fixed(block));
  return b;
}

// Logical dims of blocked storage with `channels` channels (-1: the padded count).
Dims FromBlocked(const Dims& b, int64_t channels, int64_t block) {
  Dims d(b.begin(), b.end() - 1);
  d[1] = channels >= 0 ? Fixed(channels) : Known(b[1]) ? Fixed(b[1].value * block) : Dim{};
  return d;
}

bool HasBlockedLayout(const Node& n) { return NodeChannelBlock(n) > 0; }

// ReorderToNchwc, ReorderFromNchwc (attribute channels), and any op with layout NCHW16c:
// FusedConv's X may be plain (rank of W) or blocked (one more); the pools' X is blocked.
void InferBlocked(ShapeContext& c) {
  const Node& n = c.node();
  const std::string& op = n.op_type;
  const InferredValue* x = c.In(0);
  auto unknown = [&]() {
    InferredValue o;
    o.dtype = x ? x->dtype : DataType::kUndefined;
    c.Out(0, o);
  };
  if (!x || !x->has_shape || x->dims.size() < 3) return unknown();
  const int64_t block = NodeChannelBlock(n);
  if (block <= 0) return unknown();
  InferredValue o;
  o.dtype = x->dtype;
  o.has_shape = true;
  if (op == "ReorderToNchwc") {
    o.dims = ToBlocked(x->dims, block);
    c.Out(0, o);
    return;
  }
  if (op == "ReorderFromNchwc") {
    const Attribute* ch = n.FindAttribute("channels");
    if (!ch || x->dims.back().value != block) return unknown();
    o.dims = FromBlocked(x->dims, ch->i, block);
    c.Out(0, o);
    return;
  }
  InferredValue logical = *x;
  const InferredValue* w = op == "FusedConv" ? c.In(1) : nullptr;
  if (op == "FusedConv" && (!w || !w->has_shape)) return unknown();
  const bool x_blocked = w ? x->dims.size() == w->dims.size() + 1 : true;
  if (x_blocked) {
    if (x->dims.back().value != block) return unknown();
    int64_t channels = -1;
    if (w && Known(w->dims[1])) {
      const Attribute* group = n.FindAttribute("group");
      channels = w->dims[1].value * (group ? group->i : 1);
    }
    logical.dims = FromBlocked(x->dims, channels, block);
  }
  Node plain = n;
  plain.domain.clear();
  plain.op_type = op == "FusedConv" ? "Conv" : op;
  if (op == "FusedConv") plain.inputs.resize(std::min<size_t>(plain.inputs.size(), 3));
  const InferredValue y = c.InferTemporary(std::move(plain), &logical);
  if (y.has_shape && y.dims.size() >= 3) {
    o.dims = ToBlocked(y.dims, block);
    c.Out(0, o);
  } else {
    unknown();
  }
}

// An op whose channel-blocked form takes InferBlocked, and `plain` otherwise.
ShapeRuleFn BlockedOr(ShapeRuleFn plain) {
  return [plain = std::move(plain)](ShapeContext& c) {
    if (HasBlockedLayout(c.node())) InferBlocked(c);
    else if (plain) plain(c);
  };
}

// QConcat: Concat of the X inputs (2, 5, 8, ...); dtype of the output zero point (uint8 when absent).
void InferQConcat(ShapeContext& c) {
  const Node& n = c.node();
  if (n.outputs.empty()) return;
  const InferredValue* z = n.inputs.size() > 1 && !n.inputs[1].empty() ? c.In(1) : nullptr;
  Node plain = n;
  plain.domain.clear();
  plain.op_type = "Concat";
  plain.inputs.clear();
  for (size_t i = 2; i < n.inputs.size(); i += 3) plain.inputs.push_back(n.inputs[i]);
  const InferredValue y = c.InferTemporary(std::move(plain));
  const DataType t = z ? z->dtype : DataType::kUInt8;
  c.Out(0, y.has_shape ? TensorInfo(t, y.dims) : Unknown(t));
}

// The other int8 ops: shaped like the float op they replace (layout NCHW; NHWC: dtype only),
// dtype of the output zero point (uint8 when absent), float32 without y_scale (QConv, QMatMul)
// or with dequantize_output.
void InferInt8(ShapeContext& c) {
  static const std::map<std::string, std::pair<std::string, std::vector<size_t>>> kOps = {
      {"QConv", {"Conv", {0, 3}}}, {"QMatMul", {"MatMul", {0, 3}}}, {"QAdd", {"Add", {0, 3}}},
      {"QMaxPool", {"MaxPool", {0}}}, {"QGlobalAveragePool", {"GlobalAveragePool", {0}}},
      {"DynamicQMatMul", {"MatMul", {0, 3}}}, {"QAveragePool", {"AveragePool", {0}}}};
  const Node& n = c.node();
  auto it = kOps.find(n.op_type);
  if (it == kOps.end() || n.outputs.empty()) return;
  const std::string& op = n.op_type;
  auto in_type = [&](size_t i) {
    const InferredValue* t = i < n.inputs.size() && !n.inputs[i].empty() ? c.In(i) : nullptr;
    return t ? t->dtype : DataType::kUndefined;
  };
  auto present = [&](size_t i) { return i < n.inputs.size() && !n.inputs[i].empty(); };
  DataType t = DataType::kUInt8;
  if (op == "QMaxPool") t = in_type(0);
  else if (op == "DynamicQMatMul") t = DataType::kFloat;
  else if (op == "QGlobalAveragePool" || op == "QAveragePool") t = present(4) ? in_type(4) : DataType::kUInt8;
  else if (op == "QAdd") t = present(7) ? in_type(7) : DataType::kUInt8;
  else t = !present(6) ? DataType::kFloat : present(7) ? in_type(7) : DataType::kUInt8;
  if (const Attribute* d = n.FindAttribute("dequantize_output"); d && d->i != 0) t = DataType::kFloat;
  Node plain = n;
  plain.domain.clear();
  plain.op_type = it->second.first;
  plain.inputs.clear();
  for (size_t i : it->second.second) plain.inputs.push_back(i < n.inputs.size() ? n.inputs[i] : "");
  const Attribute* layout = n.FindAttribute("layout");
  if (layout && layout->s == "NHWC") {
    // Channels-last X [N, H, W, C] (QConv and the pools; Int8NhwcLayout): the plain op on the
    // logical [N, C, H, W], its [N, C', H', W'] stored as [N, H', W', C']. Known shapes let the
    // memory plan place these tensors in the arena instead of the heap at every run.
    const InferredValue* x = c.In(0);
    if (!x || !x->has_shape || x->dims.size() != 4) return c.Out(0, Unknown(t));
    InferredValue logical = *x;
    logical.dims = {x->dims[0], x->dims[3], x->dims[1], x->dims[2]};
    const InferredValue y = c.InferTemporary(std::move(plain), &logical);
    if (!y.has_shape || y.dims.size() != 4) return c.Out(0, Unknown(t));
    return c.Out(0, TensorInfo(t, {y.dims[0], y.dims[2], y.dims[3], y.dims[1]}));
  }
  const InferredValue y = c.InferTemporary(std::move(plain));
  c.Out(0, y.has_shape ? TensorInfo(t, y.dims) : Unknown(t));
}

// A fused op inferred as the ai.onnx op `op_type` it replaces, over the same inputs and outputs.
ShapeRuleFn ShapedLike(std::string op_type) {
  return [op_type = std::move(op_type)](ShapeContext& c) {
    Node plain = c.node();
    plain.domain.clear();
    plain.op_type = op_type;
    c.InferAs(plain);
  };
}

}  // namespace

void RegisterInferloopOpShapeRules(ShapeRuleRegistry& r) {
  const std::string d = "com.inferloop";
  const ShapeRuleInput any = ShapeRuleInput::kAny;
  r.RegisterFallback(d, BlockedOr(nullptr), any);  // an op of this domain with layout NCHW16c
  r.Register(d, "ReorderToNchwc", InferBlocked, any);
  r.Register(d, "ReorderFromNchwc", InferBlocked, any);
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    r.Register(d, op, BlockedOr(nullptr), any);
  r.Register(d, "QConcat", BlockedOr(InferQConcat), any);
  for (const char* op : {"QConv", "QMatMul", "QAdd", "QMaxPool", "QGlobalAveragePool", "DynamicQMatMul", "QAveragePool"})
    r.Register(d, op, BlockedOr(InferInt8), any);
  for (const auto& [op, like] : std::map<std::string, std::string>{{"FusedConv", "Conv"},
                                                                   {"FusedGemm", "Gemm"},
                                                                   {"FusedMatMul", "MatMul"},
                                                                   {"Gelu", "Identity"},
                                                                   {"MultiHeadAttention", "Identity"}})
    r.Register(d, op, BlockedOr(ShapedLike(like)), any);
}

}  // namespace inferloop
