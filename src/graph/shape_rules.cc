#include "graph/shape_rules.h"

#include "graph/shape_rules/dims.h"

namespace inferloop {

using shape_rules::Fixed;

InferredValue ConstantValue(const Tensor& t) {
  InferredValue i;
  i.dtype = t.dtype();
  i.has_shape = true;
  for (int64_t d : t.shape()) i.dims.push_back(Fixed(d));
  if ((t.dtype() == DataType::kInt64 || t.dtype() == DataType::kInt32) && t.size() <= 64) {
    i.has_value = true;
    for (int64_t k = 0; k < t.size(); ++k)
      i.value.push_back(t.dtype() == DataType::kInt64 ? t.data<int64_t>()[k] : t.data<int32_t>()[k]);
  }
  return i;
}

const InferredValue* ShapeContext::In(size_t i) const {
  if (i >= node_.inputs.size() || node_.inputs[i].empty()) return nullptr;
  auto it = values_.find(node_.inputs[i]);
  return it == values_.end() ? nullptr : &it->second;
}

void ShapeContext::Out(size_t i, InferredValue v) {
  if (i < node_.outputs.size() && !node_.outputs[i].empty()) values_[node_.outputs[i]] = std::move(v);
}

void ShapeContext::OutConstant(const Tensor& t) { values_[node_.outputs[0]] = ConstantValue(t); }

bool ShapeContext::Axes(size_t input_index, std::vector<int64_t>* axes) const {
  if (const Attribute* a = node_.FindAttribute("axes")) {
    *axes = a->ints;
    return true;
  }
  const InferredValue* ai = In(input_index);
  if (!ai) {
    axes->clear();
    return true;
  }
  if (!ai->has_value) return false;
  *axes = ai->value;
  return true;
}

void ShapeContext::InferAs(const Node& other) { rules_.Infer(other, values_); }

InferredValue ShapeContext::InferTemporary(Node plain, const InferredValue* x) {
  const std::string tmp_in = "\x01temporary_in", tmp_out = "\x01temporary_out";
  if (x) {
    values_[tmp_in] = *x;
    plain.inputs[0] = tmp_in;
  }
  plain.outputs = {tmp_out};
  rules_.Infer(plain, values_);
  InferredValue out;
  if (auto it = values_.find(tmp_out); it != values_.end()) out = it->second;
  values_.erase(tmp_in);
  values_.erase(tmp_out);
  return out;
}

void ShapeRuleRegistry::Register(const std::string& domain, const std::string& op_type, ShapeRuleFn rule,
                                 ShapeRuleInput needs) {
  rules_[{domain, op_type}] = Rule{std::move(rule), needs};
}

void ShapeRuleRegistry::RegisterFallback(const std::string& domain, ShapeRuleFn rule, ShapeRuleInput needs) {
  fallbacks_[domain] = Rule{std::move(rule), needs};
}

bool ShapeRuleRegistry::HasRule(const std::string& domain, const std::string& op_type) const {
  return rules_.count({domain, op_type}) > 0;
}

void ShapeRuleRegistry::Infer(const Node& node, InferredValues& values) const {
  const Rule* rule = nullptr;
  if (auto it = rules_.find({node.domain, node.op_type}); it != rules_.end()) rule = &it->second;
  else if (auto f = fallbacks_.find(node.domain); f != fallbacks_.end()) rule = &f->second;
  if (!rule) return;
  ShapeContext ctx(*this, values, node);
  if (rule->needs != ShapeRuleInput::kAny) {
    const InferredValue* x = ctx.In(0);
    if (!x) return;
    if (rule->needs == ShapeRuleInput::kRanked && !x->has_shape) {
      ctx.Out(0, shape_rules::Unknown(x->dtype));
      return;
    }
  }
  rule->fn(ctx);
}

namespace {

// An ai.onnx op without a rule: X's dtype when X has no shape (kRanked), else every output
// unknown, dtype included, so nothing downstream relies on it.
void InferUnknownOp(ShapeContext& c) {
  for (size_t k = 0; k < c.node().outputs.size(); ++k) c.Out(k, shape_rules::Unknown(DataType::kUndefined));
}

}  // namespace

const ShapeRuleRegistry& DefaultShapeRules() {
  static const ShapeRuleRegistry registry = [] {
    ShapeRuleRegistry r;
    RegisterElementwiseShapeRules(r);
    RegisterReductionShapeRules(r);
    RegisterMatmulShapeRules(r);
    RegisterShapeOpShapeRules(r);
    RegisterNnShapeRules(r);
    r.RegisterFallback("", InferUnknownOp);
    RegisterInferloopOpShapeRules(r);
    return r;
  }();
  return registry;
}

}  // namespace inferloop
