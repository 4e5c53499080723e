#include "optimizer/fusion_util.h"

#include <limits>

namespace inferloop {

int SoleProducer(GraphEditor& ed, const std::string& value, int reader, const char* op, const char* domain) {
  const int p = ed.Producer(value);
  if (!NodeIs(ed, p, op, domain) || !ed.OnlyReader(value, reader)) return -1;
  return p;
}

std::string OtherOperand(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return "";
  if (n.inputs[0] == value) return n.inputs[1];
  if (n.inputs[1] == value) return n.inputs[0];
  return "";
}

bool ActivationOf(GraphEditor& ed, const Node& n, Activation* act) {
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return false;
  const std::string& op = n.op_type;
  Activation a;
  if (n.domain == kInferloopDomain) {
    if (op != "Gelu") return false;
    const std::string approx = AttrString(n, "approximate", "none");
    if (approx != "none" && approx != "tanh") return false;
    a.kind = approx == "tanh" ? ActivationKind::kGeluTanh : ActivationKind::kGelu;
    *act = a;
    return true;
  }
  if (!n.domain.empty()) return false;
  if (op == "Relu") {
    a.kind = ActivationKind::kRelu;
  } else if (op == "LeakyRelu") {
    a.kind = ActivationKind::kLeakyRelu;
    a.alpha = AttrFloat(n, "alpha", 0.01f);
  } else if (op == "Sigmoid") {
    a.kind = ActivationKind::kSigmoid;
  } else if (op == "Tanh") {
    a.kind = ActivationKind::kTanh;
  } else if (op == "HardSigmoid") {
    a.kind = ActivationKind::kHardSigmoid;
    a.alpha = AttrFloat(n, "alpha", 0.2f);
    a.beta = AttrFloat(n, "beta", 0.5f);
  } else if (op == "HardSwish") {
    a.kind = ActivationKind::kHardSwish;
  } else if (op == "Elu") {
    a.kind = ActivationKind::kElu;
    a.alpha = AttrFloat(n, "alpha", 1.0f);
  } else if (op == "Gelu") {
    const std::string approx = AttrString(n, "approximate", "none");
    if (approx != "none" && approx != "tanh") return false;
    a.kind = approx == "tanh" ? ActivationKind::kGeluTanh : ActivationKind::kGelu;
  } else if (op == "Clip") {
    a.kind = ActivationKind::kClip;
    const float inf = std::numeric_limits<float>::infinity();
    if (ed.Opset("") < 11) {
      a.alpha = AttrFloat(n, "min", std::numeric_limits<float>::lowest());
      a.beta = AttrFloat(n, "max", std::numeric_limits<float>::max());
    } else {
      a.alpha = -inf;
      a.beta = inf;
      for (size_t k = 1; k < 3; ++k) {
        if (k >= n.inputs.size() || n.inputs[k].empty()) continue;
        const Tensor* t = ed.Constant(n.inputs[k]);
        if (!t || t->dtype() != DataType::kFloat || t->size() != 1) return false;
        (k == 1 ? a.alpha : a.beta) = t->data<float>()[0];
      }
    }
  } else {
    return false;
  }
  *act = a;
  return true;
}

void SetActivation(Node& n, const Activation& act) {
  SetAttr(n, "activation", act.Name());
  std::vector<float> params = act.Params();
  if (!params.empty()) SetAttr(n, "activation_params", params);
}

bool HasNoActivation(const Node& n) { return AttrString(n, "activation", "").empty(); }

Node MakeNode(const std::string& op, const std::string& domain, std::vector<std::string> inputs,
              std::vector<std::string> outputs, const std::string& name) {
  Node n;
  n.op_type = op;
  n.domain = domain;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.name = name;
  return n;
}

}  // namespace inferloop
