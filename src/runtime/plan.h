// ExecutionPlan: a graph compiled for running. Values get slot numbers; nodes are ordered
// topologically (cycles are an error); each node's kernel is created once; every slot is
// released right after its last reader runs. Names a subgraph does not define resolve in
// the enclosing graphs' scopes at compile time.
//
// A plan is immutable after Compile; Execute may run concurrently on one plan (each call
// has its own Frame).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute/kernel.h"
#include "compute/kernel_registry.h"
#include "graph/graph.h"

namespace inferloop {

struct PlanOptions {
  size_t max_tensor_bytes = Tensor::kDefaultMaxBytes;
  const KernelRegistry* registry = nullptr;  // nullptr: DefaultKernelRegistry()
};

// Where a value lives: `depth` frames up the scope chain (0 = this graph), slot index there.
struct ValueRef {
  int depth = 0;
  int slot = -1;
  bool valid() const { return slot >= 0; }
};

struct Frame {
  std::vector<Value> values;
  const Frame* parent = nullptr;
  const Value* Lookup(const ValueRef& r) const;
};

class ExecutionPlan : public Subgraph {
 public:
  // Compiles `graph`. `outer` is the scope chain for subgraphs (nullptr for the main graph).
  static Result<std::unique_ptr<ExecutionPlan>> Compile(const Graph& graph, const std::map<std::string, int64_t>& opsets,
                                                        const PlanOptions& opts, const ExecutionPlan* outer = nullptr);

  // Runs the graph. inputs are in graph-input order (none = absent optional / use initializer).
  Result<std::vector<Value>> Execute(std::vector<Value> inputs, const Frame* parent) const;

  size_t num_inputs() const override { return graph_->inputs.size(); }
  size_t num_outputs() const override { return graph_->outputs.size(); }
  const GraphValue& input(size_t i) const override { return graph_->inputs[i]; }
  const GraphValue& output(size_t i) const override { return graph_->outputs[i]; }
  const Graph& graph() const { return *graph_; }
  // The initializer behind input i, when the input has a default; else nullptr.
  const Tensor* input_default(size_t i) const;
  // Names this graph reads from enclosing scopes.
  const std::vector<std::string>& free_names() const { return free_names_; }
  size_t max_tensor_bytes() const { return opts_.max_tensor_bytes; }

  // The schedule: per step, the node, the value names it defines, and the names released after it.
  struct Step {
    const Node* node;
    std::vector<std::string> defines;
    std::vector<std::string> releases;
  };
  std::vector<Step> Schedule() const;

  // Compile-time lookup of a name visible in this plan (its own slots, then outer scopes).
  bool Resolve(const std::string& name, ValueRef* ref, std::vector<std::string>* free_names) const;

 private:
  struct PlanNode {
    const Node* node = nullptr;
    std::unique_ptr<Kernel> kernel;
    std::vector<ValueRef> inputs;       // invalid = omitted
    std::vector<int> outputs;           // -1 = unused
    std::vector<int> release;           // slots to drop after this node
    std::vector<std::unique_ptr<ExecutionPlan>> subgraphs;
  };
  class InfoImpl;
  class ContextImpl;

  ExecutionPlan() = default;
  int SlotFor(const std::string& name);

  const Graph* graph_ = nullptr;
  const ExecutionPlan* outer_ = nullptr;
  PlanOptions opts_;
  std::unordered_map<std::string, int> slots_;
  std::vector<std::string> slot_names_;
  std::vector<std::pair<int, Tensor>> constants_;  // initializers not overridable by inputs
  std::vector<int> input_slots_;
  std::vector<const Tensor*> input_defaults_;
  std::vector<ValueRef> output_refs_;
  std::vector<PlanNode> nodes_;
  std::vector<std::string> free_names_;
};

}  // namespace inferloop
