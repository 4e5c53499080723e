// GraphPass: one graph rewrite (constant folding, a fusion, a cancellation), applied to a Model
// in place. Passes keep the graph valid: every value still defined once, nodes in topological
// order, graph inputs and outputs unchanged in name, dtype and numbers (up to float rounding).
// A pass rewrites only where every precondition holds (constant weights, single consumers,
// ranks, attributes, a kernel for the op it would create) and leaves the graph untouched
// elsewhere. Passes look at the main graph only; subgraphs are left as they are.
#pragma once

#include <cstddef>
#include <string>

#include "graph/graph.h"
#include "inferloop/status.h"

namespace inferloop {

class KernelRegistry;

struct PassContext {
  // Ops a pass may create must have a kernel here (nullptr = DefaultKernelRegistry()); constant
  // folding runs kernels from it.
  const KernelRegistry* registry = nullptr;
  // Constant folding materializes a result only if it is at most this many bytes larger than
  // the constants it replaces (keeps ConstantOfShape / Expand / Tile from bloating the model).
  size_t max_folding_growth_bytes = size_t{1} << 20;
};

class GraphPass {
 public:
  virtual ~GraphPass() = default;
  virtual std::string name() const = 0;
  // Rewrites `model`; returns how many rewrites it made (0 = nothing to do).
  virtual Result<int> Apply(Model& model, const PassContext& ctx) const = 0;
};

}  // namespace inferloop
