// TransposeReshapeCancellation:
//  - Transpose(Transpose(x, p1), p2): one Transpose(x, p1 o p2), or none when that is the
//    identity permutation; a lone identity Transpose goes too.
//  - Reshape(Reshape(x, s1), s2) with s2 constant and free of 0 ("copy this dim") entries:
//    Reshape(x, s2).
//  - Reshape(x, s) whose output has x's shape (by inference, or s copies every dim) goes.
#include <numeric>

#include "optimizer/graph_editor.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

// The node's permutation (explicit, or the default reversal when the rank is known).
bool PermOf(GraphEditor& ed, const Node& n, std::vector<int64_t>* perm) {
  *perm = AttrInts(n, "perm");
  if (perm->empty()) {
    const int r = ed.Rank(n.inputs[0]);
    if (r < 0) return false;
    for (int k = r - 1; k >= 0; --k) perm->push_back(k);
  }
  std::vector<bool> seen(perm->size(), false);
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm->size()) || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

bool IsIdentityPerm(const std::vector<int64_t>& p) {
  for (size_t k = 0; k < p.size(); ++k)
    if (p[k] != static_cast<int64_t>(k)) return false;
  return true;
}

bool IsOp(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// Constant int64 shape vector.
bool ConstShape(GraphEditor& ed, const std::string& name, std::vector<int64_t>* s) {
  const Tensor* t = ed.Constant(name);
  if (!t || t->dtype() != DataType::kInt64 || t->rank() != 1) return false;
  s->assign(t->data<int64_t>(), t->data<int64_t>() + t->size());
  return true;
}

// One data input and one output, both named.
bool OneInOneOut(const Node& n) {
  return !n.inputs.empty() && !n.inputs[0].empty() && n.outputs.size() == 1 && !n.outputs[0].empty();
}

bool CancelTranspose(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (!OneInOneOut(n)) return false;
  std::vector<int64_t> p2;
  if (!PermOf(ed, n, &p2)) return false;
  if (IsIdentityPerm(p2)) return ed.BypassNode(i, n.inputs[0]);
  const int pi = ed.Producer(n.inputs[0]);
  if (pi < 0 || ed.removed(pi) || !IsOp(ed.node(pi), "Transpose") || ed.node(pi).inputs.empty()) return false;
  std::vector<int64_t> p1;
  if (!PermOf(ed, ed.node(pi), &p1) || p1.size() != p2.size()) return false;
  std::vector<int64_t> c(p2.size());
  for (size_t j = 0; j < p2.size(); ++j) c[j] = p1[p2[j]];
  const std::string x = ed.node(pi).inputs[0];
  if (IsIdentityPerm(c)) return ed.BypassNode(i, x);
  Node merged = n;
  merged.inputs = {x};
  SetAttr(merged, "perm", c);
  ed.ReplaceNode(i, std::move(merged));
  return true;
}

bool CancelReshape(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (!OneInOneOut(n)) return false;
  if (n.inputs.size() < 2 || n.inputs[1].empty()) return false;
  const std::string x = n.inputs[0], y = n.outputs[0];
  std::vector<int64_t> s;
  const bool const_shape = ConstShape(ed, n.inputs[1], &s);
  const bool allowzero = AttrInt(n, "allowzero", 0) != 0;
  // Same shape in, same shape out.
  if (ed.SameShape(x, y)) return ed.BypassNode(i, x);
  const TypeInfo* tx = ed.Type(x);
  if (const_shape && tx && tx->has_shape && tx->dims.size() == s.size()) {
    bool same = true;
    int minus_one = 0;
    for (size_t k = 0; k < s.size() && same; ++k) {
      if (s[k] == 0 && !allowzero) continue;
      if (s[k] == -1 && ++minus_one == 1) continue;
      same = tx->dims[k].value >= 0 && tx->dims[k].value == s[k];
    }
    if (same) return ed.BypassNode(i, x);
  }
  // Reshape of a Reshape.
  if (!const_shape) return false;
  for (int64_t v : s)
    if (v == 0 && !allowzero) return false;
  const int pi = ed.Producer(x);
  if (pi < 0 || ed.removed(pi) || !IsOp(ed.node(pi), "Reshape") || ed.node(pi).inputs.empty()) return false;
  Node merged = n;
  merged.inputs[0] = ed.node(pi).inputs[0];
  ed.ReplaceNode(i, std::move(merged));
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeTransposeReshapeCancellationPass() {
  return MakeRewritePass("TransposeReshapeCancellation",
                         {{{"Transpose"}, CancelTranspose}, {{"Reshape"}, CancelReshape}});
}

}  // namespace inferloop
