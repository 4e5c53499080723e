// AttentionFusion: multi-head attention over projected q, k, v ([batch, seq, hidden]):
//   qt = Transpose(Reshape(q, [B, Sq, H, D]), [0,2,1,3])
//   kt = Transpose(Reshape(k, [B, Sk, H, D]), [0,2,3,1])
//   vt = Transpose(Reshape(v, [B, Sk, H, D]), [0,2,1,3])
//   s = MatMul(qt, kt) [Div(s, c) | Mul(s, c)] [Add(s, mask)]
//   p = Softmax(s, axis = -1)
//   y = Reshape(Transpose(MatMul(p, vt), [0,2,1,3]), [B, Sq, H*D])
// becomes com.inferloop MultiHeadAttention(q, k, v, mask) with num_heads = H and scale = 1/c,
// c or 1. Reshape targets may be constants or built at run time (Concat of Unsqueeze(Gather(
// Shape(t), i)) and constants, as exporters do); every entry must be provably right: B and S
// the input's own dims, H and D constants with H*D = hidden. q, k, v are float32 of rank 3;
// the mask is float32 of rank <= 4 (it broadcasts as the Add did). Every intermediate must be
// read only inside the pattern.
#include <set>
#include <utility>

#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

// One entry of a shape vector: a known value, or dimension `axis` of value `of`.
struct ShapeEntry {
  bool known = false;
  int64_t value = 0;
  std::string of;
  int64_t axis = -1;
};

// Axes of an Unsqueeze (attribute before opset 13, constant input after).
bool UnsqueezeAxes(GraphEditor& ed, const Node& n, std::vector<int64_t>* axes) {
  if (const Attribute* a = FindAttr(n, "axes")) {
    *axes = a->ints;
    return true;
  }
  if (n.inputs.size() < 2) return false;
  const Tensor* t = ed.Constant(n.inputs[1]);
  if (!t || t->dtype() != DataType::kInt64) return false;
  axes->assign(t->data<int64_t>(), t->data<int64_t>() + t->size());
  return true;
}

