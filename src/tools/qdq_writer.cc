#include "tools/qdq_writer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "base/status_macros.h"
#include "compute/tensor_cast.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_editor.h"

namespace inferloop {

std::string NodeId(const Node& n) {
  if (!n.name.empty()) return n.name;
  for (const auto& o : n.outputs)
    if (!o.empty()) return o;
  return n.op_type;
}

ActivationQuant ActivationParams(const QuantRange& r) {
  const double lo = std::min(r.min, 0.0), hi = std::max(r.max, 0.0);
  ActivationQuant q;
  const double scale = (hi - lo) / 255.0;
  if (!(scale > 0) || !std::isfinite(scale)) return q;  // all zeros: scale 1, zero point 0
  q.scale = static_cast<float>(scale);
  q.zero_point = static_cast<uint8_t>(std::clamp(std::nearbyint(-lo / q.scale), 0.0, 255.0));
  return q;
}

Result<WeightQuant> QuantizeWeightSymmetric(const Tensor& w_in, int axis, int max_level) {
  if (max_level < 1 || max_level > 127) return Status::InvalidArgument("weight level must be in [1, 127]");
  Tensor w = w_in;
  if (w.dtype() != DataType::kFloat) {
    if (w.dtype() != DataType::kDouble && w.dtype() != DataType::kFloat16 && w.dtype() != DataType::kBFloat16)
      return Status::InvalidArgument(std::string("cannot quantize a ") + DataTypeName(w.dtype()) + " weight");
    IL_ASSIGN_OR_RETURN(w, CastTensor(w_in, DataType::kFloat));
  }
  if (axis >= w.rank()) return Status::InvalidArgument("quantization axis " + std::to_string(axis) + " out of range");
  const int64_t channels = axis < 0 ? 1 : w.dim(axis);
  int64_t inner = 1;  // elements after `axis`
  if (axis >= 0)
    for (int d = axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
  const int64_t n = w.size();
  auto channel_of = [&](int64_t i) { return axis < 0 ? 0 : (i / inner) % channels; };
  std::vector<double> absmax(static_cast<size_t>(channels), 0.0);
  const float* p = w.data<float>();
  for (int64_t i = 0; i < n; ++i) absmax[channel_of(i)] = std::max(absmax[channel_of(i)], static_cast<double>(std::fabs(p[i])));
  WeightQuant q;
  const double level = max_level;
  for (double a : absmax) q.scales.push_back(a > 0 && std::isfinite(a) ? static_cast<float>(a / level) : 1.0f);
  IL_ASSIGN_OR_RETURN(q.values, Tensor::Create(DataType::kInt8, w.shape()));
  int8_t* out = q.values.data<int8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::nearbyint(static_cast<double>(p[i]) / static_cast<double>(q.scales[channel_of(i)]));
    out[i] = static_cast<int8_t>(std::clamp(std::isfinite(v) ? v : 0.0, -level, level));
  }
  return q;
}

namespace {

bool IsPool(const std::string& op) { return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool"; }
bool IsMovement(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Transpose" || op == "Squeeze" || op == "Unsqueeze";
}

// Collects every tensor name used anywhere (subgraphs included), to keep new names unique and to
// know whether an initializer is still read.
void CollectNames(const Graph& g, std::set<std::string>& names) {
  for (const auto& v : g.inputs) names.insert(v.name);
  for (const auto& v : g.outputs) names.insert(v.name);
  for (const auto& [n, t] : g.initializers) names.insert(n);
  for (const auto& n : g.nodes) {
    names.insert(n.name);
    names.insert(n.inputs.begin(), n.inputs.end());
    names.insert(n.outputs.begin(), n.outputs.end());
    for (const auto& a : n.attributes) {
      if (a.g) CollectNames(*a.g, names);
      for (const auto& sg : a.graphs)
        if (sg) CollectNames(*sg, names);
    }
  }
}

class Namer {
 public:
  explicit Namer(const Graph& g) { CollectNames(g, used_); }
  std::string Make(const std::string& base) {
    std::string n = base;
    for (int i = 1; used_.count(n); ++i) n = base + "_" + std::to_string(i);
    used_.insert(n);
    return n;
  }

 private:
  std::set<std::string> used_;
};

bool IsFloatType(DataType t) {
  return t == DataType::kFloat;
}

// A Clip that keeps values >= 0 (so a quantized input stays one after it): constant min >= 0.
bool IsNonNegativeClip(const Node& n, const std::map<std::string, const Tensor*>& inits) {
  if (n.op_type != "Clip") return false;
  if (const Attribute* a = n.FindAttribute("min")) return a->f >= 0;
  if (n.inputs.size() < 2 || n.inputs[1].empty()) return false;
  auto it = inits.find(n.inputs[1]);
  if (it == inits.end() || it->second->size() != 1 || it->second->dtype() != DataType::kFloat) return false;
  return it->second->data<float>()[0] >= 0;
}

}  // namespace

std::vector<std::string> QuantizableLayers(const Model& m, const QdqOptions& opts) {
  std::set<std::string> inits;
  for (const auto& [n, t] : m.graph.initializers)
    if (IsFloatType(t.dtype())) inits.insert(n);
  std::vector<std::string> out;
  for (const Node& n : m.graph.nodes) {
    if (!n.domain.empty() || n.inputs.size() < 2 || n.inputs[0].empty()) continue;
    const bool w_const = inits.count(n.inputs[1]) > 0;
    const bool a_const = inits.count(n.inputs[0]) > 0;
    if (a_const) continue;
    if ((n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul") && w_const) out.push_back(NodeId(n));
    else if (n.op_type == "MatMul" && opts.quantize_activation_matmul) out.push_back(NodeId(n));
  }
  return out;
}

namespace {

// Checks the request against the model (opset, --exclude / only names). Returns whether weights
// are quantized per channel: as asked, except below opset 13 (with a warning).
Result<bool> CheckQdqRequest(const Model& m, const QdqOptions& opts, std::vector<std::string>& warnings) {
  const int64_t opset = m.opsets.count("") ? m.opsets.at("") : 0;
  if (opset < 10)
    return Status::InvalidArgument("the model's opset " + std::to_string(opset) +
                                   " has no QuantizeLinear (opset 10+ needed; 13+ for per-channel weights)");
  bool per_channel = opts.per_channel;
  if (per_channel && opset < 13) {
    per_channel = false;
    warnings.push_back("opset " + std::to_string(opset) +
                       " has no per-axis DequantizeLinear (13+): weights are quantized per tensor");
  }
  std::set<std::string> ids;
  for (const Node& n : m.graph.nodes) ids.insert(NodeId(n));
  for (const auto* set : {&opts.exclude, &opts.only})
    for (const auto& e : *set)
      if (!ids.count(e)) return Status::InvalidArgument("no node named '" + e + "' in the model (--exclude takes node names)");
  return per_channel;
}

// What both passes read: the FP32 graph and facts about it.
struct QdqGraphFacts {
  const Graph& g;
  const QdqOptions& opts;
  std::map<std::string, const Tensor*> inits;
  std::set<std::string> graph_outputs;
  std::set<std::string> layers;                          // QuantizableLayers, as node ids
  std::map<std::string, std::vector<size_t>> consumers;  // tensor -> indices of the nodes reading it
};

QdqGraphFacts ReadGraphFacts(const Model& fp32, const QdqOptions& opts) {
  const Graph& g = fp32.graph;
  QdqGraphFacts f{g, opts, {}, {}, {}, {}};
  for (const auto& [n, t] : g.initializers) f.inits[n] = &t;
  for (const auto& o : g.outputs) f.graph_outputs.insert(o.name);
  const std::vector<std::string> layer_list = QuantizableLayers(fp32, opts);
  f.layers.insert(layer_list.begin(), layer_list.end());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs) f.consumers[in].push_back(i);
  return f;
}

// Pass 1's answer: which nodes are quantized, which tensors need a QDQ pair (wanted) and with
// which parameters.
struct QdqSelection {
  std::vector<bool> selected;
  std::set<std::string> wanted;
  std::map<std::string, ActivationQuant> act;
};

// Looks up the parameters of `t` once (into `act`); false when it has no calibrated range.
bool HasRange(const RangeLookup& ranges, std::map<std::string, ActivationQuant>& act, const std::string& t) {
  if (act.count(t)) return true;
  auto r = ranges(t);
  if (!r) return false;
  act[t] = ActivationParams(*r);
  return true;
}

// The float activation inputs quantizing `n` puts a QDQ pair on, or nullopt when `n` stays FP32.
// `produced_int8` holds the tensors that come out of quantized layers; a Relu, non-negative Clip
// or movement op of one stays FP32 but passes the mark on to its output.
std::optional<std::vector<std::string>> ActivationInputsToQuantize(const QdqGraphFacts& f, const Node& n,
                                                                   std::set<std::string>& produced_int8) {
  if (!n.domain.empty()) return std::nullopt;
  const std::string id = NodeId(n);
  const bool excluded = f.opts.exclude.count(id) > 0;
  std::vector<std::string> act_inputs;
  if (f.layers.count(id)) {
    if (excluded || (!f.opts.only.empty() && !f.opts.only.count(id))) return std::nullopt;
    act_inputs.push_back(n.inputs[0]);
    if (n.op_type == "MatMul" && !f.inits.count(n.inputs[1])) act_inputs.push_back(n.inputs[1]);
  } else if (n.op_type == "Add" && n.inputs.size() == 2 && f.opts.only.empty() && !excluded) {
    if (!produced_int8.count(n.inputs[0]) || !produced_int8.count(n.inputs[1])) return std::nullopt;
    act_inputs = {n.inputs[0], n.inputs[1]};
  } else if (IsPool(n.op_type) && f.opts.only.empty() && !excluded && !n.inputs.empty()) {
    if (!produced_int8.count(n.inputs[0]) || (n.outputs.size() > 1 && !n.outputs[1].empty())) return std::nullopt;
    act_inputs = {n.inputs[0]};
  } else {
    if ((n.op_type == "Relu" || IsNonNegativeClip(n, f.inits) || IsMovement(n.op_type)) && !n.inputs.empty() &&
        produced_int8.count(n.inputs[0]))
      produced_int8.insert(n.outputs[0]);
    return std::nullopt;
  }
  return act_inputs;
}

// The output of a quantized Add or pooling node `n`, followed through a chain of single
// Relu / non-negative Clip readers: the tensor that gets the pair after it.
std::string OutputThroughRelus(const QdqGraphFacts& f, const Node& n) {
  std::string t = n.outputs[0];
  for (;;) {
    auto c = f.consumers.find(t);
    if (f.graph_outputs.count(t) || c == f.consumers.end() || c->second.size() != 1) break;
    const Node& next = f.g.nodes[c->second[0]];
    if (next.op_type != "Relu" && !IsNonNegativeClip(next, f.inits)) break;
    t = next.outputs[0];
  }
  return t;
}

// A MaxPool's output, and the output of a movement op (Reshape, Flatten, ...) of a quantized
// tensor, take the parameters of the input: the executor runs them on the 8-bit values.
void ShareParamsThroughMovement(const Graph& g, QdqSelection& sel) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.inputs.empty() || n.outputs.empty() || !n.domain.empty()) continue;
    if (!((n.op_type == "MaxPool" && sel.selected[i]) || IsMovement(n.op_type))) continue;
    if (sel.wanted.count(n.inputs[0]) && sel.wanted.count(n.outputs[0])) sel.act[n.outputs[0]] = sel.act.at(n.inputs[0]);
  }
}

// Pass 1 (graph order, which ONNX requires to be topological). Counts quantized nodes and warns
// about nodes left FP32 for want of a range into `res`.
QdqSelection SelectQuantizedNodes(const QdqGraphFacts& f, const RangeLookup& ranges, QdqResult& res) {
  const Graph& g = f.g;
  QdqSelection sel;
  sel.selected.assign(g.nodes.size(), false);
  std::set<std::string> produced_int8;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const std::optional<std::vector<std::string>> act_inputs = ActivationInputsToQuantize(f, n, produced_int8);
    if (!act_inputs) continue;
    bool ok = true;
    for (const auto& t : *act_inputs)
      if (!HasRange(ranges, sel.act, t)) {
        ok = false;
        res.warnings.push_back(n.Describe() + " stays FP32: no calibration range for its input '" + t + "'");
      }
    if (!ok) continue;
    sel.selected[i] = true;
    ++res.quantized_nodes;
    sel.wanted.insert(act_inputs->begin(), act_inputs->end());
    if (!n.outputs.empty()) produced_int8.insert(n.outputs[0]);
    // Add and pooling run in int8 only as DQ -> op [-> Relu] -> Q: their output gets a pair even
    // when no quantized node reads it (not a graph output, though).
    if (n.op_type == "Add" || IsPool(n.op_type)) {
      const std::string t = OutputThroughRelus(f, n);
      if (!f.graph_outputs.count(t) && f.consumers.count(t) && HasRange(ranges, sel.act, t)) sel.wanted.insert(t);
    }
  }
  ShareParamsThroughMovement(g, sel);
  return sel;
}

