// LayerNormFusion: the primitive form
//   mean = ReduceMean(x, axes)      d = Sub(x, mean)        p = Pow(d, 2) | Mul(d, d)
//   var = ReduceMean(p, axes)       s = Sqrt(Add(var, eps)) n = Div(d, s)
//   [m = Mul(n, gamma)] [y = Add(m, beta)]            (operands of Add/Mul in either order)
// becomes ONNX LayerNormalization(x, gamma, beta, axis = -k, epsilon = eps), where axes are
// the k trailing dims of x (keepdims), eps, gamma and beta are float32 constants and gamma /
// beta hold one value per normalized element (or one in all; absent gamma = ones). Every
// intermediate must be read only inside the pattern. Needs ai.onnx opset >= 17: a model at
// opset 13..16 is raised to 17 (no op used by such models changes meaning there except
// RoiAlign, whose presence blocks it).
#include <functional>

#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

bool UsesOp(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes) {
    if (n.op_type == op) return true;
    for (const auto& a : n.attributes) {
      if (a.g && UsesOp(*a.g, op)) return true;
      for (const auto& sg : a.graphs)
        if (sg && UsesOp(*sg, op)) return true;
    }
  }
  return false;
}

// The model is at ai.onnx opset >= 17, or may be raised to it: 13..16 without RoiAlign.
bool CanRaiseOpsetTo17(GraphEditor& ed) {
  const int64_t opset = ed.Opset("");
  return opset >= 17 || (opset >= 13 && !UsesOp(ed.graph(), "RoiAlign"));
}

// Normalized axes of a ReduceMean (sorted, non-negative) for input rank r; false if unknown.
bool ReduceAxes(GraphEditor& ed, const Node& n, int r, std::vector<int64_t>* axes) {
  if (AttrInt(n, "keepdims", 1) != 1) return false;
  std::vector<int64_t> a;
  if (const Attribute* at = FindAttr(n, "axes")) {
    a = at->ints;
  } else if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const Tensor* t = ed.Constant(n.inputs[1]);
    if (!t || t->dtype() != DataType::kInt64) return false;
    a.assign(t->data<int64_t>(), t->data<int64_t>() + t->size());
  }
  if (a.empty()) {
    if (AttrInt(n, "noop_with_empty_axes", 0) != 0) return false;
    for (int k = 0; k < r; ++k) a.push_back(k);
  }
  for (auto& v : a) {
    if (v < 0) v += r;
    if (v < 0 || v >= r) return false;
  }
  std::sort(a.begin(), a.end());
  *axes = a;
  return true;
}

// A [dims] float32 copy of constant `name` when it holds prod(dims) values laid out as the
// trailing dims (leading 1s allowed) or a single value; undefined Tensor otherwise.
Tensor AffineParam(GraphEditor& ed, const std::string& name, const std::vector<int64_t>& dims, int x_rank) {
  const Tensor* t = ed.Constant(name);
  if (!t || t->dtype() != DataType::kFloat || t->rank() > x_rank) return Tensor();
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  auto out = Tensor::Create(DataType::kFloat, dims);
  if (!out.ok()) return Tensor();
  if (t->size() == 1) {
    std::fill(out->data<float>(), out->data<float>() + count, t->data<float>()[0]);
    return std::move(out).value();
  }
  if (t->size() != count) return Tensor();
  // Same dims once leading 1s are dropped: the values line up with the normalized elements.
  auto strip = [](std::vector<int64_t> v) {
    size_t k = 0;
    while (k < v.size() && v[k] == 1) ++k;
    return std::vector<int64_t>(v.begin() + k, v.end());
  };
  if (strip(t->shape()) != strip(dims)) return Tensor();
  std::copy(t->data<float>(), t->data<float>() + count, out->data<float>());
  return std::move(out).value();
}

