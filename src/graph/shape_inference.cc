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

// Reshape's output dims for a target whose entries may be symbolic: 0 copies the input dim
// (unless allowzero), -1 is solved when the other entries' fixed product and symbols cancel
// against the input's.
Dims ReshapeDims(const Info& x, const std::vector<SymEntry>& target, bool allowzero) {
  Dims d;
  int neg = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    const SymEntry& t = target[k];
    if (!t.literal) d.push_back(t.dim);
    else if (t.value == 0 && !allowzero) d.push_back(x.has_shape && k < x.dims.size() ? x.dims[k] : Dim{});
    else if (t.value == -1) { neg = static_cast<int>(k); d.push_back(Dim{}); }
    else d.push_back(t.value >= 0 ? Fixed(t.value) : Dim{});
  }
  if (neg < 0 || !x.has_shape) return d;
  int64_t in_known = 1, out_known = 1;
  std::multiset<std::string> in_sym, out_sym;
  for (const Dim& v : x.dims) {
    if (Known(v)) in_known *= v.value;
    else if (!v.symbol.empty()) in_sym.insert(v.symbol);
    else return d;
  }
  for (size_t k = 0; k < d.size(); ++k) {
    if (static_cast<int>(k) == neg) continue;
    if (Known(d[k])) out_known *= d[k].value;
    else if (!d[k].symbol.empty()) out_sym.insert(d[k].symbol);
    else return d;
  }
  if (in_sym != out_sym || out_known <= 0 || in_known % out_known != 0) return d;
  d[neg] = Fixed(in_known / out_known);
  return d;
}

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
    const Info* x = In(n, 0);
    const DataType xt = x ? x->dtype : DataType::kUndefined;
    auto same = [&]() { Out(n, 0, x ? *x : Info()); if (!n.outputs.empty() && values_.count(n.outputs[0])) { auto& o = values_[n.outputs[0]]; o.has_value = false; o.value.clear(); o.has_sym = false; o.sym.clear(); } };
    static const std::set<std::string> kUnary = {
        "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Floor", "Ceil", "Round", "Reciprocal",
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "LeakyRelu", "Elu",
        "Selu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Gelu", "Mish", "Swish", "Celu", "ThresholdedRelu",
        "Shrink", "Clip", "Softmax", "LogSoftmax", "Hardmax", "Sign", "Not", "BitwiseNot", "LRN", "LpNormalization",
        "InstanceNormalization", "MeanVarianceNormalization", "GroupNormalization", "RMSNormalization", "CumSum",
        "LayerNormalization", "BatchNormalization", "Identity", "Dropout", "Trilu", "ReverseSequence", "RotaryEmbedding"};
    static const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Mean",
                                                  "Sum", "And", "Or", "Xor", "BitShift", "BitwiseAnd", "BitwiseOr",
                                                  "BitwiseXor", "PRelu"};
    static const std::set<std::string> kCompare = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
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
    if (DefaultShapeRules().HasRule(n.domain, op)) {
      DefaultShapeRules().Infer(n, values_);
      return;
    }
    if (op == "DynamicQuantizeLinear") {  // y: uint8 of x's shape; y_scale, y_zero_point: scalars
      Out(n, 0, x && x->has_shape ? TensorInfo(DataType::kUInt8, x->dims) : Unknown(DataType::kUInt8));
      if (n.outputs.size() > 1) Out(n, 1, TensorInfo(DataType::kFloat, {}));
      if (n.outputs.size() > 2) Out(n, 2, TensorInfo(DataType::kUInt8, {}));
      return;
    }
    if (op == "QuantizeLinear" || op == "DequantizeLinear") {  // elementwise: x's shape
      DataType t = DataType::kFloat;
      if (op == "DequantizeLinear") {
        if (const Info* s = n.inputs.size() > 1 ? In(n, 1) : nullptr) t = s->dtype;
      } else if (const Attribute* od = n.FindAttribute("output_dtype"); od && od->i != 0) {
        t = static_cast<DataType>(od->i);
      } else {
        const Info* z = n.inputs.size() > 2 && !n.inputs[2].empty() ? In(n, 2) : nullptr;
        t = z ? z->dtype : DataType::kUInt8;
      }
      Out(n, 0, x && x->has_shape ? TensorInfo(t, x->dims) : Unknown(t));
      return;
    }
    if (kUnary.count(op)) {
      same();
      if (op == "Dropout" && x && x->has_shape) Out(n, 1, TensorInfo(DataType::kBool, x->dims));
      return;
    }
    if (op == "IsNaN" || op == "IsInf") {
      if (x) Out(n, 0, x->has_shape ? TensorInfo(DataType::kBool, x->dims) : Unknown(DataType::kBool));
      return;
    }
    if (kBinary.count(op) || kCompare.count(op) || op == "Where") {
      std::vector<const Info*> ins;
      for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(In(n, i));
      DataType t = kCompare.count(op) ? DataType::kBool : (op == "Where" ? (ins.size() > 1 && ins[1] ? ins[1]->dtype : xt) : xt);
      Dims d;
      Info o = BroadcastAll(ins, &d) ? TensorInfo(t, d) : Unknown(t);
      // Shape arithmetic on known small vectors.
      if (!kCompare.count(op) && ins.size() == 2 && ins[0] && ins[1] && ins[0]->has_value && ins[1]->has_value &&
          (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")) {
        const auto &a = ins[0]->value, &b = ins[1]->value;
        size_t len = std::max(a.size(), b.size());
        if ((a.size() == len || a.size() == 1) && (b.size() == len || b.size() == 1)) {
          o.has_value = true;
          for (size_t k = 0; k < len; ++k) {
            int64_t va = a[a.size() == 1 ? 0 : k], vb = b[b.size() == 1 ? 0 : k];
            if (op == "Div" && vb == 0) { o.has_value = false; break; }
            o.value.push_back(op == "Add" ? va + vb : op == "Sub" ? va - vb : op == "Mul" ? va * vb : va / vb);
          }
          if (!o.has_value) o.value.clear();
        }
      }
      Out(n, 0, o);
      return;
    }
    if (op == "Cast" || op == "CastLike") {
      DataType t = op == "Cast" ? static_cast<DataType>(n.FindAttribute("to") ? n.FindAttribute("to")->i : 0)
                                : (In(n, 1) ? In(n, 1)->dtype : DataType::kUndefined);
      Info o = x ? *x : Info();
      o.dtype = t;
      if (!(t == DataType::kInt64 || t == DataType::kInt32)) { o.has_value = false; o.value.clear(); o.has_sym = false; o.sym.clear(); }
      Out(n, 0, o);
      return;
    }
    if (op == "Constant") {
      const Attribute* a = n.attributes.empty() ? nullptr : &n.attributes[0];
      if (!a) return;
      if (a->type == Attribute::Type::kTensor || a->type == Attribute::Type::kSparseTensor) {
        SetConst(n.outputs[0], a->t);
      } else if (a->name == "value_int") {
        Info o = TensorInfo(DataType::kInt64, {});
        o.has_value = true;
        o.value = {a->i};
        Out(n, 0, o);
      } else if (a->name == "value_ints") {
        Info o = TensorInfo(DataType::kInt64, {Fixed(static_cast<int64_t>(a->ints.size()))});
        o.has_value = true;
        o.value = a->ints;
        Out(n, 0, o);
      } else if (a->name == "value_float") {
        Out(n, 0, TensorInfo(DataType::kFloat, {}));
      } else if (a->name == "value_floats") {
        Out(n, 0, TensorInfo(DataType::kFloat, {Fixed(static_cast<int64_t>(a->floats.size()))}));
      }
      return;
    }
    if (op == "Shape") {
      if (!x || !x->has_shape) { Out(n, 0, Unknown(DataType::kInt64)); return; }
      int64_t r = static_cast<int64_t>(x->dims.size());
      int64_t start = n.FindAttribute("start") ? n.FindAttribute("start")->i : 0;
      int64_t end = n.FindAttribute("end") ? n.FindAttribute("end")->i : r;
      start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
      end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
      int64_t len = std::max<int64_t>(0, end - start);
      Info o = TensorInfo(DataType::kInt64, {Fixed(len)});
      o.has_value = true;
      for (int64_t k = start; k < end; ++k) {
        if (!Known(x->dims[k])) { o.has_value = false; break; }
        o.value.push_back(x->dims[k].value);
      }
      if (!o.has_value) o.value.clear();
      o.has_sym = true;
      for (int64_t k = start; k < end; ++k) o.sym.push_back({Known(x->dims[k]), x->dims[k].value, x->dims[k]});
      Out(n, 0, o);
      return;
    }
    if (op == "Size") {
      Info o = TensorInfo(DataType::kInt64, {});
      if (AllKnown(*x)) {
        int64_t c = 1;
        for (auto& d : x->dims) c *= d.value;
        o.has_value = true;
        o.value = {c};
      }
      Out(n, 0, o);
      return;
    }
    if (!x) return;
    if (op == "Reshape") {
      const Info* s = In(n, 1);
      std::vector<SymEntry> target;
      if (s && !s->has_value && SymOf(s, &target)) {
        Out(n, 0, TensorInfo(xt, ReshapeDims(*x, target, n.FindAttribute("allowzero") && n.FindAttribute("allowzero")->i)));
        return;
      }
      if (!s || !s->has_value) { Out(n, 0, Unknown(xt)); return; }
      bool allowzero = n.FindAttribute("allowzero") && n.FindAttribute("allowzero")->i;
      Dims d;
      int neg = -1;
      for (size_t k = 0; k < s->value.size(); ++k) {
        int64_t v = s->value[k];
        if (v == 0 && !allowzero) d.push_back(x->has_shape && k < x->dims.size() ? x->dims[k] : Dim{});
        else if (v == -1) { neg = static_cast<int>(k); d.push_back(Dim{}); }
        else d.push_back(Fixed(v));
      }
      if (neg >= 0 && AllKnown(*x)) {
        int64_t total = 1, rest = 1;
        for (auto& dd : x->dims) total *= dd.value;
        bool ok = true;
        for (size_t k = 0; k < d.size(); ++k)
          if (static_cast<int>(k) != neg) { if (!Known(d[k])) ok = false; else rest *= d[k].value; }
        if (ok && rest > 0) d[neg] = Fixed(total / rest);
      }
      Info o = TensorInfo(xt, d);
      if (x->has_value) { o.has_value = true; o.value = x->value; }
      Out(n, 0, o);
      return;
    }
    if (!x->has_shape) {
      // Without an input shape, only the dtype follows for the remaining rules.
      static const std::set<std::string> kIndexOut = {"NonZero"};
      Out(n, 0, Unknown(kIndexOut.count(op) ? DataType::kInt64 : xt));
      return;
    }
    const size_t r = x->dims.size();
    if (op == "Flatten") {
      int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 1, r);
      Dim a = Fixed(1), b = Fixed(1);
      for (size_t k = 0; k < r; ++k) {
        Dim& t = static_cast<int64_t>(k) < axis ? a : b;
        t = (Known(t) && Known(x->dims[k])) ? Fixed(t.value * x->dims[k].value) : Dim{};
      }
      Out(n, 0, TensorInfo(xt, {a, b}));
      return;
    }
    if (op == "Transpose") {
      std::vector<int64_t> perm = n.FindAttribute("perm") ? n.FindAttribute("perm")->ints : std::vector<int64_t>{};
      if (perm.empty()) for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
      Dims d;
      for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(r)) return;
        d.push_back(x->dims[p]);
      }
      Out(n, 0, TensorInfo(xt, d));
      return;
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      std::vector<int64_t> axes;
      if (!Axes(n, 1, &axes)) { Out(n, 0, Unknown(xt)); return; }
      Dims d;
      if (op == "Unsqueeze") {
        size_t out_r = r + axes.size();
        std::set<int64_t> ax;
        for (int64_t a : axes) ax.insert(NormAxis(a, out_r));
        size_t src = 0;
        for (size_t k = 0; k < out_r; ++k) d.push_back(ax.count(static_cast<int64_t>(k)) ? Fixed(1) : x->dims[src++]);
      } else {
        std::set<int64_t> ax;
        for (int64_t a : axes) ax.insert(NormAxis(a, r));
        for (size_t k = 0; k < r; ++k) {
          if (axes.empty() ? x->dims[k].value == 1 : ax.count(static_cast<int64_t>(k)) > 0) continue;
          if (axes.empty() && !Known(x->dims[k])) { Out(n, 0, Unknown(xt)); return; }
          d.push_back(x->dims[k]);
        }
      }
      Info o = TensorInfo(xt, d);
      if (x->has_value) { o.has_value = true; o.value = x->value; }
      if (x->has_sym && d.size() <= 1) { o.has_sym = true; o.sym = x->sym; }
      Out(n, 0, o);
      return;
    }
    if (op == "Concat") {
      int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0, r);
      Dims d = x->dims;
      bool vals = true, syms = true;
      std::vector<int64_t> v;
      std::vector<SymEntry> sv;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const Info* in = In(n, i);
        if (!in || !in->has_shape || in->dims.size() != r) { Out(n, 0, Unknown(xt)); return; }
        if (i) d[axis] = (Known(d[axis]) && Known(in->dims[axis])) ? Fixed(d[axis].value + in->dims[axis].value) : Dim{};
        if (in->has_value) v.insert(v.end(), in->value.begin(), in->value.end());
        else vals = false;
        std::vector<SymEntry> part;
        if (syms && SymOf(in, &part)) sv.insert(sv.end(), part.begin(), part.end());
        else syms = false;
      }
      Info o = TensorInfo(xt, d);
      if (vals && r == 1) { o.has_value = true; o.value = v; }
      if (syms && r == 1) { o.has_sym = true; o.sym = sv; }
      Out(n, 0, o);
      return;
    }
    if (op == "Gather") {
      const Info* idx = In(n, 1);
      if (!idx || !idx->has_shape) { Out(n, 0, Unknown(xt)); return; }
      int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0, r);
      if (axis < 0 || axis >= static_cast<int64_t>(r)) return;
      Dims d(x->dims.begin(), x->dims.begin() + axis);
      d.insert(d.end(), idx->dims.begin(), idx->dims.end());
      d.insert(d.end(), x->dims.begin() + axis + 1, x->dims.end());
      Info o = TensorInfo(xt, d);
      if (x->has_value && idx->has_value && r == 1) {
        o.has_value = true;
        for (int64_t k : idx->value) {
          int64_t kk = k < 0 ? k + static_cast<int64_t>(x->value.size()) : k;
          if (kk < 0 || kk >= static_cast<int64_t>(x->value.size())) { o.has_value = false; break; }
          o.value.push_back(x->value[kk]);
        }
        if (!o.has_value) o.value.clear();
      }
      std::vector<SymEntry> xs;
      if (!o.has_value && idx->has_value && r == 1 && SymOf(x, &xs)) {
        o.has_sym = true;
        for (int64_t k : idx->value) {
          int64_t kk = k < 0 ? k + static_cast<int64_t>(xs.size()) : k;
          if (kk < 0 || kk >= static_cast<int64_t>(xs.size())) { o.has_sym = false; break; }
          o.sym.push_back(xs[kk]);
        }
        if (!o.has_sym) o.sym.clear();
      }
      Out(n, 0, o);
      return;
    }
    if (op == "Slice") {
      std::vector<int64_t> starts, ends, axes, steps;
      if (const Attribute* a = n.FindAttribute("starts")) {
        starts = a->ints;
        ends = n.FindAttribute("ends") ? n.FindAttribute("ends")->ints : std::vector<int64_t>{};
        axes = n.FindAttribute("axes") ? n.FindAttribute("axes")->ints : std::vector<int64_t>{};
      } else {
        const Info *s = In(n, 1), *e = In(n, 2), *a3 = In(n, 3), *st = In(n, 4);
        if (!s || !e || !s->has_value || !e->has_value || (a3 && !a3->has_value) || (st && !st->has_value)) {
          Dims d(r, Dim{});  // rank is still known
          Out(n, 0, TensorInfo(xt, d));
          return;
        }
        starts = s->value;
        ends = e->value;
        if (a3) axes = a3->value;
        if (st) steps = st->value;
      }
      if (axes.empty()) for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
      if (steps.empty()) steps.assign(starts.size(), 1);
      if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return;
      Dims d = x->dims;
      Info o;
      std::vector<int64_t> sliced_value;
      bool value_ok = x->has_value && r == 1;
      for (size_t k = 0; k < starts.size(); ++k) {
        int64_t ax = NormAxis(axes[k], r);
        if (ax < 0 || ax >= static_cast<int64_t>(r) || steps[k] == 0) return;
        if (!Known(x->dims[ax])) { d[ax] = Dim{}; value_ok = false; continue; }
        int64_t dim = x->dims[ax].value, st = starts[k], en = ends[k], step = steps[k];
        if (st < 0) st += dim;
        if (en < 0) en += dim;
        if (step > 0) {
          st = std::clamp(st, int64_t{0}, dim);
          en = std::clamp(en, int64_t{0}, dim);
          d[ax] = Fixed(en > st ? (en - st + step - 1) / step : 0);
        } else {
          st = std::clamp(st, int64_t{-1}, dim - 1);
          en = std::clamp(en, int64_t{-1}, dim - 1);
          d[ax] = Fixed(st > en ? (st - en - step - 1) / (-step) : 0);
        }
        if (value_ok) for (int64_t i = st; step > 0 ? i < en : i > en; i += step) sliced_value.push_back(x->value[i]);
      }
      o = TensorInfo(xt, d);
      if (value_ok) { o.has_value = true; o.value = sliced_value; }
      Out(n, 0, o);
      return;
    }
    if (op == "Expand") {
      const Info* s = In(n, 1);
      if (!s || !s->has_value) { Out(n, 0, Unknown(xt)); return; }
      Info shape_info;
      shape_info.has_shape = true;
      for (int64_t v : s->value) shape_info.dims.push_back(Fixed(v));
      Dims d;
      if (BroadcastAll({x, &shape_info}, &d)) Out(n, 0, TensorInfo(xt, d));
      return;
    }
    if (op == "ConstantOfShape") {
      if (!x->has_value) return;
      Dims d;
      for (int64_t v : x->value) d.push_back(Fixed(v));
      DataType t = DataType::kFloat;
      if (const Attribute* a = n.FindAttribute("value")) t = a->t.dtype();
      Out(n, 0, TensorInfo(t, d));
      return;
    }
    if (op == "Tile") {
      const Info* rep = In(n, 1);
      if (!rep || !rep->has_value || rep->value.size() != r) { Out(n, 0, Unknown(xt)); return; }
      Dims d = x->dims;
      for (size_t k = 0; k < r; ++k) d[k] = Known(d[k]) ? Fixed(d[k].value * rep->value[k]) : Dim{};
      Out(n, 0, TensorInfo(xt, d));
      return;
    }
    if (op == "Pad") {
      std::vector<int64_t> pads;
      if (const Attribute* a = n.FindAttribute("pads")) pads = a->ints;
      else if (In(n, 1) && In(n, 1)->has_value) pads = In(n, 1)->value;
      else { Out(n, 0, TensorInfo(xt, Dims(r, Dim{}))); return; }
      std::vector<int64_t> axes;
      const Info* ai = In(n, 3);
      if (ai && ai->has_value) axes = ai->value;
      else for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
      if (pads.size() != 2 * axes.size()) return;
      Dims d = x->dims;
      for (size_t k = 0; k < axes.size(); ++k) {
        int64_t ax = NormAxis(axes[k], r);
        if (ax < 0 || ax >= static_cast<int64_t>(r)) return;
        d[ax] = Known(d[ax]) ? Fixed(d[ax].value + pads[k] + pads[k + axes.size()]) : Dim{};
      }
      Out(n, 0, TensorInfo(xt, d));
      return;
    }
    if (op == "MatMul" || op == "MatMulInteger") {
      const Info* y = In(n, 1);
      if (!y || !y->has_shape || r == 0 || y->dims.empty()) { Out(n, 0, Unknown(xt)); return; }
      Dims a = x->dims, b = y->dims;
      bool a1 = a.size() == 1, b1 = b.size() == 1;
      if (a1) a.insert(a.begin(), Fixed(1));
      if (b1) b.push_back(Fixed(1));
      Info ba, bb;
      ba.has_shape = bb.has_shape = true;
      ba.dims.assign(a.begin(), a.end() - 2);
      bb.dims.assign(b.begin(), b.end() - 2);
      Dims d;
      BroadcastAll({&ba, &bb}, &d);
      if (!a1) d.push_back(a[a.size() - 2]);
      if (!b1) d.push_back(b.back());
      Out(n, 0, TensorInfo(op == "MatMulInteger" ? DataType::kInt32 : xt, d));
      return;
    }
    if (op == "Gemm") {
      const Info* y = In(n, 1);
      if (!y || !y->has_shape || r != 2 || y->dims.size() != 2) { Out(n, 0, Unknown(xt)); return; }
      bool ta = n.FindAttribute("transA") && n.FindAttribute("transA")->i;
      bool tb = n.FindAttribute("transB") && n.FindAttribute("transB")->i;
      Out(n, 0, TensorInfo(xt, {x->dims[ta ? 1 : 0], y->dims[tb ? 0 : 1]}));
      return;
    }
    if (op == "Conv" || op == "ConvInteger" || op == "MaxPool" || op == "AveragePool" || op == "LpPool" || op == "ConvTranspose") {
      InferWindowed(n, *x);
      return;
    }
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") {
      Dims d = x->dims;
      for (size_t k = 2; k < r; ++k) d[k] = Fixed(1);
      Out(n, 0, TensorInfo(xt, d));
      return;
    }
    if (op == "Split") {
      int64_t axis = NormAxis(n.FindAttribute("axis") ? n.FindAttribute("axis")->i : 0, r);
      if (axis < 0 || axis >= static_cast<int64_t>(r)) return;
      std::vector<int64_t> sizes;
      // Split lengths given as an input whose values are unknown: the output sizes are unknown.
      const bool split_input = n.inputs.size() > 1 && !n.inputs[1].empty();
      if (const Attribute* a = n.FindAttribute("split")) sizes = a->ints;
      else if (In(n, 1) && In(n, 1)->has_value) sizes = In(n, 1)->value;
      const size_t outs = n.outputs.size();
      if (sizes.empty() && !split_input && Known(x->dims[axis]) && outs) {
        int64_t dim = x->dims[axis].value, chunk = (dim + static_cast<int64_t>(outs) - 1) / static_cast<int64_t>(outs);
        for (size_t k = 0; k < outs; ++k) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * static_cast<int64_t>(k))));
      }
      for (size_t k = 0; k < outs; ++k) {
        Dims d = x->dims;
        d[axis] = k < sizes.size() ? Fixed(sizes[k]) : Dim{};
        Out(n, k, TensorInfo(xt, d));
      }
      return;
    }
    if (op == "DepthToSpace" || op == "SpaceToDepth") {
      int64_t b = n.FindAttribute("blocksize") ? n.FindAttribute("blocksize")->i : 1;
      if (r != 4 || b <= 0) return;
      Dims d = x->dims;
      auto mul = [](const Dim& a, int64_t f) { return Known(a) ? Fixed(a.value * f) : Dim{}; };
      auto div = [](const Dim& a, int64_t f) { return Known(a) ? Fixed(a.value / f) : Dim{}; };
      if (op == "DepthToSpace") { d[1] = div(d[1], b * b); d[2] = mul(d[2], b); d[3] = mul(d[3], b); }
      else { d[1] = mul(d[1], b * b); d[2] = div(d[2], b); d[3] = div(d[3], b); }
      Out(n, 0, TensorInfo(xt, d));
      return;
    }
    // No rule: the dtype of the first input is the best guess only for data-movement ops; leave
    // the value unknown so nothing downstream relies on it.
    for (size_t k = 0; k < n.outputs.size(); ++k) Out(n, k, Unknown(DataType::kUndefined));
  }

  void InferWindowed(const Node& n, const Info& x) {
    const std::string& op = n.op_type;
    const size_t r = x.dims.size();
    if (r < 3) return;
    const size_t sp = r - 2;
    const bool conv = op == "Conv" || op == "ConvInteger" || op == "ConvTranspose";
    const Info* w = conv ? In(n, 1) : nullptr;
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
    if (kernel.size() != sp) { Out(n, 0, TensorInfo(t, d)); return; }
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
      if (const Attribute* os = n.FindAttribute("output_shape")) {
        for (size_t k = 0; k < sp && k < os->ints.size(); ++k) d[2 + k] = Fixed(os->ints[k]);
        Out(n, 0, TensorInfo(t, d));
        return;
      }
      auto outpad = ints("output_padding", 0);
      for (size_t k = 0; k < sp; ++k) {
        const Dim& in = x.dims[2 + k];
        if (!Known(in)) continue;
        int64_t eff = dil[k] * (kernel[k] - 1) + 1;
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") d[2 + k] = Fixed(in.value * strides[k]);
        else d[2 + k] = Fixed(strides[k] * (in.value - 1) + outpad[k] + eff - pads[k] - pads[k + sp]);
      }
      Out(n, 0, TensorInfo(t, d));
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
    Out(n, 0, TensorInfo(t, d));
    if (op == "MaxPool") Out(n, 1, TensorInfo(DataType::kInt64, d));
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