// Pass 2: the new graph. New names are made in a fixed order (activation pairs, then weights and
// biases in graph order), as the output depends on it.
class QdqRewriter {
 public:
  QdqRewriter(const QdqGraphFacts& f, const QdqSelection& sel, bool per_channel, int weight_level)
      : f_(f), sel_(sel), per_channel_(per_channel), weight_level_(weight_level), names_(f.g) {}

  // Parameters and a Q -> DQ node pair for every wanted tensor; returns how many.
  int AddActivationPairs();
  // The nodes in graph order, with quantized weights and biases; readers of a paired tensor read
  // its DequantizeLinear output.
  Status RewriteNodes();
  // Moves the new nodes and initializers into `g` (the FP32 graph's copy).
  void MoveInto(Graph& g);

 private:
  using DequantizedWeight = std::pair<std::string, std::vector<float>>;  // DQ output, scales
  Result<DequantizedWeight> QuantizeWeight(const std::string& w, int axis);
  std::string QuantizeBias(const std::string& b, float x_scale, const std::vector<float>& w_scales);
  // Quantizes the constant weight (and bias) of the selected layer `n` in place.
  Status QuantizeLayerConstants(Node& n);

  const QdqGraphFacts& f_;
  const QdqSelection& sel_;
  const bool per_channel_;
  const int weight_level_;
  Namer names_;
  std::vector<Node> prologue_, body_;
  std::vector<std::pair<std::string, Tensor>> new_inits_;
  std::map<std::string, std::string> dq_of_;       // activation tensor -> its DequantizeLinear output
  std::map<std::string, std::vector<Node>> after_;  // tensor -> Q/DQ nodes to place after its producer
  std::map<std::pair<std::string, int>, DequantizedWeight> weight_dq_;  // (w, axis) -> dq, scales
  std::set<std::string> replaced_weights_;
};