bool FuseLayerNorm(GraphEditor& ed, int di) {
  const Node& div = ed.node(di);
  if (div.inputs.size() != 2 || div.outputs.size() != 1) return false;
  const std::string d = div.inputs[0], s = div.inputs[1];
  const int si = SoleProducer(ed, s, di, "Sqrt");
  if (si < 0) return false;
  const std::string ve = ed.node(si).inputs[0];
  const int ei = SoleProducer(ed, ve, si, "Add");
  if (ei < 0) return false;
  const Node& add_eps = ed.node(ei);
  int vi = -1;
  std::optional<double> eps;
  for (int side = 0; side < 2 && vi < 0; ++side) {
    vi = SoleProducer(ed, add_eps.inputs[side], ei, "ReduceMean");
    if (vi >= 0) eps = ed.ScalarConstant(add_eps.inputs[1 - side]);
  }
  if (vi < 0 || !eps) return false;
  const std::string p = ed.node(vi).inputs[0];
  const int pi = SoleProducer(ed, p, vi, "Pow") >= 0 ? ed.Producer(p) : SoleProducer(ed, p, vi, "Mul");
  if (pi < 0) return false;
  const Node& pw = ed.node(pi);
  if (pw.op_type == "Pow") {
    auto e = ed.ScalarConstant(pw.inputs[1]);
    if (pw.inputs[0] != d || !e || *e != 2.0) return false;
  } else if (pw.inputs.size() != 2 || pw.inputs[0] != d || pw.inputs[1] != d) {
    return false;
  }
  // d = Sub(x, mean), read only by the square and the Div.
  const int subi = ed.Producer(d);
  if (!NodeIs(ed, subi, "Sub") || ed.IsGraphOutput(d) || ed.ReadBySubgraph(d)) return false;
  for (int r : ed.Readers(d))
    if (r != pi && r != di) return false;
  const std::string x = ed.node(subi).inputs[0], mean = ed.node(subi).inputs[1];
  const int mi = SoleProducer(ed, mean, subi, "ReduceMean");
  if (mi < 0 || ed.node(mi).inputs[0] != x) return false;
  if (!ed.IsFloat32(x)) return false;
  const TypeInfo* tx = ed.Type(x);
  const int r = static_cast<int>(tx->dims.size());
  if (!tx->has_shape || r == 0) return false;
  std::vector<int64_t> axes1, axes2;
  if (!ReduceAxes(ed, ed.node(mi), r, &axes1) || !ReduceAxes(ed, ed.node(vi), r, &axes2) || axes1 != axes2) return false;
  const int k = static_cast<int>(axes1.size());
  for (int j = 0; j < k; ++j)
    if (axes1[j] != r - k + j) return false;
  std::vector<int64_t> norm_dims;
  for (int j = r - k; j < r; ++j) {
    if (tx->dims[j].value <= 0) return false;
    norm_dims.push_back(tx->dims[j].value);
  }
  // Optional affine tail: Mul(n, gamma), then Add(m, beta), each the only reader of its input.
  int last = di;
  std::string out = div.outputs[0];
  std::vector<int> tail;
  auto affine_step = [&](const char* op) -> Tensor {
    const std::vector<int> readers = ed.Readers(out);
    if (readers.size() != 1 || !NodeIs(ed, readers[0], op) || !ed.OnlyReader(out, readers[0])) return Tensor();
    const std::string param = OtherOperand(ed.node(readers[0]), out);
    Tensor t = param.empty() ? Tensor() : AffineParam(ed, param, norm_dims, r);
    if (t.defined()) {
      last = readers[0];
      out = ed.node(last).outputs[0];
      tail.push_back(last);
    }
    return t;
  };
  Tensor gamma = affine_step("Mul");
  Tensor beta = gamma.defined() ? affine_step("Add") : Tensor();
  if (!ed.IsFloat32(out) && !ed.IsFloat32(div.outputs[0])) return false;
  // Opset: LayerNormalization is ai.onnx 17.
  const int64_t opset = std::max<int64_t>(ed.Opset(""), 17);
  if (!CanRaiseOpsetTo17(ed) || !ed.HasKernel("", "LayerNormalization", opset)) return false;
  ed.model().opsets[""] = opset;
  if (!gamma.defined()) {
    auto ones = Tensor::Create(DataType::kFloat, norm_dims);
    if (!ones.ok()) return false;
    gamma = std::move(ones).value();
    std::fill(gamma.data<float>(), gamma.data<float>() + gamma.size(), 1.f);
  }
  Node ln = MakeNode("LayerNormalization", "", {x, ed.AddInitializer(out + "_ln_scale", std::move(gamma))}, {out},
                     div.name);
  if (beta.defined()) ln.inputs.push_back(ed.AddInitializer(out + "_ln_bias", std::move(beta)));
  SetAttr(ln, "axis", static_cast<int64_t>(-k));
  SetAttr(ln, "epsilon", static_cast<float>(*eps));
  for (int n : {mi, subi, pi, vi, ei, si, di})
    if (n != last) ed.RemoveNode(n);
  for (int n : tail)
    if (n != last) ed.RemoveNode(n);
  ed.ReplaceNode(last, std::move(ln));
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeLayerNormFusionPass() {
  return MakeRewritePass("LayerNormFusion", {{{"Div"}, FuseLayerNorm}});
}

}  // namespace inferloop
