// Runs one node's kernel on constant inputs, outside any session: what constant folding uses.
#pragma once

#include <cstddef>
#include <vector>

#include "compute/kernel_registry.h"
#include "graph/graph.h"

namespace inferloop {

// Evaluates `node` (no subgraph attributes) at `opset` with `inputs` (nullptr = omitted).
// Returns one Value per node output (an unwanted output "" gives an empty Value).
// Errors: no kernel, kernel creation or computation failed, a tensor over max_tensor_bytes.
Result<std::vector<Value>> EvaluateNode(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                        const KernelRegistry& registry, size_t max_tensor_bytes);

}  // namespace inferloop
