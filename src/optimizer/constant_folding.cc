// ConstantFolding: a node whose inputs are all constant initializers is run once, here, and
// replaced by initializers holding its outputs. Shape / Size of a value whose shape inference
// fully knows become constants too, and so does CastLike of a constant to a value of known dtype. Skipped: nondeterministic ops (Random*, Bernoulli,
// Multinomial), nodes with subgraphs, nodes writing graph outputs, non-tensor results, kernels
// that fail (the error then happens at run time, as before), and results more than
// PassContext::max_folding_growth_bytes larger than their inputs.
#include <set>

#include "optimizer/graph_editor.h"
#include "optimizer/node_evaluator.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

bool Nondeterministic(const Node& n) {
  static const std::set<std::string> kRandom = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                "RandomUniformLike", "Bernoulli", "Multinomial"};
  return kRandom.count(n.op_type) > 0;
}

// Shape / Size of a value with a fully known inferred shape.
bool FoldShapeOf(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (!n.domain.empty() || (n.op_type != "Shape" && n.op_type != "Size") || n.inputs.empty() || n.outputs.size() != 1)
    return false;
  const TypeInfo* t = ed.Type(n.inputs[0]);
  if (!t || t->kind != TypeInfo::Kind::kTensor || !t->has_shape) return false;
  std::vector<int64_t> dims;
  for (const Dim& d : t->dims) {
    if (d.value < 0) return false;
    dims.push_back(d.value);
  }
  Tensor out;
  if (n.op_type == "Size") {
    int64_t c = 1;
    for (int64_t d : dims) c *= d;
    out = Tensor::FromVector<int64_t>(DataType::kInt64, {}, {c});
  } else {
    const int64_t r = static_cast<int64_t>(dims.size());
    int64_t start = AttrInt(n, "start", 0), end = AttrInt(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    std::vector<int64_t> v;
    for (int64_t k = start; k < end; ++k) v.push_back(dims[k]);
    out = Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
  }
  if (!out.defined()) return false;
  const std::string name = n.outputs[0];
  ed.RemoveNode(i);
  ed.AddNamedInitializer(name, std::move(out));
  return true;
}

// CastLike(c, t) with c constant needs only t's dtype: evaluated as Cast(c, to = dtype(t)).
bool FoldCastLike(GraphEditor& ed, int i, const PassContext& ctx) {
  const Node& n = ed.node(i);
  if (!n.domain.empty() || n.op_type != "CastLike" || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const Tensor* c = ed.Constant(n.inputs[0]);
  const TypeInfo* t = ed.Type(n.inputs[1]);
  if (!c || !t || t->kind != TypeInfo::Kind::kTensor || t->elem_type == DataType::kUndefined) return false;
  Node cast = n;
  cast.op_type = "Cast";
  cast.inputs = {n.inputs[0]};
  SetAttr(cast, "to", static_cast<int64_t>(t->elem_type));
  auto outs = EvaluateNode(cast, ed.Opset(""), {c}, ed.registry(), c->nbytes() * 2 + ctx.max_folding_growth_bytes);
  if (!outs.ok() || !(*outs)[0].is_tensor()) return false;
  const std::string name = n.outputs[0];
  ed.RemoveNode(i);
  ed.AddNamedInitializer(name, std::move((*outs)[0].tensor()));
  return true;
}

// Node i replaced by constants: Shape / Size, CastLike, or run with all inputs constant.
bool FoldNode(GraphEditor& ed, int i) {
  const PassContext& ctx = ed.context();
  const Node& n = ed.node(i);
  if (Nondeterministic(n) || HasSubgraph(n)) return false;
  bool blocked = false, any_used = false;
  for (const auto& o : n.outputs) {
    if (o.empty()) continue;
    if (ed.IsGraphOutput(o)) blocked = true;
    if (!ed.Unused(o)) any_used = true;
  }
  if (blocked || !any_used) return false;
  if (FoldShapeOf(ed, i) || FoldCastLike(ed, i, ctx)) return true;
  if (n.inputs.empty() && n.op_type != "Constant") return false;
  std::vector<const Tensor*> inputs;
  size_t in_bytes = 0;
  for (const auto& in : n.inputs) {
    if (in.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    const Tensor* t = ed.Constant(in);
    if (!t) return false;
    in_bytes += t->nbytes();
    inputs.push_back(t);
  }
  const int64_t opset = ed.Opset(n.domain);
  if (opset < 0) return false;
  const size_t cap = in_bytes + ctx.max_folding_growth_bytes;
  auto outs = EvaluateNode(n, opset, inputs, ed.registry(), cap);
  if (!outs.ok()) return false;
  size_t out_bytes = 0;
  bool all_tensors = true;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    if (!(*outs)[k].is_tensor()) all_tensors = false;
    else out_bytes += (*outs)[k].tensor().nbytes();
  }
  if (!all_tensors || (n.op_type != "Constant" && out_bytes > cap)) return false;
  const std::vector<std::string> names = n.outputs;
  ed.RemoveNode(i);
  for (size_t k = 0; k < names.size(); ++k)
    if (!names[k].empty() && !ed.Unused(names[k])) ed.AddNamedInitializer(names[k], std::move((*outs)[k].tensor()));
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeConstantFoldingPass() { return MakeRewritePass("ConstantFolding", {{{}, FoldNode}}); }

}  // namespace inferloop
