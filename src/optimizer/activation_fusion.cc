// ActivationFusion: act(P(...)) where act is an activation a fused kernel applies
// (fusion_util.h: ActivationOf) and P's output is read only by act becomes one fused node:
//   Conv -> com.inferloop FusedConv, Gemm -> FusedGemm, MatMul (ranks >= 2) -> FusedMatMul,
//   and a FusedConv / FusedGemm / FusedMatMul without an activation takes it on.
// Every attribute of P is carried over. Only for float32 and when the registry has the op.
#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

bool FuseActivation(GraphEditor& ed, int ai) {
  const Node& act_node = ed.node(ai);
  Activation act;
  if (!ActivationOf(ed, act_node, &act)) return false;
  const std::string x = act_node.inputs[0];
  const int pi = ed.Producer(x);
  if (pi < 0 || ed.removed(pi) || !ed.OnlyReader(x, ai) || !ed.IsFloat32(x)) return false;
  const Node& p = ed.node(pi);
  if (p.outputs.size() != 1) return false;
  std::string fused_op;
  if (p.domain.empty()) {
    if (p.op_type == "Conv") fused_op = "FusedConv";
    else if (p.op_type == "Gemm") fused_op = "FusedGemm";
    else if (p.op_type == "MatMul" && p.inputs.size() == 2 && ed.Rank(p.inputs[0]) >= 2 && ed.Rank(p.inputs[1]) >= 2)
      fused_op = "FusedMatMul";
    else return false;
  } else if (p.domain == kInferloopDomain &&
             (p.op_type == "FusedConv" || p.op_type == "FusedGemm" || p.op_type == "FusedMatMul") && HasNoActivation(p)) {
    fused_op = p.op_type;
  } else {
    return false;
  }
  if (!ed.HasKernel(kInferloopDomain, fused_op, 1)) return false;
  Node fused = p;
  fused.op_type = fused_op;
  fused.domain = kInferloopDomain;
  fused.outputs = {act_node.outputs[0]};
  SetActivation(fused, act);
  ed.ImportDomain(kInferloopDomain, 1);
  ed.RemoveNode(pi);
  ed.ReplaceNode(ai, std::move(fused));
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeActivationFusionPass() {
  return MakeRewritePass("ActivationFusion", {{{}, FuseActivation}});
}

}  // namespace inferloop
