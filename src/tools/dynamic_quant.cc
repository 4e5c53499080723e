#include "tools/dynamic_quant.h"

#include <algorithm>
#include <map>

#include "base/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_editor.h"

namespace inferloop {

namespace {

// [N,K] -> [K,N] (float).
Tensor Transposed(const Tensor& t) {
  const int64_t r = t.dim(0), c = t.dim(1);
  auto out = Tensor::Create(DataType::kFloat, {c, r});
  Tensor o = std::move(out).value();
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) o.data<float>()[j * r + i] = t.data<float>()[i * c + j];
  return o;
}

}  // namespace

Result<QdqResult> WriteDynamicQuantModel(const Model& fp32, const DynamicQuantOptions& opts) {
  QdqResult res;
  res.model = fp32;
  Graph& g = res.model.graph;
  const int64_t opset = res.model.opsets.count("") ? res.model.opsets.at("") : 0;
  if (opset < 11)
    return Status::InvalidArgument("the model's opset " + std::to_string(opset) +
                                   " has no DynamicQuantizeLinear (opset 11+ needed for --dynamic)");
  std::set<std::string> ids, used_names;
  for (const Node& n : g.nodes) {
    ids.insert(NodeId(n));
    used_names.insert(n.name);
    used_names.insert(n.inputs.begin(), n.inputs.end());
    used_names.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const auto& e : opts.exclude)
    if (!ids.count(e)) return Status::InvalidArgument("no node named '" + e + "' in the model (--exclude takes node names)");
  for (const auto& [n, t] : g.initializers) used_names.insert(n);
  for (const auto& v : g.inputs) used_names.insert(v.name);
  for (const auto& v : g.outputs) used_names.insert(v.name);
  auto make = [&](const std::string& base) {
    std::string n = base;
    for (int i = 1; used_names.count(n); ++i) n = base + "_" + std::to_string(i);
    used_names.insert(n);
    return n;
  };
  std::map<std::string, const Tensor*> inits;
  for (const auto& [n, t] : fp32.graph.initializers) inits[n] = &t;
  std::map<std::string, int> weight_users;
  for (const Node& n : g.nodes)
    for (const auto& i : n.inputs) ++weight_users[i];

  std::vector<Node> out_nodes;
  std::vector<std::pair<std::string, Tensor>> new_inits;
  std::map<std::string, std::vector<std::string>> dql_of;  // activation -> {q, scale, zp}
  std::set<std::string> dropped;
  for (const Node& n : g.nodes) {
    const bool matmul = n.op_type == "MatMul", gemm = n.op_type == "Gemm";
    const Attribute* ta = n.FindAttribute("transA");
    const bool eligible = n.domain.empty() && (matmul || gemm) && n.inputs.size() >= 2 && !n.inputs[0].empty() &&
                          !inits.count(n.inputs[0]) && inits.count(n.inputs[1]) &&
                          inits.at(n.inputs[1])->dtype() == DataType::kFloat && inits.at(n.inputs[1])->rank() == 2 &&
                          !(gemm && ta && ta->i != 0) && !opts.exclude.count(NodeId(n));
    const bool has_c = gemm && n.inputs.size() > 2 && !n.inputs[2].empty();
    if (!eligible || (has_c && !inits.count(n.inputs[2]))) {
      out_nodes.push_back(n);
      continue;
    }
    float alpha = 1, beta = 1;
    if (gemm) {
      if (const Attribute* a = n.FindAttribute("alpha")) alpha = a->f;
      if (const Attribute* a = n.FindAttribute("beta")) beta = a->f;
    }
    const Tensor* b = inits.at(n.inputs[1]);
    const Attribute* tb = n.FindAttribute("transB");
    Tensor bkn = gemm && tb && tb->i != 0 ? Transposed(*b) : *b;  // [K,N]
    IL_ASSIGN_OR_RETURN(WeightQuant wq, QuantizeWeightSymmetric(bkn, opts.per_channel ? 1 : -1, WeightLevel(opts.reduce_range)));
    const std::string base = NodeId(n);
    const std::string bq = make(n.inputs[1] + "_quantized"), bs = make(n.inputs[1] + "_scale"),
                      bz = make(n.inputs[1] + "_zero_point");
    std::vector<float> scales = wq.scales;
    for (float& s : scales) s *= alpha;
    const int64_t nsc = static_cast<int64_t>(scales.size());
    new_inits.emplace_back(bq, std::move(wq.values));
    new_inits.emplace_back(bs, nsc > 1 ? Tensor::FromVector<float>(DataType::kFloat, {nsc}, scales) : Tensor::Scalar(scales[0]));
    new_inits.emplace_back(bz, nsc > 1 ? Tensor::FromVector<int8_t>(DataType::kInt8, {nsc}, std::vector<int8_t>(nsc, 0))
                                       : Tensor::FromVector<int8_t>(DataType::kInt8, {}, {0}));
    if (--weight_users[n.inputs[1]] == 0) dropped.insert(n.inputs[1]);
    const std::string& a = n.inputs[0];
    if (!dql_of.count(a)) {
      std::vector<std::string> o = {make(a + "_quantized"), make(a + "_scale"), make(a + "_zero_point")};
      out_nodes.push_back(MakeNode("DynamicQuantizeLinear", "", {a}, o, make(a + "_DynamicQuantizeLinear")));
      dql_of[a] = o;
    }
    const auto& aq = dql_of[a];
    const std::string scales_mul = make(base + "_scales_mul"), mm = make(base + "_MatMulInteger_output"),
                      cast = make(base + "_cast_output");
    out_nodes.push_back(MakeNode("Mul", "", {aq[1], bs}, {scales_mul}, make(base + "_scales_mul_node")));
    out_nodes.push_back(MakeNode("MatMulInteger", "", {aq[0], bq, aq[2], bz}, {mm}, make(base + "_MatMulInteger")));
    Node c = MakeNode("Cast", "", {mm}, {cast}, make(base + "_cast"));
    SetAttr(c, "to", static_cast<int64_t>(DataType::kFloat));
    out_nodes.push_back(std::move(c));
    if (!has_c) {
      out_nodes.push_back(MakeNode("Mul", "", {cast, scales_mul}, {n.outputs[0]}, make(base + "_mul")));
    } else {
      const std::string mul_out = make(base + "_mul_output");
      out_nodes.push_back(MakeNode("Mul", "", {cast, scales_mul}, {mul_out}, make(base + "_mul")));
      std::string bias = n.inputs[2];
      if (beta != 1.f) {
        Tensor cb = inits.at(bias)->Clone();
        if (cb.dtype() != DataType::kFloat) return Status::InvalidArgument(n.Describe() + ": non-float bias");
        for (int64_t i = 0; i < cb.size(); ++i) cb.data<float>()[i] *= beta;
        bias = make(n.inputs[2] + "_scaled");
        new_inits.emplace_back(bias, std::move(cb));
        if (--weight_users[n.inputs[2]] == 0) dropped.insert(n.inputs[2]);
      }
      out_nodes.push_back(MakeNode("Add", "", {mul_out, bias}, {n.outputs[0]}, make(base + "_bias_add")));
    }
    ++res.quantized_nodes;
  }
  g.nodes = std::move(out_nodes);
  std::set<std::string> graph_outputs;
  for (const auto& o : g.outputs) graph_outputs.insert(o.name);
  std::vector<std::pair<std::string, Tensor>> kept;
  for (auto& [name, t] : g.initializers)
    if (!dropped.count(name) || graph_outputs.count(name)) kept.emplace_back(name, std::move(t));
  for (auto& it : new_inits) kept.push_back(std::move(it));
  g.initializers = std::move(kept);
  // Graph inputs that name a removed initializer (IR < 4): drop them too.
  g.inputs.erase(std::remove_if(g.inputs.begin(), g.inputs.end(),
                                [&](const GraphValue& v) { return dropped.count(v.name) && !graph_outputs.count(v.name); }),
                 g.inputs.end());
  if (res.quantized_nodes == 0) res.warnings.push_back("no MatMul/Gemm with a constant 2-D float weight: nothing quantized");
  return res;
}

}  // namespace inferloop
