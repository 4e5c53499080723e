// Shape rules: how static type and shape inference (graph/shape_inference.h) infers one op.
//
// A rule reads what is known about a node's inputs (element type, shape with fixed or symbolic
// dims, and for small int64 tensors their values) through a ShapeContext and writes what follows
// for its outputs; an output it does not write stays unknown. Rules are registered per op family
// (src/graph/shape_rules/<family>.cc), as kernels are, and looked up by (domain, op type).
// DefaultShapeRules() is built once and read-only afterwards.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace inferloop {

// One element of a 0-D / 1-D int64 tensor: a known number, or equal to a (symbolic or unknown)
// dim of some tensor (Shape -> Gather -> Unsqueeze -> Concat -> Reshape on symbolic shapes).
struct SymbolicElement {
  bool literal = false;  // `value` is the element
  int64_t value = 0;
  Dim dim;               // else the element equals this dim
};

// What inference knows about one value.
struct InferredValue {
  DataType dtype = DataType::kUndefined;
  bool has_shape = false;
  std::vector<Dim> dims;
  bool has_value = false;  // small int64 tensor with known contents
  std::vector<int64_t> value;
  bool has_sym = false;    // small int64 tensor whose elements are known numbers or dims
  std::vector<SymbolicElement> sym;
  TypeInfo::Kind kind = TypeInfo::Kind::kTensor;
};

using InferredValues = std::unordered_map<std::string, InferredValue>;

// A constant: its shape, and its values when it is a small int32/int64 tensor.
InferredValue ConstantValue(const Tensor& t);

class ShapeRuleRegistry;

// One node's inputs and outputs during inference, handed to its rule.
class ShapeContext {
 public:
  ShapeContext(const ShapeRuleRegistry& rules, InferredValues& values, const Node& node)
      : rules_(rules), values_(values), node_(node) {}

  const Node& node() const { return node_; }
  const InferredValue* In(size_t i) const;  // nullptr: input absent or nothing inferred for it
  void Out(size_t i, InferredValue v);      // ignored for an absent output
  void OutConstant(const Tensor& t);        // output 0 is the constant `t`
  // Axes from the attribute "axes" (old opsets) or the constant input `input_index` (empty when
  // that input is absent); false when the input's values are unknown.
  bool Axes(size_t input_index, std::vector<int64_t>* axes) const;
  // Infers `other`, a node over the same values (e.g. the ai.onnx op a fused op replaces).
  void InferAs(const Node& other);
  // Infers `plain` with its only output a temporary, and input 0 replaced by `x` when given;
  // returns that output (nothing known when its rule wrote none). No value is left behind.
  InferredValue InferTemporary(Node plain, const InferredValue* x = nullptr);

 private:
  const ShapeRuleRegistry& rules_;
  InferredValues& values_;
  const Node& node_;
};

using ShapeRuleFn = std::function<void(ShapeContext&)>;

// What a rule needs of input 0 (X) before it runs.
enum class ShapeRuleInput {
  kAny,      // nothing: the rule handles an absent X itself
  kPresent,  // X inferred: without it no output is written
  kRanked,   // X inferred with a shape: without one, output 0 gets X's dtype and no shape
};

class ShapeRuleRegistry {
 public:
  void Register(const std::string& domain, const std::string& op_type, ShapeRuleFn rule,
                ShapeRuleInput needs = ShapeRuleInput::kRanked);
  // The rule for the ops of `domain` that have none of their own.
  void RegisterFallback(const std::string& domain, ShapeRuleFn rule, ShapeRuleInput needs = ShapeRuleInput::kRanked);
  bool HasRule(const std::string& domain, const std::string& op_type) const;
  // Infers `node`'s outputs into `values` with its rule; nothing for a node without one.
  void Infer(const Node& node, InferredValues& values) const;

 private:
  struct Rule {
    ShapeRuleFn fn;
    ShapeRuleInput needs;
  };
  std::map<std::pair<std::string, std::string>, Rule> rules_;
  std::map<std::string, Rule> fallbacks_;
};

// Every shape rule inferloop has, registered once.
const ShapeRuleRegistry& DefaultShapeRules();

// One function per op family (src/graph/shape_rules/<family>.cc).
void RegisterElementwiseShapeRules(ShapeRuleRegistry& r);  // ops shaped like X, broadcasting ops, Cast, quantize ops
void RegisterReductionShapeRules(ShapeRuleRegistry& r);    // Reduce*, ArgMax/Min, TopK
void RegisterMatmulShapeRules(ShapeRuleRegistry& r);       // MatMul, MatMulInteger, Gemm
void RegisterShapeOpShapeRules(ShapeRuleRegistry& r);      // Shape, Reshape, Concat, Gather, Slice, Split, Pad, ...
void RegisterNnShapeRules(ShapeRuleRegistry& r);           // Conv family, pooling
void RegisterInferloopOpShapeRules(ShapeRuleRegistry& r);  // com.inferloop: NCHW16c, int8 and fused ops

}  // namespace inferloop