int QdqRewriter::AddActivationPairs() {
  int pairs = 0;
  for (const auto& t : sel_.wanted) {
    const ActivationQuant& q = sel_.act.at(t);
    const std::string s = names_.Make(t + "_scale"), z = names_.Make(t + "_zero_point");
    new_inits_.emplace_back(s, Tensor::Scalar(q.scale));
    new_inits_.emplace_back(z, Tensor::FromVector<uint8_t>(DataType::kUInt8, {}, {q.zero_point}));
    const std::string qo = names_.Make(t + "_quantized"), dqo = names_.Make(t + "_dequantized");
    after_[t].push_back(MakeNode("QuantizeLinear", "", {t, s, z}, {qo}, names_.Make(t + "_QuantizeLinear")));
    after_[t].push_back(MakeNode("DequantizeLinear", "", {qo, s, z}, {dqo}, names_.Make(t + "_DequantizeLinear")));
    dq_of_[t] = dqo;
    ++pairs;
  }
  return pairs;
}

Result<QdqRewriter::DequantizedWeight> QdqRewriter::QuantizeWeight(const std::string& w, int axis) {
  const int a = per_channel_ ? axis : -1;
  auto key = std::make_pair(w, a);
  if (auto it = weight_dq_.find(key); it != weight_dq_.end()) return it->second;
  IL_ASSIGN_OR_RETURN(WeightQuant q, QuantizeWeightSymmetric(*f_.inits.at(w), a, weight_level_));
  const std::string qn = names_.Make(w + "_quantized"), s = names_.Make(w + "_scale"), z = names_.Make(w + "_zero_point");
  const bool vec = a >= 0;
  new_inits_.emplace_back(qn, std::move(q.values));
  new_inits_.emplace_back(s, vec ? Tensor::FromVector<float>(DataType::kFloat, {static_cast<int64_t>(q.scales.size())}, q.scales)
                                 : Tensor::Scalar(q.scales[0]));
  new_inits_.emplace_back(z, vec ? Tensor::FromVector<int8_t>(DataType::kInt8, {static_cast<int64_t>(q.scales.size())},
                                                              std::vector<int8_t>(q.scales.size(), 0))
                                 : Tensor::FromVector<int8_t>(DataType::kInt8, {}, {0}));
  const std::string dqo = names_.Make(w + "_dequantized");
  Node dq = MakeNode("DequantizeLinear", "", {qn, s, z}, {dqo}, names_.Make(w + "_DequantizeLinear"));
  if (vec) SetAttr(dq, "axis", int64_t{a});
  prologue_.push_back(std::move(dq));
  replaced_weights_.insert(w);
  weight_dq_[key] = {dqo, q.scales};
  return weight_dq_[key];
}

