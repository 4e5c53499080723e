// Topological order of graph nodes: the one sort the optimizer, the runtime plan and
// `inferloop compare` use.
//
// The order is stable: among the nodes that are ready, the lowest index (the file's order) comes
// first, so nodes already in topological order keep their order. (ONNX requires the file's order
// to be topological; some exporters do not comply.)
#pragma once

#include <vector>

#include "inferloop/status.h"

namespace inferloop {

struct Graph;

struct TopologicalOrder {
  std::vector<int> order;      // the nodes that could be ordered
  std::vector<int> unordered;  // nodes on a cycle or behind one, ascending; empty for a DAG
};

// Orders nodes 0..preds.size()-1, where preds[i] lists the nodes that must come before node i
// (repeats allowed; i itself marks node i as never ready).
TopologicalOrder StableTopologicalOrder(const std::vector<std::vector<int>>& preds);

// The indices of g.nodes in stable topological order, dependencies read by value name.
// kInvalidArgument naming a node when a value is defined twice (or a node defines a graph input or
// an initializer), when a node reads a name nothing in g defines (an outer-scope name included), or
// when the nodes form a cycle.
Result<std::vector<int>> TopologicalNodeOrder(const Graph& g);

}  // namespace inferloop
