// Static type and shape inference over the graph IR, before anything runs.
//
// Starting from the graph inputs' declared types (optionally overridden with concrete shapes),
// propagates element types and shapes (fixed or symbolic dims) through the ops inferloop knows
// the rules for, and the values of small integer tensors (shape arithmetic: Shape -> Gather ->
// Concat -> Reshape), so reshapes of exported models resolve. Values whose shape depends on data
// (NonZero, Unique, ...) or on ops without a rule are left with has_shape = false.
#pragma once

#include <map>
#include <string>

#include "graph/graph.h"

namespace inferloop {

struct ShapeInferenceResult {
  std::map<std::string, TypeInfo> types;  // every value name in the main graph
  int inferred = 0;                       // tensor values with a fully known shape
  int unknown = 0;                        // tensor values without one
};

// input_shapes: concrete shapes for some inputs (replace declared symbolic dims).
Result<ShapeInferenceResult> InferShapes(const Model& model, const std::map<std::string, Shape>& input_shapes = {});

}  // namespace inferloop