std::string QdqRewriter::QuantizeBias(const std::string& b, float x_scale, const std::vector<float>& w_scales) {
  const Tensor* t = f_.inits.at(b);
  if (t->dtype() != DataType::kFloat || t->rank() != 1) return b;
  const int64_t n = t->dim(0);
  if (w_scales.size() != 1 && static_cast<int64_t>(w_scales.size()) != n) return b;
  std::vector<float> bs;
  for (float ws : w_scales) bs.push_back(x_scale * ws);
  for (float s : bs)
    if (!(s > 0) || !std::isfinite(s)) return b;
  std::vector<int32_t> q(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::nearbyint(static_cast<double>(t->data<float>()[i]) / bs[bs.size() == 1 ? 0 : i]);
    q[i] = static_cast<int32_t>(std::clamp(std::isfinite(v) ? v : 0.0, -2147483647.0, 2147483647.0));
  }
  const bool vec = bs.size() > 1;
  const std::string qn = names_.Make(b + "_quantized"), s = names_.Make(b + "_scale"), z = names_.Make(b + "_zero_point");
  new_inits_.emplace_back(qn, Tensor::FromVector<int32_t>(DataType::kInt32, {n}, q));
  new_inits_.emplace_back(s, vec ? Tensor::FromVector<float>(DataType::kFloat, {n}, bs) : Tensor::Scalar(bs[0]));
  new_inits_.emplace_back(z, vec ? Tensor::FromVector<int32_t>(DataType::kInt32, {n}, std::vector<int32_t>(n, 0))
                                 : Tensor::FromVector<int32_t>(DataType::kInt32, {}, {0}));
  const std::string dqo = names_.Make(b + "_dequantized");
  Node dq = MakeNode("DequantizeLinear", "", {qn, s, z}, {dqo}, names_.Make(b + "_DequantizeLinear"));
  if (vec) SetAttr(dq, "axis", int64_t{0});
  prologue_.push_back(std::move(dq));
  replaced_weights_.insert(b);
  return dqo;
}

