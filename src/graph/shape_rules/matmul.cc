// Shape rules of the matrix products: MatMul, MatMulInteger (int32), Gemm.
#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using namespace shape_rules;

// Numpy matmul: broadcast batch dims, [.., M, K] x [.., K, N]; 1-D operands lose their 1.
void InferMatMul(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const InferredValue* y = c.In(1);
  if (!y || !y->has_shape || x.dims.empty() || y->dims.empty()) { c.Out(0, Unknown(x.dtype)); return; }
  Dims a = x.dims, b = y->dims;
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), Fixed(1));
  if (b1) b.push_back(Fixed(1));
  InferredValue ba, bb;
  ba.has_shape = bb.has_shape = true;
  ba.dims.assign(a.begin(), a.end() - 2);
  bb.dims.assign(b.begin(), b.end() - 2);
  Dims d;
  BroadcastAll({&ba, &bb}, &d);
  if (!a1) d.push_back(a[a.size() - 2]);
  if (!b1) d.push_back(b.back());
  c.Out(0, TensorInfo(n.op_type == "MatMulInteger" ? DataType::kInt32 : x.dtype, d));
}

// Gemm: [M, N] of 2-D A and B, transposed per transA / transB.
void InferGemm(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue& x = *c.In(0);
  const InferredValue* y = c.In(1);
  if (!y || !y->has_shape || x.dims.size() != 2 || y->dims.size() != 2) { c.Out(0, Unknown(x.dtype)); return; }
  bool ta = n.FindAttribute("transA") && n.FindAttribute("transA")->i;
  bool tb = n.FindAttribute("transB") && n.FindAttribute("transB")->i;
  c.Out(0, TensorInfo(x.dtype, {x.dims[ta ? 1 : 0], y->dims[tb ? 0 : 1]}));
}

}  // namespace

void RegisterMatmulShapeRules(ShapeRuleRegistry& r) {
  r.Register("", "MatMul", InferMatMul);
  r.Register("", "MatMulInteger", InferMatMul);
  r.Register("", "Gemm", InferGemm);
}

}  // namespace inferloop
