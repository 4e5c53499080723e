#include "graph/shape_inference.h"

#include "graph/shape_rules.h"
#include "graph/shape_rules/dims.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace inferloop {
namespace {

using namespace shape_rules;
using Info = InferredValue;
using SymEntry = SymbolicElement;

class Inferencer {
 public:
  Inferencer(const Model& m) : model_(m) {}

  Status Run(const std::map<std::string, Shape>& overrides, ShapeInferenceResult* out) {
    const Graph& g = model_.graph;
    for (const auto& [name, t] : g.initializers) SetConst(name, t);
    for (const auto& in : g.inputs) {
      if (values_.count(in.name)) continue;  // initializer default
      Info i;
      i.kind = in.type.kind;
      i.dtype = in.type.elem_type;
      i.has_shape = in.type.has_shape;
      i.dims = in.type.dims;
      auto ov = overrides.find(in.name);
      if (ov != overrides.end()) {
        if (in.type.has_shape && in.type.dims.size() != ov->second.size())
          return Status::InvalidArgument("input '" + in.name + "' has rank " + std::to_string(in.type.dims.size()) +
                                         ", given shape " + ShapeToString(ov->second));
        i.has_shape = true;
        i.dims.clear();
        for (int64_t d : ov->second) i.dims.push_back(Fixed(d));
      }
      values_[in.name] = i;
    }
    for (const auto& [name, t] : g.initializers) {
      (void)t;
    }
    for (const Node& n : g.nodes) Infer(n);
    for (const auto& [name, info] : values_) {
      TypeInfo t;
      t.kind = info.kind;
      t.elem_type = info.dtype;
      t.has_shape = info.has_shape;
      t.dims = info.dims;
      out->types[name] = t;
      if (info.kind != TypeInfo::Kind::kTensor) continue;
      if (AllKnown(info)) ++out->inferred;
      else ++out->unknown;
    }
    return Status::Ok();
  }

 private:
  void SetConst(const std::string& name, const Tensor& t) { values_[name] = ConstantValue(t); }

  const Info* In(const Node& n, size_t i) const {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return nullptr;
    auto it = values_.find(n.inputs[i]);
    return it == values_.end() ? nullptr : &it->second;
  }
  void Out(const Node& n, size_t i, Info info) {
    if (i < n.outputs.size() && !n.outputs[i].empty()) values_[n.outputs[i]] = std::move(info);
  }
  // Axes from the attribute (old opsets) or a constant input.
  bool Axes(const Node& n, size_t input_index, std::vector<int64_t>* axes) const {
    if (const Attribute* a = n.FindAttribute("axes")) {
      *axes = a->ints;
      return true;
    }
    const Info* ai = In(n, input_index);
    if (!ai) {
      axes->clear();
      return true;
    }
    if (!ai->has_value) return false;
    *axes = ai->value;
    return true;
  }

  // Channel-blocked (NCHW16c) storage [N, ceil(C/16), S..., 16] of logical dims [N, C, S...].
  static Dims ToBlocked(const Dims& d) {
    Dims b = d;
    if (b.size() < 2) return b;
    b[1] = Known(d[1]) ? Fixed((d[1].value + 15) / 16) : Dim{};
    b.push_back(Fixed(16));
    return b;
  }
  // Logical dims of blocked storage with `channels` channels (-1: the padded count).
  static Dims FromBlocked(const Dims& b, int64_t channels) {
    Dims d(b.begin(), b.end() - 1);
    d[1] = channels >= 0 ? Fixed(channels) : Known(b[1]) ? Fixed(b[1].value * 16) : Dim{};
    return d;
  }
  // The com.inferloop ops of the NCHW16c layout: ReorderToNchwc, ReorderFromNchwc, and FusedConv
  // and the pools with layout "NCHW16c" (inferred as their plain op on the logical shapes).
  // False for every other node.
  bool InferBlocked(const Node& n) {
    const std::string& op = n.op_type;
    const Info* x = In(n, 0);
    const bool reorder = op == "ReorderToNchwc" || op == "ReorderFromNchwc";
    if (!reorder) {
      const Attribute* layout = n.FindAttribute("layout");
      if (!layout || layout->s != "NCHW16c") return false;
    }
    auto unknown = [&]() {
      Info o;
      o.dtype = x ? x->dtype : DataType::kUndefined;
      Out(n, 0, o);
      return true;
    };
    if (!x || !x->has_shape || x->dims.size() < 3) return unknown();
    Info o;
    o.dtype = x->dtype;
    o.has_shape = true;
    if (op == "ReorderToNchwc") {
      o.dims = ToBlocked(x->dims);
      Out(n, 0, o);
      return true;
    }
    if (op == "ReorderFromNchwc") {
      const Attribute* ch = n.FindAttribute("channels");
      if (!ch || x->dims.back().value != 16) return unknown();
      o.dims = FromBlocked(x->dims, ch->i);
      Out(n, 0, o);
      return true;
    }
    // FusedConv's X may be plain (rank of W) or blocked (one more); pools' X is blocked.
    Info logical = *x;
    const Info* w = op == "FusedConv" ? In(n, 1) : nullptr;
    if (op == "FusedConv" && (!w || !w->has_shape)) return unknown();
    const bool x_blocked = w ? x->dims.size() == w->dims.size() + 1 : true;
    if (x_blocked) {
      if (x->dims.back().value != 16) return unknown();
      int64_t channels = -1;
      if (w && Known(w->dims[1])) {
        const Attribute* group = n.FindAttribute("group");
        channels = w->dims[1].value * (group ? group->i : 1);
      }
      logical.dims = FromBlocked(x->dims, channels);
    }
    const std::string tmp_in = "\x01blocked_in", tmp_out = "\x01blocked_out";
    values_[tmp_in] = logical;
    Node plain = n;
    plain.domain.clear();
    plain.op_type = op == "FusedConv" ? "Conv" : op;
    plain.inputs[0] = tmp_in;
    plain.outputs = {tmp_out};
    if (op == "FusedConv") plain.inputs.resize(std::min<size_t>(plain.inputs.size(), 3));
    Infer(plain);
    auto it = values_.find(tmp_out);
    if (it != values_.end() && it->second.has_shape && it->second.dims.size() >= 3) {
      o.dims = ToBlocked(it->second.dims);
      Out(n, 0, o);
    } else {
      unknown();
    }
    values_.erase(tmp_in);
    values_.erase(tmp_out);
    return true;
  }

