// ExecutionPlan: a graph compiled for running. Values get slot numbers; nodes are ordered
// topologically (cycles are an error); each node's kernel is created once; every slot is
// released right after its last reader runs. Names a subgraph does not define resolve in
// the enclosing graphs' scopes at compile time.
//
// A plan is immutable after Compile; Execute may run concurrently on one plan (each call
// has its own Frame).
//
// The main graph runs through ExecuteInto with a Frame the caller keeps between runs and,
// optionally, an ArenaBinding: kernels' allocations for values the layout placed get views of
// the arena, graph outputs may be written into caller tensors. Nothing in that path allocates
// on the heap (kernels aside). Subgraphs (If/Loop/Scan bodies) run through Execute, on the heap.
#pragma once

#include <set>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute/kernel.h"
#include "compute/kernel_registry.h"
#include "graph/graph.h"
#include "runtime/arena.h"
#include "runtime/arena_layout.h"

namespace inferloop {

struct NodeTiming;  // inferloop/session.h

struct PlanOptions {
  size_t max_tensor_bytes = Tensor::kDefaultMaxBytes;
  const KernelRegistry* registry = nullptr;  // nullptr: DefaultKernelRegistry()
  // Pass initializers without data where every reader's kernel keeps its own copy (packed
  // weights), so their memory is freed (main graph only).
  bool release_kept_constants = true;
  // KernelInfo::float_precision() of every kernel: kFp32, kBf16 or kFp16.
  Precision float_precision = Precision::kFp32;
};

// Where a value lives: `depth` frames up the scope chain (0 = this graph), slot index there.
struct ValueRef {
  int depth = 0;
  int slot = -1;
  bool valid() const { return slot >= 0; }
};

// The values of one graph while it runs. values[slot] points at the value visible now (one this
// frame produced, held in owned[slot]; a caller's input; a constant) or is nullptr.
struct Frame {
  std::vector<Value> owned;
  std::vector<const Value*> values;
  const Frame* parent = nullptr;
  // Per-node scratch the executor reuses (input pointers, output flags).
  std::vector<const Value*> node_inputs;
  std::vector<uint8_t> node_flags;
  const Value* Lookup(const ValueRef& r) const;
};

// Per-run services passed to every kernel, subgraphs included.
struct RunServices {
  ThreadPool* pool = nullptr;        // KernelContext::thread_pool()
  ScratchArena* scratch = nullptr;   // KernelContext::Scratch(); nullptr = per-call heap blocks
  std::vector<NodeTiming>* profile = nullptr;  // RunOptions::profile: each node's kernel time
};

// Memory for the main graph's values in one run.
struct ArenaBinding {
  const ArenaLayout* layout = nullptr;     // nullptr: no arena
  ArenaBuffer* arena = nullptr;            // at least layout->arena_bytes
  std::shared_ptr<void> keep_alive;        // owns `arena`; every arena tensor holds a copy
  // Optional, by slot: a caller tensor a graph output's kernel writes into when it asks for
  // exactly that dtype and shape (nullptr = allocate).
  const Tensor* const* bound_outputs = nullptr;
  AliasSink* alias_sink = nullptr;
};

class ExecutionPlan : public Subgraph {
 public:
  // Compiles `graph`. `outer` is the scope chain for subgraphs (nullptr for the main graph).
  static Result<std::unique_ptr<ExecutionPlan>> Compile(const Graph& graph, const std::map<std::string, int64_t>& opsets,
                                                        const PlanOptions& opts, const ExecutionPlan* outer = nullptr);

  // Runs the graph. inputs are in graph-input order (none = absent optional / use initializer).
  Result<std::vector<Value>> Execute(std::vector<Value> inputs, const Frame* parent,
                                     const RunServices& services = {}) const;

  // Runs the main graph in `frame` (kept by the caller and reused: no allocation after the
  // first run). inputs[i] is graph input i or nullptr (absent: its initializer or an empty
  // optional); the values must outlive the call. outs[k] receives graph output k.
  Status ExecuteInto(Frame& frame, const Value* const* inputs, const RunServices& services,
                     const ArenaBinding* binding, Value* outs) const;

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

  // Structure by slot, for the memory planner. Steps are in schedule order.
  size_t num_slots() const { return slot_names_.size(); }
  const std::string& slot_name(int s) const { return slot_names_[s]; }
  size_t num_steps() const { return nodes_.size(); }
  const Node& step_node(size_t i) const { return *nodes_[i].node; }
  const std::vector<ValueRef>& step_inputs(size_t i) const { return nodes_[i].inputs; }
  const std::vector<int>& step_outputs(size_t i) const { return nodes_[i].outputs; }  // -1 = unused
  const std::vector<int>& step_releases(size_t i) const { return nodes_[i].release; }
  const std::vector<ValueRef>& output_refs() const { return output_refs_; }
  const std::vector<int>& input_slots() const { return input_slots_; }

  // Compile-time lookup of a name visible in this plan (its own slots, then outer scopes).
  bool Resolve(const std::string& name, ValueRef* ref, std::vector<std::string>* free_names) const;

  // Initializers this plan passes without data because every kernel reading them keeps its
  // own copy (Kernel::KeepsOwnCopyOfConstant); the owner of the Graph may drop their data too.
  const std::vector<std::string>& released_constants() const { return released_constants_; }

  // Bytes of constant data the kernels of this plan (subgraphs included) hold themselves
  // (Kernel::ForEachOwnConstantBuffer), each buffer counted once; `seen` collects the addresses
  // (pass the session's initializer addresses to leave those out).
  size_t KernelConstantBytes(std::set<const void*>* seen) const;

 private:
  void ReleaseConstantsKeptByKernels(const std::set<int>& graph_outputs, const std::set<int>& implicit_reads);
  std::vector<std::string> released_constants_;
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
  // Sizes the frame's vectors for this plan (allocates only the first time).
  void PrepareFrame(Frame& frame) const;
  Status RunNodes(Frame& frame, const RunServices& services, const ArenaBinding* binding) const;

  const Graph* graph_ = nullptr;
  const ExecutionPlan* outer_ = nullptr;
  PlanOptions opts_;
  std::unordered_map<std::string, int> slots_;
  std::vector<std::string> slot_names_;
  std::vector<std::pair<int, Value>> constants_;  // initializers not overridable by inputs
  std::vector<int> input_slots_;
  std::vector<const Tensor*> input_defaults_;
  std::vector<Value> input_default_values_;       // the same, as values (none where absent)
  std::vector<ValueRef> output_refs_;
  std::vector<PlanNode> nodes_;
  std::vector<std::string> free_names_;
  size_t max_node_inputs_ = 0, max_node_outputs_ = 0;
};

}  // namespace inferloop