// Entries of `value` read as a 1-D int64 shape vector; false when some cannot be resolved.
bool ResolvePiece(GraphEditor& ed, const std::string& value, std::vector<ShapeEntry>* out, int depth = 0) {
  if (depth > 4) return false;
  if (const Tensor* t = ed.Constant(value)) {
    if (t->dtype() != DataType::kInt64 || t->rank() > 1) return false;
    for (int64_t k = 0; k < t->size(); ++k) out->push_back({true, t->data<int64_t>()[k], "", -1});
    return true;
  }
  const int p = ed.Producer(value);
  if (p < 0 || ed.removed(p)) return false;
  const Node& n = ed.node(p);
  if (!n.domain.empty() || n.inputs.empty()) return false;
  if (n.op_type == "Concat") {
    if (AttrInt(n, "axis", 0) != 0) return false;
    for (const auto& in : n.inputs)
      if (!ResolvePiece(ed, in, out, depth + 1)) return false;
    return true;
  }
  if (n.op_type == "Unsqueeze") {  // a scalar made 1-D
    std::vector<int64_t> axes;
    if (!UnsqueezeAxes(ed, n, &axes) || axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return false;
    if (ed.Rank(n.inputs[0]) != 0) return false;
    return ResolvePiece(ed, n.inputs[0], out, depth + 1);
  }
  if (n.op_type == "Gather") {  // Gather(Shape(t), i) with constant i
    if (AttrInt(n, "axis", 0) != 0 || n.inputs.size() != 2) return false;
    const int si = ed.Producer(n.inputs[0]);
    if (!NodeIs(ed, si, "Shape") || AttrInt(ed.node(si), "start", 0) != 0 || FindAttr(ed.node(si), "end")) return false;
    const Tensor* idx = ed.Constant(n.inputs[1]);
    if (!idx || idx->dtype() != DataType::kInt64 || idx->rank() > 1) return false;
    const std::string of = ed.node(si).inputs[0];
    const int r = ed.Rank(of);
    if (r < 0) return false;
    for (int64_t k = 0; k < idx->size(); ++k) {
      int64_t a = idx->data<int64_t>()[k];
      if (a < 0) a += r;
      if (a < 0 || a >= r) return false;
      out->push_back({false, 0, of, a});
    }
    return true;
  }
  return false;
}

// The Reshape's target entries.
bool ReshapeTarget(GraphEditor& ed, const Node& reshape, std::vector<ShapeEntry>* out) {
  if (reshape.inputs.size() != 2 || AttrInt(reshape, "allowzero", 0) != 0) return false;
  return ResolvePiece(ed, reshape.inputs[1], out);
}

// Follows dimension `axis` of `value` back through ops that pass that dim through unchanged
// (elementwise ops with a lower-rank constant operand, unary ops, MatMul / FusedMatMul / Gemm
// batch and row dims, LayerNormalization) to where it comes from.
std::pair<std::string, int> DimOrigin(GraphEditor& ed, std::string value, int axis) {
  static const std::set<std::string> kUnary = {"Relu", "Gelu", "Erf", "Tanh", "Sigmoid", "Identity", "Dropout",
                                               "LayerNormalization", "Softmax", "Neg", "Sqrt", "Exp",
                                               "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"};
  for (int guard = 0; guard < 64; ++guard) {
    const int p = ed.Producer(value);
    if (p < 0 || ed.removed(p)) break;
    const Node& n = ed.node(p);
    const int r = ed.Rank(value);
    if (n.inputs.empty() || r < 0 || axis >= r) break;
    std::string next;
    if (kUnary.count(n.op_type) && (n.domain.empty() || n.op_type == "Gelu")) {
      next = n.inputs[0];
    } else if (n.domain.empty() && (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" || n.op_type == "Div") &&
               n.inputs.size() == 2) {
      // The operand of full rank carries the dim when the other one does not reach `axis`.
      for (int side = 0; side < 2 && next.empty(); ++side) {
        const int ro = ed.Rank(n.inputs[1 - side]);
        if (ed.Rank(n.inputs[side]) == r && ro >= 0 && axis < r - ro) next = n.inputs[side];
      }
    } else if ((n.op_type == "MatMul" || n.op_type == "FusedMatMul") && n.inputs.size() >= 2) {
      // A's batch and row dims pass when B is a matrix.
      if (ed.Rank(n.inputs[1]) == 2 && ed.Rank(n.inputs[0]) == r && axis < r - 1) next = n.inputs[0];
    } else if ((n.op_type == "QMatMul" || n.op_type == "DynamicQMatMul") && n.domain == kInferloopDomain &&
               n.inputs.size() >= 4) {  // B is [K, N]
      if (ed.Rank(n.inputs[0]) == r && axis < r - 1) next = n.inputs[0];
    } else if ((n.op_type == "Gemm" || n.op_type == "FusedGemm") && axis == 0 && AttrInt(n, "transA", 0) == 0) {
      next = n.inputs[0];
    }
    if (next.empty()) break;
    value = next;
  }
  return {value, axis};
}

// Entry e provably equals dimension `axis` of `value` (a 0 entry copies the reshape input's
// dim `axis`, given as `input`): both are the same tensor's dim, or inference gives both the
// same fixed size or symbol.
bool EntryIsDim(GraphEditor& ed, const ShapeEntry& e, const std::string& input, const std::string& value, int axis) {
  const TypeInfo* tv = ed.Type(value);
  const Dim* want = tv && tv->has_shape && axis < static_cast<int>(tv->dims.size()) ? &tv->dims[axis] : nullptr;
  if (e.known) {
    if (e.value == 0) return DimOrigin(ed, input, axis) == DimOrigin(ed, value, axis);
    return want && want->value == e.value;
  }
  if (DimOrigin(ed, e.of, static_cast<int>(e.axis)) == DimOrigin(ed, value, axis)) return true;
  const TypeInfo* to = ed.Type(e.of);
  if (!want || !to || !to->has_shape || e.axis >= static_cast<int64_t>(to->dims.size())) return false;
  const Dim& got = to->dims[e.axis];
  if (want->value >= 0 || got.value >= 0) return want->value == got.value;
  return !want->symbol.empty() && want->symbol == got.symbol;
}

// The entry's value when it is a constant or a dim inference knows; -1 otherwise.
int64_t EntryValue(GraphEditor& ed, const ShapeEntry& e) {
  if (e.known) return e.value;
  const TypeInfo* t = ed.Type(e.of);
  if (!t || !t->has_shape || e.axis >= static_cast<int64_t>(t->dims.size())) return -1;
  return t->dims[e.axis].value;
}

struct Heads {
  std::string input;  // the [B, S, H*D] value
  int64_t h = 0, d = 0;
};

// Matches Transpose(Reshape(x, [B, S, H, D]), perm) read by `reader` and returns x, H, D.
bool SplitHeads(GraphEditor& ed, const std::string& value, int reader, const std::vector<int64_t>& perm, Heads* out,
                std::vector<int>* nodes) {
  const int ti = SoleProducer(ed, value, reader, "Transpose");
  if (ti < 0 || AttrInts(ed.node(ti), "perm") != perm) return false;
  const int ri = SoleProducer(ed, ed.node(ti).inputs[0], ti, "Reshape");
  if (ri < 0) return false;
  const Node& r = ed.node(ri);
  const std::string x = r.inputs[0];
  if (ed.Rank(x) != 3 || !ed.IsFloat32(x)) return false;
  const int64_t hidden = ed.Type(x)->dims[2].value;
  std::vector<ShapeEntry> t;
  if (!ReshapeTarget(ed, r, &t) || t.size() != 4 || !t[2].known || t[2].value <= 0) return false;
  if (!EntryIsDim(ed, t[0], x, x, 0) || !EntryIsDim(ed, t[1], x, x, 1)) return false;
  const int64_t h = t[2].value;
  int64_t d = t[3].known ? t[3].value : 0;
  if (d == -1 && hidden > 0 && hidden % h == 0) d = hidden / h;
  if (d <= 0 || hidden != h * d) return false;
  out->input = x;
  out->h = h;
  out->d = d;
  nodes->push_back(ti);
  nodes->push_back(ri);
  return true;
}

// Matches from the Softmax's input `s` (read by node `cur`) back to MatMul(qt, kt), given the
// mask operand already peeled off, then forwards to the final Reshape. Edits only on success.
bool FuseFrom(GraphEditor& ed, int smi, std::string s, int cur, const std::string& mask, std::vector<int> nodes) {
  const Node& sm = ed.node(smi);
  int p = ed.Producer(s);
  double scale = 1.0;
  if ((NodeIs(ed, p, "Div") || NodeIs(ed, p, "Mul")) && ed.OnlyReader(s, cur)) {
    const Node& sc = ed.node(p);
    if (sc.inputs.size() != 2) return false;
    auto c = ed.ScalarConstant(sc.inputs[1]);
    std::string src = sc.inputs[0];
    if (!c && sc.op_type == "Mul") {
      c = ed.ScalarConstant(sc.inputs[0]);
      src = sc.inputs[1];
    }
    if (!c || *c == 0.0) return false;
    scale = sc.op_type == "Div" ? 1.0 / *c : *c;
    nodes.push_back(p);
    cur = p;
    s = src;
    p = ed.Producer(s);
  }
  if (!NodeIs(ed, p, "MatMul") || !ed.OnlyReader(s, cur)) return false;
  const int qk = p;
  nodes.push_back(qk);
  Heads q, k, v;
  if (!SplitHeads(ed, ed.node(qk).inputs[0], qk, {0, 2, 1, 3}, &q, &nodes) ||
      !SplitHeads(ed, ed.node(qk).inputs[1], qk, {0, 2, 3, 1}, &k, &nodes))
    return false;
  // Forwards from the Softmax: MatMul(p, vt) -> Transpose -> Reshape.
  const std::string probs = sm.outputs[0];
  const std::vector<int> rp = ed.Readers(probs);
  if (rp.size() != 1 || !NodeIs(ed, rp[0], "MatMul") || !ed.OnlyReader(probs, rp[0]) || ed.node(rp[0]).inputs[0] != probs)
    return false;
  const int pv = rp[0];
  nodes.push_back(pv);
  if (!SplitHeads(ed, ed.node(pv).inputs[1], pv, {0, 2, 1, 3}, &v, &nodes)) return false;
  if (q.h != k.h || q.h != v.h || q.d != k.d || q.d != v.d) return false;
  const std::string o = ed.node(pv).outputs[0];
  const std::vector<int> ro = ed.Readers(o);
  if (ro.size() != 1 || !NodeIs(ed, ro[0], "Transpose") || !ed.OnlyReader(o, ro[0]) ||
      AttrInts(ed.node(ro[0]), "perm") != std::vector<int64_t>{0, 2, 1, 3})
    return false;
  const int ot = ro[0];
  nodes.push_back(ot);
  const std::string ot_out = ed.node(ot).outputs[0];
  const std::vector<int> rr = ed.Readers(ot_out);
  if (rr.size() != 1 || !NodeIs(ed, rr[0], "Reshape") || !ed.OnlyReader(ot_out, rr[0])) return false;
  const int fin = rr[0];
  std::vector<ShapeEntry> t;
  if (!ReshapeTarget(ed, ed.node(fin), &t) || t.size() != 3) return false;
  // [B, Sq, H*D]: a 0 entry copies ot's dims 0 / 1, which are B and Sq.
  auto batch_ok = [&](const ShapeEntry& e, int axis) {
    if (e.known && e.value == 0) return true;
    return EntryIsDim(ed, e, "", q.input, axis);
  };
  if (!batch_ok(t[0], 0) || !batch_ok(t[1], 1)) return false;
  const int64_t merged = EntryValue(ed, t[2]);
  if (merged != q.h * q.d && !(t[2].known && merged == -1)) return false;
  if (!ed.HasKernel(kInferloopDomain, "MultiHeadAttention", 1)) return false;
  Node mha = MakeNode("MultiHeadAttention", kInferloopDomain, {q.input, k.input, v.input}, {ed.node(fin).outputs[0]},
                      ed.node(qk).name);
  if (!mask.empty()) mha.inputs.push_back(mask);
  SetAttr(mha, "num_heads", q.h);
  SetAttr(mha, "scale", static_cast<float>(scale));
  ed.ImportDomain(kInferloopDomain, 1);
  for (int n : nodes) ed.RemoveNode(n);
  ed.ReplaceNode(fin, std::move(mha));
  return true;
}

bool FuseAttention(GraphEditor& ed, int smi) {
  const Node& sm = ed.node(smi);
  if (sm.inputs.size() != 1 || sm.outputs.size() != 1) return false;
  const int64_t axis = AttrInt(sm, "axis", ed.Opset("") >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return false;
  const std::string s = sm.inputs[0];
  const int p = ed.Producer(s);
  if (NodeIs(ed, p, "Add") && ed.OnlyReader(s, smi) && ed.node(p).inputs.size() == 2) {
    const Node& add = ed.node(p);
    for (int side = 0; side < 2; ++side) {  // which operand is the mask
      const std::string mask = add.inputs[1 - side];
      const int mr = ed.Rank(mask);
      if (mask == add.inputs[side] || !ed.IsFloat32(mask) || mr < 0 || mr > 4) continue;
      if (FuseFrom(ed, smi, add.inputs[side], p, mask, {smi, p})) return true;
    }
    return false;
  }
  return FuseFrom(ed, smi, s, smi, "", {smi});
}

}  // namespace

std::unique_ptr<GraphPass> MakeAttentionFusionPass() {
  return MakeRewritePass("AttentionFusion", {{{"Softmax"}, FuseAttention}});
}

}  // namespace inferloop