Status QdqRewriter::QuantizeLayerConstants(Node& n) {
  int axis = 1;  // MatMul [K,N]
  if (n.op_type == "Conv") axis = 0;
  if (n.op_type == "Gemm") axis = AttrInt(n, "transB", 0) ? 0 : 1;
  if (n.op_type == "MatMul" && f_.inits.at(n.inputs[1])->rank() != 2) axis = -1;
  auto w = QuantizeWeight(n.inputs[1], axis);
  if (!w.ok()) return w.status().WithContext(n.Describe());
  n.inputs[1] = w->first;
  const bool bias_ok = n.op_type == "Conv" ||
                       (n.op_type == "Gemm" && AttrFloat(n, "alpha", 1.f) == 1.f && AttrFloat(n, "beta", 1.f) == 1.f);
  if (bias_ok && n.inputs.size() > 2 && f_.inits.count(n.inputs[2]))
    n.inputs[2] = QuantizeBias(n.inputs[2], sel_.act.at(n.inputs[0]).scale, w->second);
  return Status::Ok();
}

Status QdqRewriter::RewriteNodes() {
  const Graph& g = f_.g;
  // Graph inputs first.
  for (const auto& in : g.inputs)
    if (auto it = after_.find(in.name); it != after_.end()) for (auto& n : it->second) prologue_.push_back(n);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = g.nodes[i];
    if (sel_.selected[i] && f_.layers.count(NodeId(n)) && f_.inits.count(n.inputs[1]))
      IL_RETURN_IF_ERROR(QuantizeLayerConstants(n));
    for (auto& in : n.inputs)
      if (auto it = dq_of_.find(in); it != dq_of_.end()) in = it->second;
    body_.push_back(std::move(n));
    for (const auto& o : g.nodes[i].outputs)
      if (auto it = after_.find(o); it != after_.end()) for (auto& qn : it->second) body_.push_back(qn);
  }
  return Status::Ok();
}

