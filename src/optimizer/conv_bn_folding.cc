// ConvBatchNormFolding: BatchNormalization(Conv(x, W, b), scale, B, mean, var) in inference
// mode becomes one Conv(x, W', b') with
//   k = scale / sqrt(var + epsilon),  W'[m,...] = W[m,...] * k[m],  b' = (b - mean) * k + B.
// Needs: float32 constants W (b optional) and all four BN parameters, of length M = W's
// output channels; the Conv output read only by the BN; the BN's extra (training) outputs
// unused; training_mode 0; spatial 1 (opset < 9). Conv attributes (group, dilations, pads,
// strides, auto_pad) are kept as they are.
#include <cmath>

#include "optimizer/graph_editor.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

const Tensor* FloatVector(GraphEditor& ed, const std::string& name, int64_t len) {
  const Tensor* t = ed.Constant(name);
  if (!t || t->dtype() != DataType::kFloat || t->size() != len) return nullptr;
  for (int64_t d : t->shape())  // [M] (or [M,1,...] style): all but one dim 1
    if (d != 1 && d != len) return nullptr;
  return t;
}

bool FoldBatchNorm(GraphEditor& ed, int bi) {
  const Node& bn = ed.node(bi);
  if (!bn.domain.empty() || bn.op_type != "BatchNormalization" || bn.inputs.size() < 5) return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (!bn.outputs[k].empty() && !ed.Unused(bn.outputs[k])) return false;
  if (AttrInt(bn, "training_mode", 0) != 0) return false;
  if (ed.Opset("") < 9 && AttrInt(bn, "spatial", 1) != 1) return false;
  if (ed.Opset("") < 7 && AttrInt(bn, "is_test", 0) == 0) return false;
  const int ci = ed.Producer(bn.inputs[0]);
  if (ci < 0 || ed.removed(ci)) return false;
  const Node& conv = ed.node(ci);
  if (!conv.domain.empty() || conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1) return false;
  if (!ed.OnlyReader(conv.outputs[0], bi)) return false;
  const Tensor* w = ed.Constant(conv.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat || w->rank() < 3 || w->dim(0) <= 0) return false;
  const int64_t m = w->dim(0);
  const Tensor* b = nullptr;
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
    b = FloatVector(ed, conv.inputs[2], m);
    if (!b) return false;
  }
  const Tensor* scale = FloatVector(ed, bn.inputs[1], m);
  const Tensor* shift = FloatVector(ed, bn.inputs[2], m);
  const Tensor* mean = FloatVector(ed, bn.inputs[3], m);
  const Tensor* var = FloatVector(ed, bn.inputs[4], m);
  if (!scale || !shift || !mean || !var) return false;
  const float eps = AttrFloat(bn, "epsilon", 1e-5f);

  Tensor w2 = w->Clone();
  auto b2r = Tensor::Create(DataType::kFloat, {m});
  if (!b2r.ok()) return false;
  Tensor b2 = std::move(b2r).value();
  const int64_t per = w->size() / m;
  float* wd = w2.data<float>();
  float* bd = b2.data<float>();
  for (int64_t c = 0; c < m; ++c) {
    const double k = scale->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + eps);
    for (int64_t j = 0; j < per; ++j) wd[c * per + j] = static_cast<float>(wd[c * per + j] * k);
    const double bias = b ? b->data<float>()[c] : 0.0;
    bd[c] = static_cast<float>((bias - mean->data<float>()[c]) * k + shift->data<float>()[c]);
  }
  Node fused = conv;
  fused.name = conv.name.empty() ? bn.name : conv.name;
  fused.inputs = {conv.inputs[0], ed.AddInitializer(conv.inputs[1] + "_bn", std::move(w2)),
                  ed.AddInitializer((b ? conv.inputs[2] : conv.inputs[1]) + "_bn_bias", std::move(b2))};
  fused.outputs = {bn.outputs[0]};
  ed.RemoveNode(ci);
  ed.ReplaceNode(bi, std::move(fused));
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeConvBatchNormFoldingPass() {
  return MakeRewritePass("ConvBatchNormFolding", {{{"BatchNormalization"}, FoldBatchNorm}});
}

}  // namespace inferloop
