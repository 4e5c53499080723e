// GeluFusion: the primitive forms of GELU become com.inferloop Gelu(x):
//   erf:  e = Erf(Div(x, sqrt(2)) | Mul(x, 1/sqrt(2)))          approximate = "none"
//   tanh: e = Tanh(Mul(Add(x, Mul(Pow(x, 3) | Mul(x, Mul(x, x)), 0.044715)), sqrt(2/pi)))
//                                                                 approximate = "tanh"
// followed by a = Add(e, 1) (or Sum(e, 1)) and the product 0.5 * x * a in any grouping:
//   Mul(Mul(x, a), 0.5) | Mul(Mul(x, 0.5), a) | Mul(x, Mul(a, 0.5)).
// Operands of Add/Mul may come in either order; constants are float32 scalars matched to 1e-4
// relative. Every intermediate must be read only inside the pattern; x is float32.
#include <cmath>

#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;

// Add, or a Sum of two operands (as ONNX's own Gelu function body writes it).
bool IsAdd(GraphEditor& ed, int i) {
  return NodeIs(ed, i, "Add") || (NodeIs(ed, i, "Sum") && ed.node(i).inputs.size() == 2);
}

bool IsOp(GraphEditor& ed, int i, const char* op) { return std::string(op) == "Add" ? IsAdd(ed, i) : NodeIs(ed, i, op); }

// Node i is a binary op whose other operand (besides `v`) is a scalar constant near `c`.
bool BinaryWithConst(GraphEditor& ed, int i, const char* op, const std::string& v, double c) {
  if (!IsOp(ed, i, op)) return false;
  const std::string other = OtherOperand(ed.node(i), v);
  if (other.empty()) return false;
  auto k = ed.ScalarConstant(other);
  return k && NearlyEqual(*k, c);
}

// The non-constant operand of binary node i when the other is a scalar constant near c.
std::string VarOperand(GraphEditor& ed, int i, const char* op, double c) {
  if (!NodeIs(ed, i, op) || ed.node(i).inputs.size() != 2) return "";
  for (int side = 0; side < 2; ++side) {
    auto k = ed.ScalarConstant(ed.node(i).inputs[1 - side]);
    if (k && NearlyEqual(*k, c) && !ed.Constant(ed.node(i).inputs[side])) return ed.node(i).inputs[side];
  }
  return "";
}

// Matches the argument of Erf; returns x and appends the matched nodes.
std::string ErfArgument(GraphEditor& ed, const std::string& arg, int erf_i, std::vector<int>* nodes) {
  const int p = ed.Producer(arg);
  if (p < 0 || !ed.OnlyReader(arg, erf_i)) return "";
  std::string x = VarOperand(ed, p, "Div", kSqrt2);
  if (!x.empty() && ed.node(p).inputs[0] != x) x.clear();  // x / sqrt2, not sqrt2 / x
  if (x.empty()) x = VarOperand(ed, p, "Mul", 1.0 / kSqrt2);
  if (!x.empty()) nodes->push_back(p);
  return x;
}

// Matches the argument of Tanh (sqrt(2/pi) * (x + 0.044715 x^3)); returns x.
std::string TanhArgument(GraphEditor& ed, const std::string& arg, int tanh_i, std::vector<int>* nodes) {
  const int s = ed.Producer(arg);
  if (s < 0 || !ed.OnlyReader(arg, tanh_i)) return "";
  const std::string r = VarOperand(ed, s, "Mul", kSqrt2OverPi);
  const int ri = ed.Producer(r);
  if (r.empty() || !IsAdd(ed, ri) || !ed.OnlyReader(r, s) || ed.node(ri).inputs.size() != 2) return "";
  for (int side = 0; side < 2; ++side) {
    const std::string x = ed.node(ri).inputs[side], q = ed.node(ri).inputs[1 - side];
    const int qi = ed.Producer(q);
    if (qi < 0 || !ed.OnlyReader(q, ri)) continue;
    const std::string cube = VarOperand(ed, qi, "Mul", 0.044715);
    const int ci = ed.Producer(cube);
    if (cube.empty() || ci < 0 || !ed.OnlyReader(cube, qi)) continue;
    std::vector<int> found = {s, ri, qi, ci};
    const Node& c = ed.node(ci);
    bool ok = false;
    if (NodeIs(ed, ci, "Pow") && c.inputs.size() == 2 && c.inputs[0] == x) {
      auto e = ed.ScalarConstant(c.inputs[1]);
      ok = e && *e == 3.0;
    } else if (NodeIs(ed, ci, "Mul") && c.inputs.size() == 2) {
      // x * (x * x) in any order.
      for (int k = 0; k < 2 && !ok; ++k) {
        const std::string sq = c.inputs[1 - k];
        const int sqi = ed.Producer(sq);
        if (c.inputs[k] == x && NodeIs(ed, sqi, "Mul") && ed.OnlyReader(sq, ci) && ed.node(sqi).inputs.size() == 2 &&
            ed.node(sqi).inputs[0] == x && ed.node(sqi).inputs[1] == x) {
          ok = true;
          found.push_back(sqi);
        }
      }
    }
    if (!ok) continue;
    nodes->insert(nodes->end(), found.begin(), found.end());
    return x;
  }
  return "";
}

