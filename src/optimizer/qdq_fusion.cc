// QdqFusion: QDQ patterns (docs/QUANTIZATION.md "INT8 execution") become the com.inferloop int8
// ops of src/compute/kernels/dnnl_int8.cc. "DQ(v)" below is DequantizeLinear of v with constant
// scale and zero point; "Q" a QuantizeLinear with constant per-tensor scale and zero point that is
// the only reader of the value it quantizes.
//
//   Conv(DQ(x), DQ(w), [DQ(b) | b]) [-> Relu | Clip] [-> Q]   -> QConv(x, .., w, .., [y_s, y_zp], b32)
//   MatMul(DQ(a), DQ(w)) [-> Relu | Clip] [-> Q]              -> QMatMul (w constant [K, N]); a Q -> DQ
//                                                               [-> Add(float bias)] after it too
//                                                               (dequantize_output, post_bias)
//   Gemm(DQ(a), DQ(w), [DQ(c) | c]) [-> Relu | Clip] [-> Q]   -> QMatMul (alpha = beta = 1, transA = 0;
//                                                               transB = 1 weights transposed here)
//   Add(DQ(a), DQ(b)) [-> Relu] -> Q                         -> QAdd (same shapes)
//   MaxPool(DQ(x)) -> Q (same scale / zero point)             -> QMaxPool(x)
//   GlobalAveragePool(DQ(x)) -> Q                             -> QGlobalAveragePool
//   AveragePool(DQ(x)) -> Q (2-D, count_include_pad = 0)      -> QAveragePool
//   Concat(DQ(x0), DQ(x1), ...) -> Q                          -> QConcat (inputs requantized as needed)
//   Reshape / Flatten / Transpose / Squeeze / Unsqueeze (DQ(x)) -> Q (same parameters) -> the op on x
//   Q(DQ(x)) with the same parameters                        -> x
//   MatMulInteger(DynamicQuantizeLinear(x), w) -> Cast -> Mul(scales) [-> Add(bias)]
//                                                            -> DynamicQMatMul (ORT's dynamic format)
// x and a are uint8 or int8 with per-tensor parameters; w an int8 constant with zero point 0 and
// per-tensor or per-output-channel scales (Conv axis 0, MatMul axis 1, Gemm axis 0 with transB);
// a bias through DQ must be int32 with zero point 0 and scale x_scale * w_scale, a float bias is
// quantized to that here. Without the Q the fused op writes float32 (the dequantized result).
// Runs before constant folding (optimizer.cc), which would otherwise turn DQ(w) into float
// weights. The DQ nodes stay for other readers; dead-node elimination drops the rest.

#include <algorithm>
#include <cmath>

#include "optimizer/fusion_util.h"
#include "optimizer/passes.h"
#include "optimizer/rewrite_rule.h"

