// Shape rules of the elementwise ops: ops shaped like X (unary math, activations, normalizations,
// Softmax, CumSum, Identity, Dropout, ...), IsNaN / IsInf, broadcasting binary ops, comparisons
// and Where (with int64 arithmetic on known small vectors), Cast / CastLike, and the quantize ops.
#include <algorithm>

#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using namespace shape_rules;

// Output 0 is X's type and shape; its values are not known.
void InferSameAsInput(ShapeContext& c) {
  const InferredValue* x = c.In(0);
  InferredValue o = x ? *x : InferredValue();
  o.has_value = false;
  o.value.clear();
  o.has_sym = false;
  o.sym.clear();
  c.Out(0, o);
}

// Dropout: Y like X; mask bool of X's shape.
void InferDropout(ShapeContext& c) {
  InferSameAsInput(c);
  const InferredValue* x = c.In(0);
  if (x && x->has_shape) c.Out(1, TensorInfo(DataType::kBool, x->dims));
}

// IsNaN, IsInf: bool of X's shape.
void InferIsClass(ShapeContext& c) {
  const InferredValue& x = *c.In(0);
  c.Out(0, x.has_shape ? TensorInfo(DataType::kBool, x.dims) : Unknown(DataType::kBool));
}

bool IsComparison(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual";
}

// Binary ops, comparisons (bool) and Where (dtype of X input 1): the broadcast of all inputs.
// Add, Sub, Mul and Div of two known small vectors also compute the values.
void InferBroadcasting(ShapeContext& c) {
  const Node& n = c.node();
  const std::string& op = n.op_type;
  const InferredValue* x = c.In(0);
  const DataType xt = x ? x->dtype : DataType::kUndefined;
  const bool compare = IsComparison(op);
  std::vector<const InferredValue*> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(c.In(i));
  DataType t = compare ? DataType::kBool : (op == "Where" ? (ins.size() > 1 && ins[1] ? ins[1]->dtype : xt) : xt);
  Dims d;
  InferredValue o = BroadcastAll(ins, &d) ? TensorInfo(t, d) : Unknown(t);
  // Shape arithmetic on known small vectors.
  if (!compare && ins.size() == 2 && ins[0] && ins[1] && ins[0]->has_value && ins[1]->has_value &&
      (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")) {
    const auto &a = ins[0]->value, &b = ins[1]->value;
    size_t len = std::max(a.size(), b.size());
    if ((a.size() == len || a.size() == 1) && (b.size() == len || b.size() == 1)) {
      o.has_value = true;
      for (size_t k = 0; k < len; ++k) {
        int64_t va = a[a.size() == 1 ? 0 : k], vb = b[b.size() == 1 ? 0 : k];
        if (op == "Div" && vb == 0) { o.has_value = false; break; }
        o.value.push_back(op == "Add" ? va + vb : op == "Sub" ? va - vb : op == "Mul" ? va * vb : va / vb);
      }
      if (!o.has_value) o.value.clear();
    }
  }
  c.Out(0, o);
}

// Cast (attribute to), CastLike (input 1's dtype): X's shape; its values survive a cast to int.
void InferCast(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue* x = c.In(0);
  DataType t = n.op_type == "Cast" ? static_cast<DataType>(n.FindAttribute("to") ? n.FindAttribute("to")->i : 0)
                                   : (c.In(1) ? c.In(1)->dtype : DataType::kUndefined);
  InferredValue o = x ? *x : InferredValue();
  o.dtype = t;
  if (!(t == DataType::kInt64 || t == DataType::kInt32)) { o.has_value = false; o.value.clear(); o.has_sym = false; o.sym.clear(); }
  c.Out(0, o);
}

// DynamicQuantizeLinear: y uint8 of X's shape; y_scale, y_zero_point scalars.
void InferDynamicQuantize(ShapeContext& c) {
  const InferredValue* x = c.In(0);
  c.Out(0, x && x->has_shape ? TensorInfo(DataType::kUInt8, x->dims) : Unknown(DataType::kUInt8));
  if (c.node().outputs.size() > 1) c.Out(1, TensorInfo(DataType::kFloat, {}));
  if (c.node().outputs.size() > 2) c.Out(2, TensorInfo(DataType::kUInt8, {}));
}

// QuantizeLinear (output_dtype, else the zero point's, else uint8), DequantizeLinear (the
// scale's dtype): X's shape.
void InferQuantizeLinear(ShapeContext& c) {
  const Node& n = c.node();
  const InferredValue* x = c.In(0);
  DataType t = DataType::kFloat;
  if (n.op_type == "DequantizeLinear") {
    if (const InferredValue* s = n.inputs.size() > 1 ? c.In(1) : nullptr) t = s->dtype;
  } else if (const Attribute* od = n.FindAttribute("output_dtype"); od && od->i != 0) {
    t = static_cast<DataType>(od->i);
  } else {
    const InferredValue* z = n.inputs.size() > 2 && !n.inputs[2].empty() ? c.In(2) : nullptr;
    t = z ? z->dtype : DataType::kUInt8;
  }
  c.Out(0, x && x->has_shape ? TensorInfo(t, x->dims) : Unknown(t));
}

}  // namespace

void RegisterElementwiseShapeRules(ShapeRuleRegistry& r) {
  for (const char* op :
       {"Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Floor", "Ceil", "Round", "Reciprocal",
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "LeakyRelu", "Elu",
        "Selu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Gelu", "Mish", "Swish", "Celu", "ThresholdedRelu",
        "Shrink", "Clip", "Softmax", "LogSoftmax", "Hardmax", "Sign", "Not", "BitwiseNot", "LRN", "LpNormalization",
        "InstanceNormalization", "MeanVarianceNormalization", "GroupNormalization", "RMSNormalization", "CumSum",
        "LayerNormalization", "BatchNormalization", "Identity", "Trilu", "ReverseSequence", "RotaryEmbedding"})
    r.Register("", op, InferSameAsInput, ShapeRuleInput::kAny);
  r.Register("", "Dropout", InferDropout, ShapeRuleInput::kAny);
  r.Register("", "IsNaN", InferIsClass, ShapeRuleInput::kPresent);
  r.Register("", "IsInf", InferIsClass, ShapeRuleInput::kPresent);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Mean", "Sum", "And", "Or", "Xor",
                         "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "PRelu", "Equal", "Less", "Greater",
                         "LessOrEqual", "GreaterOrEqual", "Where"})
    r.Register("", op, InferBroadcasting, ShapeRuleInput::kAny);
  r.Register("", "Cast", InferCast, ShapeRuleInput::kAny);
  r.Register("", "CastLike", InferCast, ShapeRuleInput::kAny);
  r.Register("", "DynamicQuantizeLinear", InferDynamicQuantize, ShapeRuleInput::kAny);
  r.Register("", "QuantizeLinear", InferQuantizeLinear, ShapeRuleInput::kAny);
  r.Register("", "DequantizeLinear", InferQuantizeLinear, ShapeRuleInput::kAny);
}

}  // namespace inferloop
