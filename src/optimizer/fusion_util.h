// Small helpers shared by the fusion passes.
#pragma once

#include <string>

#include "compute/activation.h"
#include "optimizer/graph_editor.h"

namespace inferloop {

// Node i is domain.op (domain "" = ai.onnx) and still in the graph.
inline bool NodeIs(GraphEditor& ed, int i, const char* op, const char* domain = "") {
  return i >= 0 && !ed.removed(i) && ed.node(i).op_type == op && ed.node(i).domain == domain;
}

// The producer of `value` when it is op `op` (domain "") and `reader` is the value's only
// reader; else -1.
int SoleProducer(GraphEditor& ed, const std::string& value, int reader, const char* op, const char* domain = "");

// The operand of binary node `n` other than `value` (inputs[1] when inputs[0] == value, ...);
// "" when `value` is not an operand or both operands are `value`.
std::string OtherOperand(const Node& n, const std::string& value);

// When node n is an activation a fused kernel can apply (Relu, LeakyRelu, Clip with constant
// bounds, Sigmoid, Tanh, HardSigmoid, HardSwish, Elu, ai.onnx or com.inferloop Gelu), sets *act.
bool ActivationOf(GraphEditor& ed, const Node& n, Activation* act);

// Sets the activation / activation_params attributes of a fused node.
void SetActivation(Node& n, const Activation& act);

// True when fused node n carries no activation (attribute absent or "").
bool HasNoActivation(const Node& n);

// A new node with op, domain, inputs and outputs; name derived from `name`.
Node MakeNode(const std::string& op, const std::string& domain, std::vector<std::string> inputs,
              std::vector<std::string> outputs, const std::string& name);

}  // namespace inferloop
