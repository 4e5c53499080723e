// IdentityElimination: removes Identity, and Dropout in inference mode (mask unused; no
// training_mode input or a constant false one; opset < 7 only with is_test set), rewiring
// readers to the input. A graph output keeps its name: the input's producer writes it instead;
// when the input is a graph input or initializer (or itself a graph output) the node stays.
#include "optimizer/graph_editor.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

bool IsInferenceDropout(GraphEditor& ed, const Node& n) {
  if (n.op_type != "Dropout" || n.inputs.empty()) return false;
  if (n.outputs.size() > 1 && !n.outputs[1].empty() && !ed.Unused(n.outputs[1])) return false;
  if (ed.Opset("") < 7 && AttrInt(n, "is_test", 0) == 0) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* t = ed.Constant(n.inputs[2]);
    if (!t || t->dtype() != DataType::kBool || t->size() != 1 || t->data<uint8_t>()[0]) return false;
  }
  return true;
}

bool BypassIdentity(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty() || n.outputs[0].empty()) return false;
  if (n.op_type != "Identity" && !IsInferenceDropout(ed, n)) return false;
  return ed.BypassNode(i, n.inputs[0]);
}

}  // namespace

std::unique_ptr<GraphPass> MakeIdentityEliminationPass() {
  return MakeRewritePass("IdentityElimination", {{{"Identity", "Dropout"}, BypassIdentity}});
}

}  // namespace inferloop