// From a = Add(e, 1): matches 0.5 * x * a; returns the index of the final Mul (appending the
// intermediate nodes) or -1.
int ProductTail(GraphEditor& ed, const std::string& a, const std::string& x, std::vector<int>* nodes) {
  const std::vector<int> ra = ed.Readers(a);
  if (ra.size() != 1 || !ed.OnlyReader(a, ra[0]) || !NodeIs(ed, ra[0], "Mul")) return -1;
  const int m1 = ra[0];
  const std::string other = OtherOperand(ed.node(m1), a);
  if (other.empty()) return -1;
  const std::string m1_out = ed.node(m1).outputs[0];
  if (other == x) {  // Mul(Mul(x, a), 0.5)
    const std::vector<int> r = ed.Readers(m1_out);
    if (r.size() == 1 && ed.OnlyReader(m1_out, r[0]) && BinaryWithConst(ed, r[0], "Mul", m1_out, 0.5)) {
      nodes->push_back(m1);
      return r[0];
    }
    return -1;
  }
  const int hi = ed.Producer(other);
  if (hi >= 0 && ed.OnlyReader(other, m1) && VarOperand(ed, hi, "Mul", 0.5) == x) {  // Mul(Mul(x, 0.5), a)
    nodes->push_back(hi);
    return m1;
  }
  if (auto k = ed.ScalarConstant(other); k && NearlyEqual(*k, 0.5)) {  // Mul(x, Mul(a, 0.5))
    const std::vector<int> r = ed.Readers(m1_out);
    if (r.size() == 1 && ed.OnlyReader(m1_out, r[0]) && NodeIs(ed, r[0], "Mul") && OtherOperand(ed.node(r[0]), m1_out) == x) {
      nodes->push_back(m1);
      return r[0];
    }
  }
  return -1;
}

bool FuseGelu(GraphEditor& ed, int ei) {
  const Node& e = ed.node(ei);
  if (e.inputs.size() != 1 || e.outputs.size() != 1) return false;
  const bool is_erf = e.op_type == "Erf";
  std::vector<int> nodes = {ei};
  const std::string x = is_erf ? ErfArgument(ed, e.inputs[0], ei, &nodes) : TanhArgument(ed, e.inputs[0], ei, &nodes);
  if (x.empty() || !ed.IsFloat32(x)) return false;
  const std::string e_out = e.outputs[0];
  const std::vector<int> re = ed.Readers(e_out);
  if (re.size() != 1 || !ed.OnlyReader(e_out, re[0]) || !BinaryWithConst(ed, re[0], "Add", e_out, 1.0)) return false;
  const int ai = re[0];
  nodes.push_back(ai);
  const int last = ProductTail(ed, ed.node(ai).outputs[0], x, &nodes);
  if (last < 0 || !ed.HasKernel(kInferloopDomain, "Gelu", 1)) return false;
  Node gelu = MakeNode("Gelu", kInferloopDomain, {x}, {ed.node(last).outputs[0]}, e.name);
  SetAttr(gelu, "approximate", std::string(is_erf ? "none" : "tanh"));
  ed.ImportDomain(kInferloopDomain, 1);
  for (int n : nodes) ed.RemoveNode(n);
  ed.ReplaceNode(last, std::move(gelu));
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeGeluFusionPass() {
  return MakeRewritePass("GeluFusion", {{{"Erf", "Tanh"}, FuseGelu}});
}

}  // namespace inferloop