namespace inferloop {
namespace {

// A DequantizeLinear (or the QuantizeLinear) node with constant parameters.
struct QdqNode {
  int node = -1;
  std::string x, scale, zp;    // input names ("" zp: absent)
  const Tensor* s = nullptr;   // scale constant
  const Tensor* z = nullptr;   // zero point constant (nullptr when absent)
  int64_t axis = 1;
  DataType type = DataType::kUndefined;  // the quantized dtype (from the zero point, or x's type)
  bool per_tensor() const { return s->size() == 1; }
  float scalar_scale() const { return s->data<float>()[0]; }
  int32_t scalar_zp() const {
    if (!z) return 0;
    return z->dtype() == DataType::kUInt8 ? z->data<uint8_t>()[0] : z->data<int8_t>()[0];
  }
};

// Reads node i as a Q / DQ node with constant float scale and 8/32-bit zero point.
bool ReadQdq(GraphEditor& ed, int i, const char* op, QdqNode* q) {
  if (!NodeIs(ed, i, op)) return false;
  const Node& n = ed.node(i);
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  q->node = i;
  q->x = n.inputs[0];
  q->scale = n.inputs[1];
  q->zp = n.inputs.size() > 2 ? n.inputs[2] : "";
  q->s = ed.Constant(q->scale);
  if (!q->s || q->s->dtype() != DataType::kFloat || q->s->size() < 1) return false;
  for (int64_t k = 0; k < q->s->size(); ++k)
    if (!(q->s->data<float>()[k] > 0) || !std::isfinite(q->s->data<float>()[k])) return false;
  q->z = q->zp.empty() ? nullptr : ed.Constant(q->zp);
  if (!q->zp.empty() && !q->z) return false;
  if (q->z && q->z->size() != q->s->size()) return false;
  if (FindAttr(n, "block_size") && AttrInt(n, "block_size", 0) != 0) return false;
  if (AttrInt(n, "saturate", 1) != 1) return false;
  q->axis = AttrInt(n, "axis", 1);
  if (q->z) {
    q->type = q->z->dtype();
  } else if (std::string(op) == "DequantizeLinear") {
    if (const Tensor* c = ed.Constant(q->x)) q->type = c->dtype();
    else if (const TypeInfo* t = ed.Type(q->x)) q->type = t->elem_type;
  } else {
    if (FindAttr(n, "output_dtype")) return false;
    q->type = DataType::kUInt8;
  }
  return true;
}

bool Is8Bit(DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; }

// DQ of an 8-bit activation with per-tensor parameters producing `value`.
bool ActivationDq(GraphEditor& ed, const std::string& value, QdqNode* q) {
  return ReadQdq(ed, ed.Producer(value), "DequantizeLinear", q) && q->per_tensor() && Is8Bit(q->type) && !ed.Constant(q->x);
}

// DQ of a constant int8 weight with zero points 0, producing `value`.
bool WeightDq(GraphEditor& ed, const std::string& value, QdqNode* q) {
  if (!ReadQdq(ed, ed.Producer(value), "DequantizeLinear", q) || q->type != DataType::kInt8) return false;
  const Tensor* w = ed.Constant(q->x);
  if (!w || w->dtype() != DataType::kInt8) return false;
  if (q->z)
    for (int64_t k = 0; k < q->z->size(); ++k)
      if (q->z->data<int8_t>()[k] != 0) return false;
  return true;
}

// The Q quantizing `value` when it is value's only reader, per-tensor, 8-bit.
bool SoleQ(GraphEditor& ed, const std::string& value, QdqNode* q) {
  if (ed.IsGraphOutput(value) || ed.ReadBySubgraph(value)) return false;
  const auto readers = ed.Readers(value);
  if (readers.size() != 1) return false;
  return ReadQdq(ed, readers[0], "QuantizeLinear", q) && q->x == value && q->per_tensor() && Is8Bit(q->type);
}

bool SameParams(const QdqNode& a, const QdqNode& b) {
  return a.per_tensor() && b.per_tensor() && a.type == b.type && a.scalar_scale() == b.scalar_scale() &&
         a.scalar_zp() == b.scalar_zp();
}

// Per-channel weight scales as a vector of `channels` (a scalar is repeated).
std::vector<float> ScalesOf(const QdqNode& w, int64_t channels) {
  std::vector<float> s(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) s[k] = w.s->data<float>()[w.per_tensor() ? 0 : k];
  return s;
}

// The bias value `b` (or "") as an int32 constant in units of x_scale * w_scale[c]: an int32
// DQ with those scales and zero point 0 as is, a float constant quantized. "" with *ok = false
// when it is neither.
std::string Int32Bias(GraphEditor& ed, const std::string& b, float x_scale, const std::vector<float>& w_scale, bool* ok) {
  *ok = true;
  if (b.empty()) return "";
  const int64_t m = static_cast<int64_t>(w_scale.size());
  QdqNode q;
  if (ReadQdq(ed, ed.Producer(b), "DequantizeLinear", &q) && q.type == DataType::kInt32) {
    const Tensor* t = ed.Constant(q.x);
    if (t && t->dtype() == DataType::kInt32 && t->size() == m && (q.per_tensor() || q.s->size() == m)) {
      bool good = !q.z || q.z->dtype() == DataType::kInt32;
      for (int64_t k = 0; good && k < m; ++k) {
        good = NearlyEqual(q.s->data<float>()[q.per_tensor() ? 0 : k], x_scale * w_scale[k], 1e-3);
        if (q.z) good = good && q.z->data<int32_t>()[q.per_tensor() ? 0 : k] == 0;
      }
      if (good) return q.x;
    }
  }
  const Tensor* f = ed.Constant(b);
  if (f && f->dtype() == DataType::kFloat && f->size() == m) {
    std::vector<int32_t> v(static_cast<size_t>(m));
    for (int64_t k = 0; k < m; ++k) {
      const double r = std::nearbyint(static_cast<double>(f->data<float>()[k]) / (static_cast<double>(x_scale) * w_scale[k]));
      v[k] = static_cast<int32_t>(std::clamp(r, -2147483648.0, 2147483647.0));
    }
    return ed.AddInitializer(b + "_int32", Tensor::FromVector<int32_t>(DataType::kInt32, {m}, v));
  }
  *ok = false;
  return "";
}

// What follows an op's output `value`: an optional Relu / Clip (0 <= lo) that alone reads it,
// then an optional Q.
struct OutputChain {
  Activation act;
  int act_node = -1;  // the Relu / Clip; -1: none
  QdqNode q;          // q.node -1: no Q
  std::string out;    // the name the fused op writes
  bool quantized() const { return q.node >= 0; }
  std::string y_scale() const { return quantized() ? q.scale : ""; }  // the fused op's output parameters
  std::string y_zp() const { return quantized() ? q.zp : ""; }
};

OutputChain ReadOutputChain(GraphEditor& ed, const std::string& value) {
  OutputChain c;
  c.q.node = -1;
  std::string v = value;
  const auto readers = ed.Readers(v);
  if (readers.size() == 1 && !ed.IsGraphOutput(v) && !ed.ReadBySubgraph(v)) {
    Activation a;
    const int r = readers[0];
    if ((NodeIs(ed, r, "Relu") || NodeIs(ed, r, "Clip")) && ActivationOf(ed, ed.node(r), &a) &&
        (a.kind == ActivationKind::kRelu || (a.kind == ActivationKind::kClip && a.alpha >= 0.f))) {
      c.act = a;
      c.act_node = r;
      v = ed.node(r).outputs[0];
    }
  }
  QdqNode qq;
  if (SoleQ(ed, v, &qq)) {
    c.q = qq;
    c.out = ed.node(qq.node).outputs[0];
  } else {
    c.out = v;
  }
  return c;
}

// Replaces the op at i (and its activation / Q nodes) by `fused`.
void Finish(GraphEditor& ed, int i, int act_node, const QdqNode& q, Node fused) {
  ed.ImportDomain(kInferloopDomain, 1);
  if (q.node >= 0) {
    if (act_node >= 0) ed.RemoveNode(act_node);
    ed.RemoveNode(i);
    ed.ReplaceNode(q.node, std::move(fused));
  } else if (act_node >= 0) {  // a float output after the activation: the fused op takes its place
    ed.RemoveNode(i);
    ed.ReplaceNode(act_node, std::move(fused));
  } else {
    ed.ReplaceNode(i, std::move(fused));
  }
}

void SetAct(Node& n, const Activation& act) {
  if (act.kind != ActivationKind::kNone) SetActivation(n, act);
}

bool FuseConv(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  QdqNode x, w;
  if (!ActivationDq(ed, n.inputs[0], &x) || !WeightDq(ed, n.inputs[1], &w)) return false;
  const Tensor* wt = ed.Constant(w.x);
  if (wt->rank() != 4) return false;
  const int64_t m = wt->dim(0);
  if (!w.per_tensor() && (w.s->size() != m || w.axis != 0)) return false;
  const auto ws = ScalesOf(w, m);
  bool ok;
  const std::string bias = Int32Bias(ed, n.inputs.size() > 2 ? n.inputs[2] : "", x.scalar_scale(), ws, &ok);
  if (!ok) return false;
  OutputChain tail = ReadOutputChain(ed, n.outputs[0]);
  if (!tail.quantized() && !ed.IsFloat32(n.outputs[0])) return false;
  Node f = MakeNode("QConv", kInferloopDomain, {x.x, x.scale, x.zp, w.x, w.scale, w.zp, tail.y_scale(), tail.y_zp(), bias},
                    {tail.out}, n.name);
  for (const auto& a : n.attributes) f.attributes.push_back(a);
  SetAct(f, tail.act);
  while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
  Finish(ed, i, tail.act_node, tail.q, std::move(f));
  return true;
}

// MatMul or Gemm.
bool FuseMatMul(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  const bool gemm = n.op_type == "Gemm";
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  QdqNode a, w;
  if (!ActivationDq(ed, n.inputs[0], &a) || !WeightDq(ed, n.inputs[1], &w)) return false;
  const Tensor* wt = ed.Constant(w.x);  // re-read after anything that adds initializers
  if (wt->rank() != 2) return false;
  bool trans_b = false;
  std::string c;
  if (gemm) {
    if (AttrFloat(n, "alpha", 1.f) != 1.f || AttrInt(n, "transA", 0) != 0) return false;
    trans_b = AttrInt(n, "transB", 0) != 0;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      if (AttrFloat(n, "beta", 1.f) != 1.f) return false;
      c = n.inputs[2];
    }
    if (ed.Rank(n.inputs[0]) != 2) return false;
  } else if (ed.Rank(n.inputs[0]) < 1) {
    return false;
  }
  const int64_t k = trans_b ? wt->dim(1) : wt->dim(0), nn = trans_b ? wt->dim(0) : wt->dim(1);
  const int64_t channel_axis = trans_b ? 0 : 1;
  if (!w.per_tensor() && (w.s->size() != nn || (w.axis != channel_axis && w.axis != channel_axis - 2))) return false;
  const auto ws = ScalesOf(w, nn);
  bool ok;
  const std::string bias = Int32Bias(ed, c, a.scalar_scale(), ws, &ok);
  if (!ok) return false;
  wt = ed.Constant(w.x);  // Int32Bias may have added an initializer, moving the others
  OutputChain tail = ReadOutputChain(ed, n.outputs[0]);
  if (!tail.quantized() && !ed.IsFloat32(n.outputs[0])) return false;
  std::string wname = w.x;
  if (trans_b) {  // [N, K] -> [K, N]
    auto t = Tensor::Create(DataType::kInt8, {k, nn});
    if (!t.ok()) return false;
    const int8_t* src = wt->data<int8_t>();
    int8_t* dst = t->data<int8_t>();
    for (int64_t r = 0; r < nn; ++r)
      for (int64_t s = 0; s < k; ++s) dst[s * nn + r] = src[r * k + s];
    wname = ed.AddInitializer(w.x + "_kn", std::move(*t));
    // Adding an initializer may move the others: read the output Q's constants again.
    if (tail.quantized() && !ReadQdq(ed, tail.q.node, "QuantizeLinear", &tail.q)) return false;
  }
  std::string wscale = w.scale, wzp = w.zp;
  Node f = MakeNode("QMatMul", kInferloopDomain, {a.x, a.scale, a.zp, wname, wscale, wzp, tail.y_scale(), tail.y_zp(), bias},
                    {tail.out}, n.name);
  SetAct(f, tail.act);
  // Q -> DQ (same parameters, its only reader) [-> Add(constant float bias of N)]: the kernel
  // writes the dequantized result (and adds the bias) itself.
  std::vector<int> absorbed;
  if (tail.quantized()) {
    const auto qr = ed.Readers(tail.out);
    QdqNode dq;
    if (qr.size() == 1 && !ed.IsGraphOutput(tail.out) && !ed.ReadBySubgraph(tail.out) && ReadQdq(ed, qr[0], "DequantizeLinear", &dq) &&
        dq.x == tail.out && SameParams(dq, tail.q)) {
      std::string y = ed.node(qr[0]).outputs[0];
      absorbed.push_back(qr[0]);
      std::string post_bias;
      const auto dr = ed.Readers(y);
      if (dr.size() == 1 && !ed.IsGraphOutput(y) && !ed.ReadBySubgraph(y) && NodeIs(ed, dr[0], "Add") && ed.node(dr[0]).inputs.size() == 2) {
        const std::string other = OtherOperand(ed.node(dr[0]), y);
        const Tensor* c = other.empty() ? nullptr : ed.Constant(other);
        const int out_rank = ed.Rank(n.outputs[0]);
        if (c && c->dtype() == DataType::kFloat && c->size() == nn && c->rank() >= 1 && c->dim(c->rank() - 1) == nn &&
            out_rank >= c->rank()) {
          post_bias = other;
          if (c->rank() != 1) {
            auto flat = c->Reshaped({nn});
            if (!flat.ok()) return false;
            post_bias = ed.AddInitializer(other + "_vec", flat->Clone());
          }
          absorbed.push_back(dr[0]);
          y = ed.node(dr[0]).outputs[0];
        }
      }
      SetAttr(f, "dequantize_output", int64_t{1});
      f.inputs.resize(10);
      f.inputs[8] = bias;
      f.inputs[9] = post_bias;
      f.outputs[0] = y;
    }
  }
  while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
  if (!absorbed.empty()) {  // the fused node takes the last absorbed node's place
    ed.ImportDomain(kInferloopDomain, 1);
    if (tail.act_node >= 0) ed.RemoveNode(tail.act_node);
    ed.RemoveNode(tail.q.node);
    ed.RemoveNode(i);
    for (size_t k = 0; k + 1 < absorbed.size(); ++k) ed.RemoveNode(absorbed[k]);
    ed.ReplaceNode(absorbed.back(), std::move(f));
    return true;
  }
  Finish(ed, i, tail.act_node, tail.q, std::move(f));
  return true;
}

bool FuseAdd(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  QdqNode a, b;
  if (!ActivationDq(ed, n.inputs[0], &a) || !ActivationDq(ed, n.inputs[1], &b)) return false;
  if (!ed.SameShape(n.inputs[0], n.inputs[1])) return false;
  OutputChain tail = ReadOutputChain(ed, n.outputs[0]);
  if (!tail.quantized() || (tail.act.kind != ActivationKind::kNone && tail.act.kind != ActivationKind::kRelu)) return false;
  Node f = MakeNode("QAdd", kInferloopDomain, {a.x, a.scale, a.zp, b.x, b.scale, b.zp, tail.q.scale, tail.q.zp}, {tail.out}, n.name);
  SetAct(f, tail.act);
  Finish(ed, i, tail.act_node, tail.q, std::move(f));
  return true;
}

bool FusePool(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (n.op_type == "AveragePool" && !ed.HasKernel(kInferloopDomain, "QAveragePool", 1)) return false;
  const bool max = n.op_type == "MaxPool";
  if (n.inputs.size() != 1 || (n.outputs.size() > 1 && !n.outputs[1].empty())) return false;
  if (ed.Rank(n.inputs[0]) != 4) return false;
  QdqNode x, q;
  if (!ActivationDq(ed, n.inputs[0], &x) || !SoleQ(ed, n.outputs[0], &q)) return false;
  const bool avg = n.op_type == "AveragePool";
  if (max && (!SameParams(x, q) || AttrInt(n, "storage_order", 0) != 0)) return false;
  if (!max && x.type != q.type) return false;
  if (avg && (AttrInt(n, "count_include_pad", 0) != 0 || AttrInts(n, "kernel_shape").size() != 2)) return false;
  Node f = max ? MakeNode("QMaxPool", kInferloopDomain, {x.x}, {ed.node(q.node).outputs[0]}, n.name)
               : MakeNode(avg ? "QAveragePool" : "QGlobalAveragePool", kInferloopDomain, {x.x, x.scale, x.zp, q.scale, q.zp},
                          {ed.node(q.node).outputs[0]}, n.name);
  if (max || avg) f.attributes = n.attributes;
  Finish(ed, i, -1, q, std::move(f));
  return true;
}

// Data-movement ops between a DQ and a Q of the same parameters run on the 8-bit data.
bool FuseMovement(GraphEditor& ed, int i) {
  const Node& n = ed.node(i);
  if (n.inputs.empty() || n.outputs.size() != 1) return false;
  QdqNode x, q;
  if (!ActivationDq(ed, n.inputs[0], &x) || !SoleQ(ed, n.outputs[0], &q) || !SameParams(x, q)) return false;
  Node f = n;
  f.inputs[0] = x.x;
  f.outputs[0] = ed.node(q.node).outputs[0];
  Finish(ed, i, -1, q, std::move(f));
  return true;
}

// Concat(DQ(x0), DQ(x1), ...) -> Q: QConcat(y_s, y_zp, x0, s0, z0, ...).
bool FuseConcat(GraphEditor& ed, int i) {
  if (!ed.HasKernel(kInferloopDomain, "QConcat", 1)) return false;
  const Node& n = ed.node(i);
  if (n.inputs.empty() || n.outputs.size() != 1 || !FindAttr(n, "axis")) return false;
  QdqNode q;
  if (!SoleQ(ed, n.outputs[0], &q)) return false;
  Node f = MakeNode("QConcat", kInferloopDomain, {q.scale, q.zp}, {ed.node(q.node).outputs[0]}, n.name);
  for (const auto& in : n.inputs) {
    QdqNode x;
    if (!ActivationDq(ed, in, &x)) return false;
    f.inputs.insert(f.inputs.end(), {x.x, x.scale, x.zp});
  }
  SetAttr(f, "axis", AttrInt(n, "axis", 0));
  Finish(ed, i, -1, q, std::move(f));
  return true;
}

// Q(DQ(x)) with equal parameters is x.
bool CancelDqQ(GraphEditor& ed, int i) {
  QdqNode q, d;
  if (!ReadQdq(ed, i, "QuantizeLinear", &q) || !q.per_tensor()) return false;
  if (!ReadQdq(ed, ed.Producer(q.x), "DequantizeLinear", &d) || !SameParams(d, q)) return false;
  const std::string out = ed.node(i).outputs[0];
  if (!ed.RedirectReaders(out, d.x)) return false;
  ed.RemoveNode(i);
  return true;
}

// ORT's dynamic format: DynamicQuantizeLinear(x) -> (a, a_s, a_zp); MatMulInteger(a, w, a_zp,
// [w_zp = 0]) -> Cast(float) -> Mul(., Mul(a_s, w_scale)) [-> Add(bias)] becomes
// DynamicQMatMul(a, a_s, a_zp, w, w_scale, [bias]); the DynamicQuantizeLinear stays (shared by
// the MatMuls reading the same x).
bool FuseDynamicMatMul(GraphEditor& ed, int i) {
  if (!ed.HasKernel(kInferloopDomain, "DynamicQMatMul", 1)) return false;
  const Node& n = ed.node(i);
  if (n.inputs.size() < 3 || n.outputs.size() != 1) return false;
  const int d = ed.Producer(n.inputs[0]);
  if (!NodeIs(ed, d, "DynamicQuantizeLinear") || ed.node(d).outputs.size() != 3) return false;
  const Node& dq = ed.node(d);
  if (dq.outputs[0] != n.inputs[0] || dq.outputs[2] != n.inputs[2]) return false;
  const Tensor* w = ed.Constant(n.inputs[1]);
  if (!w || w->dtype() != DataType::kInt8 || w->rank() != 2) return false;
  const int64_t nn = w->dim(1);
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
    const Tensor* wz = ed.Constant(n.inputs[3]);
    if (!wz || wz->dtype() != DataType::kInt8) return false;
    for (int64_t k = 0; k < wz->size(); ++k)
      if (wz->data<int8_t>()[k] != 0) return false;
  }
  auto sole_reader = [&](const std::string& v, const char* op) {
    if (ed.IsGraphOutput(v) || ed.ReadBySubgraph(v)) return -1;
    const auto r = ed.Readers(v);
    return r.size() == 1 && NodeIs(ed, r[0], op) ? r[0] : -1;
  };
  const int cast = sole_reader(n.outputs[0], "Cast");
  if (cast < 0 || AttrInt(ed.node(cast), "to", 0) != static_cast<int64_t>(DataType::kFloat)) return false;
  const int mul = sole_reader(ed.node(cast).outputs[0], "Mul");
  if (mul < 0 || ed.node(mul).inputs.size() != 2) return false;
  const std::string s = OtherOperand(ed.node(mul), ed.node(cast).outputs[0]);
  const int sm = ed.Producer(s);
  if (s.empty() || !NodeIs(ed, sm, "Mul") || !ed.OnlyReader(s, mul) || ed.node(sm).inputs.size() != 2) return false;
  const std::string ws = OtherOperand(ed.node(sm), dq.outputs[1]);
  const Tensor* wst = ws.empty() ? nullptr : ed.Constant(ws);
  if (!wst || wst->dtype() != DataType::kFloat || (wst->size() != 1 && wst->size() != nn) || wst->rank() > 1) return false;
  std::string out = ed.node(mul).outputs[0], bias;
  int add = sole_reader(out, "Add");
  if (add >= 0 && ed.node(add).inputs.size() == 2) {
    const std::string b = OtherOperand(ed.node(add), out);
    const Tensor* bt = b.empty() ? nullptr : ed.Constant(b);
    if (bt && bt->dtype() == DataType::kFloat && bt->rank() == 1 && bt->size() == nn) {
      bias = b;
      out = ed.node(add).outputs[0];
    } else {
      add = -1;
    }
  } else {
    add = -1;
  }
  Node f = MakeNode("DynamicQMatMul", kInferloopDomain, {n.inputs[0], dq.outputs[1], n.inputs[2], n.inputs[1], ws, bias}, {out}, n.name);
  if (bias.empty()) f.inputs.pop_back();
  ed.ImportDomain(kInferloopDomain, 1);
  ed.RemoveNode(i);
  ed.RemoveNode(cast);
  ed.RemoveNode(sm);
  if (add >= 0) {
    ed.RemoveNode(mul);
    ed.ReplaceNode(add, std::move(f));
  } else {
    ed.ReplaceNode(mul, std::move(f));
  }
  return true;
}

// The int8 kernels are there; shape inference runs on the graph as it is before the pass edits it.
bool QdqFusionReady(GraphEditor& ed) {
  for (const char* op : {"QConv", "QMatMul", "QAdd", "QMaxPool", "QGlobalAveragePool"})
    if (!ed.HasKernel(kInferloopDomain, op, 1)) return false;
  for (const Node& n : ed.graph().nodes)
    if (!n.outputs.empty()) {
      ed.Type(n.outputs[0]);
      break;
    }
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> MakeQdqFusionPass() {
  return MakeRewritePass("QdqFusion",
                         {{{"Conv"}, FuseConv},
                          {{"MatMul", "Gemm"}, FuseMatMul},
                          {{"Add"}, FuseAdd},
                          {{"MaxPool", "GlobalAveragePool", "AveragePool"}, FusePool},
                          {{"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"}, FuseMovement},
                          {{"Concat"}, FuseConcat},
                          {{"QuantizeLinear"}, CancelDqQ},
                          {{"MatMulInteger"}, FuseDynamicMatMul}},
                         QdqFusionReady);
}

}  // namespace inferloop
