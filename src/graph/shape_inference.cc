#include "graph/shape_inference.h"

#include "base/status_macros.h"
#include "graph/shape_rules.h"
#include "graph/shape_rules/dims.h"

namespace inferloop {
namespace {

using shape_rules::AllKnown;
using shape_rules::Fixed;

// Runs the shape rules (graph/shape_rules.h) over the main graph's nodes in order.

class Inferencer {
 public:
  Inferencer(const Model& m) : model_(m) {}

  Status Run(const std::map<std::string, Shape>& overrides, ShapeInferenceResult* out) {
    const Graph& g = model_.graph;
    for (const auto& [name, t] : g.initializers) values_[name] = ConstantValue(t);
    for (const auto& in : g.inputs) {
      if (values_.count(in.name)) continue;  // initializer default
      InferredValue i;
      i.kind = in.type.kind;
      i.dtype = in.type.elem_type;
      i.has_shape = in.type.has_shape;
      i.dims = in.type.dims;
      auto ov = overrides.find(in.name);
      if (ov != overrides.end()) {
        if (in.type.has_shape && in.type.dims.size() != ov->second.size())
          return Status::InvalidArgument("input '" + in.name + "' has rank " + std::to_string(in.type.dims.size()) +
                                         ", given shape " + ShapeToString(ov->second));
        i.has_shape = true;
        i.dims.clear();
        for (int64_t d : ov->second) i.dims.push_back(Fixed(d));
      }
      values_[in.name] = i;
    }
    for (const Node& n : g.nodes) Infer(n);
    for (const auto& [name, info] : values_) {
      TypeInfo t;
      t.kind = info.kind;
      t.elem_type = info.dtype;
      t.has_shape = info.has_shape;
      t.dims = info.dims;
      out->types[name] = t;
      if (info.kind != TypeInfo::Kind::kTensor) continue;
      if (AllKnown(info)) ++out->inferred;
      else ++out->unknown;
    }
    return Status::Ok();
  }

 private:
  // The rule registered for the node's (domain, op type); nothing for an op without one.
  void Infer(const Node& n) { DefaultShapeRules().Infer(n, values_); }

  const Model& model_;
  InferredValues values_;
};

}  // namespace

Result<ShapeInferenceResult> InferShapes(const Model& model, const std::map<std::string, Shape>& input_shapes) {
  ShapeInferenceResult out;
  Inferencer inf(model);
  IL_RETURN_IF_ERROR(inf.Run(input_shapes, &out));
  return out;
}

}  // namespace inferloop
