// ResidualAddFusion: Add(Conv(x, W, b), z) (either operand order), optionally followed by an
// activation, becomes com.inferloop FusedConv(x, W, b, z) with that activation:
//   Y = act(Conv(x, W, b) + z).
// Needs: the conv (a Conv, or a FusedConv without activation or Z) read only by the Add; z of
// exactly the conv output's inferred shape (no broadcasting) and not the conv output itself;
// float32; the activation taken only when the Add output is read by it alone.
#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

bool FuseResidualAdd(GraphEditor& ed, int ai) {
  const Node& add = ed.node(ai);
  if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) return false;
  if (!ed.HasKernel(kInferloopDomain, "FusedConv", 1)) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string conv_out = add.inputs[side], z = add.inputs[1 - side];
    const int ci = ed.Producer(conv_out);
    if (ci < 0 || ed.removed(ci) || !ed.OnlyReader(conv_out, ai)) continue;
    const Node& conv = ed.node(ci);
    const bool plain = conv.domain.empty() && conv.op_type == "Conv";
    const bool fused = conv.domain == kInferloopDomain && conv.op_type == "FusedConv" && HasNoActivation(conv) &&
                       (conv.inputs.size() < 4 || conv.inputs[3].empty());
    if ((!plain && !fused) || conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    if (!ed.IsFloat32(conv_out) || !ed.IsFloat32(z) || !ed.SameShape(conv_out, z)) continue;
    Node f = conv;
    f.op_type = "FusedConv";
    f.domain = kInferloopDomain;
    f.inputs.resize(4);
    f.inputs[3] = z;
    // An activation right after, reading the sum alone, joins.
    int last = ai;
    std::string out = add.outputs[0];
    const std::vector<int> readers = ed.Readers(out);
    Activation act;
    if (readers.size() == 1 && ed.OnlyReader(out, readers[0]) && ActivationOf(ed, ed.node(readers[0]), &act)) {
      last = readers[0];
      out = ed.node(last).outputs[0];
      SetActivation(f, act);
    }
    f.outputs = {out};
    ed.ImportDomain(kInferloopDomain, 1);
    ed.RemoveNode(ci);
    if (last != ai) ed.RemoveNode(ai);
    ed.ReplaceNode(last, std::move(f));
    return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<GraphPass> MakeResidualAddFusionPass() {
  return MakeRewritePass("ResidualAddFusion", {{{"Add"}, FuseResidualAdd}});
}

}  // namespace inferloop