// Replaces g's initializers by the ones still read plus `new_inits`: float weights in `replaced`
// that nothing reads any more are dropped, and so are graph inputs naming them.
void ReplaceInitializers(Graph& g, const std::set<std::string>& replaced,
                         std::vector<std::pair<std::string, Tensor>> new_inits) {
  std::set<std::string> used;
  for (const auto& n : g.nodes) {
    used.insert(n.inputs.begin(), n.inputs.end());
    for (const auto& a : n.attributes) {
      if (a.g) CollectNames(*a.g, used);
      for (const auto& sg : a.graphs)
        if (sg) CollectNames(*sg, used);
    }
  }
  for (const auto& o : g.outputs) used.insert(o.name);
  std::vector<std::pair<std::string, Tensor>> kept;
  for (auto& [name, t] : g.initializers)
    if (!replaced.count(name) || used.count(name)) kept.emplace_back(name, std::move(t));
  for (auto& it : new_inits) kept.push_back(std::move(it));
  g.initializers = std::move(kept);
  // Graph inputs that name a removed initializer (IR < 4 lists initializers as inputs too): drop
  // them, or they would become required inputs.
  std::set<std::string> inits_now;
  for (const auto& [name, t] : g.initializers) inits_now.insert(name);
  g.inputs.erase(std::remove_if(g.inputs.begin(), g.inputs.end(),
                                [&](const GraphValue& v) { return replaced.count(v.name) && !inits_now.count(v.name); }),
                 g.inputs.end());
}

void QdqRewriter::MoveInto(Graph& g) {
  // Inputs that are initializers used as activations never get a pair (no range for them), so
  // every wanted tensor has a producer or is a graph input.
  g.nodes = std::move(prologue_);
  for (auto& n : body_) g.nodes.push_back(std::move(n));
  ReplaceInitializers(g, replaced_weights_, std::move(new_inits_));
}

}  // namespace

Result<QdqResult> WriteQdqModel(const Model& fp32, const RangeLookup& ranges, const QdqOptions& opts) {
  QdqResult res;
  IL_ASSIGN_OR_RETURN(const bool per_channel, CheckQdqRequest(fp32, opts, res.warnings));
  res.model = fp32;
  const QdqGraphFacts facts = ReadGraphFacts(fp32, opts);
  const QdqSelection sel = SelectQuantizedNodes(facts, ranges, res);
  QdqRewriter rewriter(facts, sel, per_channel, WeightLevel(opts.reduce_range));
  res.qdq_tensors = rewriter.AddActivationPairs();
  IL_RETURN_IF_ERROR(rewriter.RewriteNodes());
  rewriter.MoveInto(res.model.graph);
  return res;
}

}  // namespace inferloop
