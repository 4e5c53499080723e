// MatMulAddFusion: Add(MatMul(A, B), bias) (either operand order), where bias is a float32
// vector of B's column count N (a constant [1,...,1,N] is flattened, never of higher rank than
// the product), becomes
//   - Gemm(A, B, bias) when A and B are 2-D;
//   - com.inferloop FusedMatMul(A, B, bias) when they are N-D (both ranks >= 2).
// The MatMul output must be read only by the Add.
#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

// The bias as a 1-D value of length n ("" when it is not one).
std::string BiasVector(GraphEditor& ed, const std::string& bias, int64_t n, int out_rank) {
  const TypeInfo* t = ed.Type(bias);
  if (!t || !t->has_shape || t->elem_type != DataType::kFloat || t->dims.empty() ||
      static_cast<int>(t->dims.size()) > out_rank)
    return "";
  if (t->dims.back().value != n) return "";
  if (t->dims.size() == 1) return bias;
  const Tensor* c = ed.Constant(bias);
  if (!c || c->size() != n) return "";
  auto flat = c->Reshaped({n});
  if (!flat.ok()) return "";
  return ed.AddInitializer(bias + "_vec", flat->Clone());
}

bool FuseMatMulAdd(GraphEditor& ed, int ai) {
  const Node& add = ed.node(ai);
  if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) return false;
  for (int side = 0; side < 2; ++side) {
    const std::string mm_out = add.inputs[side];
    const int mi = SoleProducer(ed, mm_out, ai, "MatMul");
    if (mi < 0) continue;
    const Node& mm = ed.node(mi);
    if (mm.inputs.size() != 2 || !ed.IsFloat32(mm_out) || !ed.IsFloat32(add.outputs[0])) continue;
    const int ra = ed.Rank(mm.inputs[0]), rb = ed.Rank(mm.inputs[1]);
    if (ra < 2 || rb < 2) continue;
    const TypeInfo* tb = ed.Type(mm.inputs[1]);
    const int64_t n = tb->dims.back().value;
    if (n <= 0) continue;
    const int out_rank = std::max(ra, rb);
    const std::string bias = BiasVector(ed, add.inputs[1 - side], n, out_rank);
    if (bias.empty()) continue;
    Node fused;
    if (ra == 2 && rb == 2 && ed.Opset("") >= 7) {
      fused = MakeNode("Gemm", "", {mm.inputs[0], mm.inputs[1], bias}, {add.outputs[0]}, mm.name);
    } else if (ed.HasKernel(kInferloopDomain, "FusedMatMul", 1)) {
      fused = MakeNode("FusedMatMul", kInferloopDomain, {mm.inputs[0], mm.inputs[1], bias}, {add.outputs[0]}, mm.name);
      ed.ImportDomain(kInferloopDomain, 1);
    } else {
      continue;
    }
    ed.RemoveNode(mi);
    ed.ReplaceNode(ai, std::move(fused));
    return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<GraphPass> MakeMatMulAddFusionPass() {
  return MakeRewritePass("MatMulAddFusion", {{{"Add"}, FuseMatMulAdd}});
}

}  // namespace inferloop