  // The com.inferloop int8 ops of the QDQ fusion (src/compute/kernels/dnnl_int8.cc): shaped like
  // the float op they replace (layout NCHW; NHWC: dtype only), dtype of the output zero point
  // (uint8 when absent), float32 without y_scale (QConv, QMatMul). False for other nodes.
  bool InferInt8(const Node& n) {
    static const std::map<std::string, std::pair<std::string, std::vector<size_t>>> kOps = {
        {"QConv", {"Conv", {0, 3}}}, {"QMatMul", {"MatMul", {0, 3}}}, {"QAdd", {"Add", {0, 3}}},
        {"QMaxPool", {"MaxPool", {0}}}, {"QGlobalAveragePool", {"GlobalAveragePool", {0}}},
        {"DynamicQMatMul", {"MatMul", {0, 3}}}, {"QAveragePool", {"AveragePool", {0}}}};
    if (n.op_type == "QConcat" && !n.outputs.empty()) {  // Concat of the X inputs (2, 5, 8, ...)
      const Info* z = n.inputs.size() > 1 && !n.inputs[1].empty() ? In(n, 1) : nullptr;
      Node plain = n;
      plain.domain.clear();
      plain.op_type = "Concat";
      plain.inputs.clear();
      for (size_t i = 2; i < n.inputs.size(); i += 3) plain.inputs.push_back(n.inputs[i]);
      const std::string tmp_out = "\x01int8_out";
      plain.outputs = {tmp_out};
      Infer(plain);
      auto o = values_.find(tmp_out);
      const DataType t = z ? z->dtype : DataType::kUInt8;
      Info info = o != values_.end() && o->second.has_shape ? TensorInfo(t, o->second.dims) : Unknown(t);
      values_.erase(tmp_out);
      Out(n, 0, info);
      return true;
    }
    auto it = kOps.find(n.op_type);
    if (it == kOps.end() || n.outputs.empty()) return false;
    const std::string& op = n.op_type;
    auto in_type = [&](size_t i) {
      const Info* t = i < n.inputs.size() && !n.inputs[i].empty() ? In(n, i) : nullptr;
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
    const Attribute* layout = n.FindAttribute("layout");
    if (layout && layout->s == "NHWC") {
      Out(n, 0, Unknown(t));
      return true;
    }
    const std::string tmp_out = "\x01int8_out";
    Node plain = n;
    plain.domain.clear();
    plain.op_type = it->second.first;
    plain.inputs.clear();
    for (size_t i : it->second.second) plain.inputs.push_back(i < n.inputs.size() ? n.inputs[i] : "");
    plain.outputs = {tmp_out};
    Infer(plain);
    auto o = values_.find(tmp_out);
    Info info = o != values_.end() && o->second.has_shape ? TensorInfo(t, o->second.dims) : Unknown(t);
    values_.erase(tmp_out);
    Out(n, 0, info);
    return true;
  }

  void Infer(const Node& n) {
    const std::string& op = n.op_type;
    if (n.domain == "com.inferloop" && InferBlocked(n)) return;  // NCHW16c ops (docs/DNNL_KERNELS.md)
    if (n.domain == "com.inferloop" && InferInt8(n)) return;     // QDQ fusion's int8 ops
    if (n.domain == "com.inferloop") {  // fused ops (docs/FUSED_OPS.md): shaped like what they replace
      static const std::map<std::string, std::string> kShapedLike = {
          {"FusedConv", "Conv"}, {"FusedGemm", "Gemm"}, {"FusedMatMul", "MatMul"}, {"Gelu", "Identity"},
          {"MultiHeadAttention", "Identity"}};
      auto it = kShapedLike.find(op);
      if (it == kShapedLike.end()) return;
      Node plain = n;
      plain.domain.clear();
      plain.op_type = it->second;
      Infer(plain);
      return;
    }
    if (!n.domain.empty()) return;  // rules cover ai.onnx only
    DefaultShapeRules().Infer(n, values_);
  }

  const Model& model_;
  InferredValues values_;
};

}  // namespace

Result<ShapeInferenceResult> InferShapes(const Model& model, const std::map<std::string, Shape>& input_shapes) {
  ShapeInferenceResult out;
  Inferencer inf(model);
  IL_RETURN_IF_ERROR(inf.Run(input_shapes, &out));
  return out;
}

}  // namespace inferloop
