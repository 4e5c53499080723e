#include "runtime/plan.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "base/status_macros.h"
#include "base/uninitialized_tensor.h"
#include "graph/topological_sort.h"
#include "inferloop/session.h"

namespace inferloop {

const Value* Frame::Lookup(const ValueRef& r) const {
  const Frame* f = this;
  for (int d = 0; d < r.depth && f; ++d) f = f->parent;
  if (!f || r.slot < 0 || r.slot >= static_cast<int>(f->values.size())) return nullptr;
  return f->values[r.slot];
}

namespace {
const Value kAbsent{};  // an omitted optional input
}  // namespace

class ExecutionPlan::InfoImpl : public KernelInfo {
 public:
  InfoImpl(const ExecutionPlan& plan, const PlanNode& pn, int64_t opset) : plan_(plan), pn_(pn), opset_(opset) {}
  const Node& node() const override { return *pn_.node; }
  int64_t opset() const override { return opset_; }
  const Subgraph* subgraph(const std::string& attr_name) const override {
    size_t k = 0;
    for (const auto& a : pn_.node->attributes) {
      if (a.type != Attribute::Type::kGraph) continue;
      if (a.name == attr_name) return k < pn_.subgraphs.size() ? pn_.subgraphs[k].get() : nullptr;
      ++k;
    }
    return nullptr;
  }
  const Tensor* constant_input(int i) const override {
    if (i < 0 || i >= static_cast<int>(pn_.inputs.size())) return nullptr;
    const ValueRef& r = pn_.inputs[i];
    if (r.depth != 0 || r.slot < 0) return nullptr;
    for (const auto& c : plan_.constants_)
      if (c.first == r.slot) return &c.second.tensor();
    return nullptr;
  }
  Precision float_precision() const override { return plan_.opts_.float_precision; }

 private:
  const ExecutionPlan& plan_;
  const PlanNode& pn_;
  int64_t opset_;
};

class ExecutionPlan::ContextImpl : public KernelContext {
 public:
  // flags: 2 * outputs bytes, zeroed: [0, n) output set, [n, 2n) arena block handed out.
  ContextImpl(const ExecutionPlan& plan, const PlanNode& pn, Frame& frame, const Value* const* inputs, uint8_t* flags,
              const RunServices& services, const ArenaBinding* binding)
      : plan_(plan), pn_(pn), frame_(frame), inputs_(inputs), flags_(flags), services_(services), binding_(binding),
        scratch_mark_(services.scratch ? services.scratch->Mark() : 0) {}
  ~ContextImpl() override {
    if (services_.scratch) services_.scratch->Release(scratch_mark_);
  }
  int num_inputs() const override { return static_cast<int>(pn_.inputs.size()); }
  const Value* input_value(int i) const override {
    return i >= 0 && i < static_cast<int>(pn_.inputs.size()) ? inputs_[i] : nullptr;
  }
  int num_outputs() const override { return static_cast<int>(pn_.outputs.size()); }
  bool output_wanted(int i) const override { return i >= 0 && i < num_outputs() && pn_.outputs[i] >= 0; }
  void SetOutput(int i, Value v) override {
    if (!output_wanted(i)) return;
    const int slot = pn_.outputs[i];
    if (binding_ && binding_->arena) KeepArenaValuesInTheirBlocks(slot, v);
    frame_.owned[slot] = std::move(v);
    frame_.values[slot] = &frame_.owned[slot];
    flags_[i] = 1;
  }
  Result<Tensor> Allocate(DataType dtype, Shape shape) override { return AllocateImpl(dtype, std::move(shape), true); }
  Result<Tensor> AllocateUninit(DataType dtype, Shape shape) override { return AllocateImpl(dtype, std::move(shape), false); }
  ThreadPool* thread_pool() const override { return services_.pool; }
  void* Scratch(size_t bytes) override {
    if (bytes > plan_.opts_.max_tensor_bytes) return nullptr;
    if (!services_.scratch) return KernelContext::Scratch(bytes);
    return services_.scratch->Take(bytes);
  }
  Result<std::vector<Value>> RunSubgraph(const Subgraph& g, std::vector<Value> inputs) override {
    return static_cast<const ExecutionPlan&>(g).Execute(std::move(inputs), &frame_, services_);
  }
  const Node& node() const override { return *pn_.node; }
  bool all_set() const {
    for (size_t i = 0; i < pn_.outputs.size(); ++i)
      if (pn_.outputs[i] >= 0 && !flags_[i]) return false;
    return true;
  }

 private:
  bool claimed(size_t i) const { return flags_[pn_.outputs.size() + i] != 0; }
  void claim(size_t i) { flags_[pn_.outputs.size() + i] = 1; }

  // An output's memory: a caller's bound tensor or the value's arena block when the kernel asks
  // for exactly the planned dtype and shape, else the heap.
  Result<Tensor> AllocateImpl(DataType dtype, Shape shape, bool zero) {
    if (binding_) {
      for (size_t i = 0; i < pn_.outputs.size(); ++i) {
        const int s = pn_.outputs[i];
        if (s < 0 || claimed(i)) continue;
        if (binding_->bound_outputs && binding_->bound_outputs[s]) {
          const Tensor& b = *binding_->bound_outputs[s];
          if (b.dtype() != dtype || b.shape() != shape) continue;
          claim(i);
          if (zero && b.nbytes()) std::memset(const_cast<void*>(b.raw_data()), 0, b.nbytes());
          return b;
        }
        if (!binding_->layout || !binding_->arena) continue;
        const SlotPlacement& p = binding_->layout->slots[s];
        if (p.offset < 0 || p.alias_of >= 0 || p.dtype != dtype || p.shape != shape) continue;
        if (zero && p.reuses_input) continue;  // the block still holds an input of this node
        claim(i);
        void* data = binding_->arena->data() + p.offset;
        Tensor t = Tensor::View(dtype, std::move(shape), data, binding_->keep_alive);
        if (zero && t.nbytes()) std::memset(data, 0, t.nbytes());
        return t;
      }
    }
    // Off the arena (a graph output, a shape the plan did not foresee): AllocateUninit's block is
    // not zero-filled either.
    auto r = zero ? Tensor::Create(dtype, std::move(shape), plan_.opts_.max_tensor_bytes)
                  : CreateUninitializedTensor(dtype, std::move(shape), plan_.opts_.max_tensor_bytes);
    if (!r.ok()) return r.status().WithContext(pn_.node->Describe());
    return r;
  }

  // True when t's bytes lie in the block the layout gave `slot` (its own, or the one it views).
  bool InPlannedBlock(int slot, const Tensor& t) const {
    const SlotPlacement& p = binding_->layout->slots[slot];
    const SlotPlacement& root = p.alias_of >= 0 ? binding_->layout->slots[p.alias_of] : p;
    if (root.offset < 0) return false;
    const uint8_t* begin = binding_->arena->data() + root.offset;
    const auto* d = static_cast<const uint8_t*>(t.raw_data());
    return d >= begin && d + t.nbytes() <= begin + root.bytes;
  }
  // The main-graph slot whose live value's buffer holds p, or -1.
  int SourceSlotOf(const void* p) const {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t s = 0; s < frame_.values.size(); ++s) {
      const Value* v = frame_.values[s];
      if (!v || !v->is_tensor()) continue;
      const auto* d = static_cast<const uint8_t*>(v->tensor().raw_data());
      if (d && b >= d && b < d + std::max<size_t>(v->tensor().nbytes(), 1)) return static_cast<int>(s);
    }
    return -1;
  }
  // A value that views arena memory outside its own planned block (a kernel returned a view
  // of an input, a sequence holds arena tensors, a graph output views the arena) would be
  // overwritten when that block is reused: copy it to the heap, and report the sharing so
  // the next layout keeps the blocks together.
  void KeepArenaValuesInTheirBlocks(int slot, Value& v) {
    if (v.is_tensor()) {
      const Tensor& t = v.tensor();
      if (!t.raw_data() || !binding_->arena->Contains(t.raw_data()) || InPlannedBlock(slot, t)) return;
      if (binding_->alias_sink) binding_->alias_sink->ReportAlias(slot, SourceSlotOf(t.raw_data()));
      v = Value(t.Clone());
    } else if (v.is_sequence()) {
      bool any = false;
      for (const Tensor& t : v.sequence())
        if (t.raw_data() && binding_->arena->Contains(t.raw_data())) {
          any = true;
          if (binding_->alias_sink) binding_->alias_sink->ReportAlias(slot, SourceSlotOf(t.raw_data()));
        }
      if (!any) return;
      std::vector<Tensor> copies;
      for (const Tensor& t : v.sequence()) copies.push_back(binding_->arena->Contains(t.raw_data()) ? t.Clone() : t);
      v = Value::MakeSequence(std::move(copies), v.sequence_elem_type());
    }
  }

  const ExecutionPlan& plan_;
  const PlanNode& pn_;
  Frame& frame_;
  const Value* const* inputs_;
  uint8_t* flags_;
  const RunServices& services_;
  const ArenaBinding* binding_;
  size_t scratch_mark_;
};

int ExecutionPlan::SlotFor(const std::string& name) {
  auto it = slots_.find(name);
  if (it != slots_.end()) return it->second;
  int s = static_cast<int>(slot_names_.size());
  slots_[name] = s;
  slot_names_.push_back(name);
  return s;
}

bool ExecutionPlan::Resolve(const std::string& name, ValueRef* ref, std::vector<std::string>* free_names) const {
  auto it = slots_.find(name);
  if (it != slots_.end()) {
    *ref = {0, it->second};
    return true;
  }
  if (!outer_) return false;
  ValueRef outer_ref;
  if (!outer_->Resolve(name, &outer_ref, nullptr)) return false;
  *ref = {outer_ref.depth + 1, outer_ref.slot};
  if (free_names && std::find(free_names->begin(), free_names->end(), name) == free_names->end()) free_names->push_back(name);
  return true;
}

const Tensor* ExecutionPlan::input_default(size_t i) const { return i < input_defaults_.size() ? input_defaults_[i] : nullptr; }

Result<std::unique_ptr<ExecutionPlan>> ExecutionPlan::Compile(const Graph& graph, const std::map<std::string, int64_t>& opsets,
                                                              const PlanOptions& opts, const ExecutionPlan* outer) {
  std::unique_ptr<ExecutionPlan> plan(new ExecutionPlan());
  plan->graph_ = &graph;
  plan->outer_ = outer;
  plan->opts_ = opts;
  if (!plan->opts_.registry) plan->opts_.registry = &DefaultKernelRegistry();
  const std::string gname = graph.name.empty() ? "graph" : "graph '" + graph.name + "'";

  // Slots: inputs, initializers, node outputs. Each name is defined once.
  std::set<std::string> input_names;
  for (const auto& in : graph.inputs) {
    if (in.name.empty()) return Status::InvalidArgument(gname + " has an input with an empty name");
    if (!input_names.insert(in.name).second) return Status::InvalidArgument(gname + " declares input '" + in.name + "' twice");
    plan->input_slots_.push_back(plan->SlotFor(in.name));
  }
  plan->input_defaults_.assign(graph.inputs.size(), nullptr);
  std::set<std::string> init_names;
  for (const auto& [name, t] : graph.initializers) {
    if (!init_names.insert(name).second) return Status::InvalidArgument(gname + " has initializer '" + name + "' twice");
    int slot = plan->SlotFor(name);
    if (input_names.count(name)) {
      for (size_t i = 0; i < graph.inputs.size(); ++i)
        if (graph.inputs[i].name == name) plan->input_defaults_[i] = &t;
    } else {
      plan->constants_.emplace_back(slot, Value(t));
    }
  }
  std::vector<int> producer;  // slot -> node index
  for (size_t ni = 0; ni < graph.nodes.size(); ++ni) {
    for (const auto& out : graph.nodes[ni].outputs) {
      if (out.empty()) continue;
      if (plan->slots_.count(out) && (input_names.count(out) || init_names.count(out)))
        return Status::InvalidArgument(graph.nodes[ni].Describe() + " writes '" + out + "', which is already a graph input or initializer");
      int slot = plan->SlotFor(out);
      if (static_cast<int>(producer.size()) <= slot) producer.resize(slot + 1, -1);
      if (producer[slot] >= 0)
        return Status::InvalidArgument("value '" + out + "' is produced by two nodes: " + graph.nodes[producer[slot]].Describe() +
                                       " and " + graph.nodes[ni].Describe());
      producer[slot] = static_cast<int>(ni);
    }
  }
  producer.resize(plan->slot_names_.size(), -1);

  // Resolve inputs and compile subgraphs.
  std::vector<PlanNode> nodes(graph.nodes.size());
  std::vector<std::vector<int>> reads(graph.nodes.size());  // depth-0 slots each node reads (incl. implicit)
  std::set<int> implicit_reads;                              // depth-0 slots subgraphs read by name
  for (size_t ni = 0; ni < graph.nodes.size(); ++ni) {
    const Node& node = graph.nodes[ni];
    PlanNode& pn = nodes[ni];
    pn.node = &node;
    for (const auto& in : node.inputs) {
      ValueRef ref;
      if (!in.empty()) {
        if (!plan->Resolve(in, &ref, &plan->free_names_))
          return Status::InvalidArgument(node.Describe() + " reads '" + in +
                                         "', which is not a graph input, an initializer or any node's output");
        if (ref.depth == 0) reads[ni].push_back(ref.slot);
      }
      pn.inputs.push_back(ref);
    }
    for (const auto& out : node.outputs) pn.outputs.push_back(out.empty() ? -1 : plan->slots_.at(out));
    for (const auto& a : node.attributes) {
      if (a.type != Attribute::Type::kGraph) continue;
      if (!a.g) return Status::InvalidArgument(node.Describe() + ": attribute '" + a.name + "' has no graph");
      auto sub = Compile(*a.g, opsets, plan->opts_, plan.get());
      if (!sub.ok()) return sub.status().WithContext(node.Describe() + " attribute '" + a.name + "'");
      for (const auto& fname : (*sub)->free_names()) {
        ValueRef ref;
        if (plan->Resolve(fname, &ref, &plan->free_names_) && ref.depth == 0) {
          reads[ni].push_back(ref.slot);
          implicit_reads.insert(ref.slot);
        }
      }
      pn.subgraphs.push_back(std::move(sub).value());
    }
  }

  // Topological order (stable: file order among ready nodes); a leftover node means a cycle.
  const size_t n = nodes.size();
  std::vector<std::vector<int>> preds(n);
  for (size_t ni = 0; ni < n; ++ni)
    for (int s : reads[ni])
      if (producer[s] >= 0) {
        if (producer[s] == static_cast<int>(ni))
          return Status::InvalidArgument("the graph has a cycle: " + graph.nodes[ni].Describe() + " reads its own output");
        preds[ni].push_back(producer[s]);
      }
  TopologicalOrder sorted = StableTopologicalOrder(preds);
  if (!sorted.unordered.empty())
    return Status::InvalidArgument("the graph has a cycle (or reads values that are never produced) through " +
                                   graph.nodes[sorted.unordered.front()].Describe());
  const std::vector<int>& order = sorted.order;

  // Kernels.
  for (int ni : order) {
    PlanNode& pn = nodes[ni];
    const Node& node = *pn.node;
    auto op_it = opsets.find(node.domain);
    const std::string dom = node.domain.empty() ? "ai.onnx" : node.domain;
    if (op_it == opsets.end())
      return Status::InvalidArgument(node.Describe() + " uses domain '" + dom + "', which the model does not import");
    const KernelFactory* f = plan->opts_.registry->Find(node.domain, node.op_type, op_it->second);
    if (!f) {
      std::string why = plan->opts_.registry->HasOp(node.domain, node.op_type) ? " at this opset version" : "";
      return Status::Unimplemented("operator '" + node.op_type + "' (domain '" + dom + "', opset " +
                                   std::to_string(op_it->second) + ") is not supported by inferloop" + why +
                                   (node.name.empty() ? "" : " (node '" + node.name + "')"));
    }
    InfoImpl info(*plan, pn, op_it->second);
    auto k = (*f)(info);
    if (!k.ok()) return k.status();
    pn.kernel = std::move(k).value();
  }

  // Liveness: release each slot after its last reader; graph outputs stay.
  std::vector<int> last_use(plan->slot_names_.size(), -1);
  for (size_t pos = 0; pos < order.size(); ++pos)
    for (int s : reads[order[pos]]) last_use[s] = static_cast<int>(pos);
  std::set<int> keep;
  for (const auto& out : graph.outputs) {
    ValueRef ref;
    if (!plan->Resolve(out.name, &ref, &plan->free_names_))
      return Status::InvalidArgument(gname + " output '" + out.name + "' is not produced by any node, input or initializer");
    if (ref.depth == 0) keep.insert(ref.slot);
    plan->output_refs_.push_back(ref);
  }
  for (size_t pos = 0; pos < order.size(); ++pos) {
    PlanNode& pn = nodes[order[pos]];
    std::set<int> rel;
    for (int s : reads[order[pos]])
      if (last_use[s] == static_cast<int>(pos) && !keep.count(s)) rel.insert(s);
    for (int s : pn.outputs)  // outputs nobody reads
      if (s >= 0 && last_use[s] < 0 && !keep.count(s)) rel.insert(s);
    pn.release.assign(rel.begin(), rel.end());
  }
  for (int ni : order) plan->nodes_.push_back(std::move(nodes[ni]));
  for (const PlanNode& pn : plan->nodes_) {
    plan->max_node_inputs_ = std::max(plan->max_node_inputs_, pn.inputs.size());
    plan->max_node_outputs_ = std::max(plan->max_node_outputs_, pn.outputs.size());
  }
  for (const Tensor* t : plan->input_defaults_) plan->input_default_values_.push_back(t ? Value(*t) : Value());
  if (!outer && plan->opts_.release_kept_constants) plan->ReleaseConstantsKeptByKernels(keep, implicit_reads);
  return plan;
}

void ExecutionPlan::ReleaseConstantsKeptByKernels(const std::set<int>& graph_outputs, const std::set<int>& implicit_reads) {
  for (auto& [slot, v] : constants_) {
    if (!v.is_tensor() || graph_outputs.count(slot) || implicit_reads.count(slot)) continue;
    const Tensor& t = v.tensor();
    if (t.raw_data() == nullptr || t.size() == 0) continue;
    int readers = 0;
    bool all_keep = true;
    for (const PlanNode& pn : nodes_)
      for (size_t k = 0; k < pn.inputs.size(); ++k)
        if (pn.inputs[k].depth == 0 && pn.inputs[k].slot == slot) {
          ++readers;
          all_keep = all_keep && pn.kernel && pn.kernel->KeepsOwnCopyOfConstant(static_cast<int>(k));
        }
    if (readers == 0 || !all_keep) continue;
    v = Value(Tensor::View(t.dtype(), t.shape(), nullptr, nullptr));
    released_constants_.push_back(slot_names_[slot]);
  }
}

std::vector<ExecutionPlan::Step> ExecutionPlan::Schedule() const {
  std::vector<Step> steps;
  for (const PlanNode& pn : nodes_) {
    Step st{pn.node, {}, {}};
    for (int s : pn.outputs)
      if (s >= 0) st.defines.push_back(slot_names_[s]);
    for (int s : pn.release) st.releases.push_back(slot_names_[s]);
    steps.push_back(std::move(st));
  }
  return steps;
}

void ExecutionPlan::PrepareFrame(Frame& frame) const {
  const size_t n = slot_names_.size();
  if (frame.values.size() != n) {
    frame.owned.assign(n, Value());
    frame.values.assign(n, nullptr);
  }
  if (frame.node_inputs.size() < max_node_inputs_) frame.node_inputs.resize(max_node_inputs_);
  if (frame.node_flags.size() < 2 * max_node_outputs_) frame.node_flags.resize(2 * max_node_outputs_);
  for (const auto& [slot, v] : constants_) frame.values[slot] = &v;
}

namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RecordTiming(const Node& node, const Frame& frame, int64_t start_ns, std::vector<NodeTiming>& out) {
  const int64_t end_ns = SteadyNowNs();
  int depth = 0;
  for (const Frame* f = frame.parent; f; f = f->parent) ++depth;
  out.push_back({node.name, node.domain.empty() ? node.op_type : node.domain + ":" + node.op_type, start_ns,
                 end_ns - start_ns, depth});
}

}  // namespace

Status ExecutionPlan::RunNodes(Frame& frame, const RunServices& services, const ArenaBinding* binding) const {
  for (const PlanNode& pn : nodes_) {
    const Value** in = frame.node_inputs.data();
    for (size_t k = 0; k < pn.inputs.size(); ++k) in[k] = pn.inputs[k].valid() ? frame.Lookup(pn.inputs[k]) : nullptr;
    uint8_t* flags = frame.node_flags.data();
    if (!pn.outputs.empty()) std::memset(flags, 0, 2 * pn.outputs.size());
    {
      ContextImpl ctx(*this, pn, frame, in, flags, services, binding);
      const int64_t start_ns = services.profile ? SteadyNowNs() : 0;
      Status st = pn.kernel->Compute(ctx);
      if (services.profile) RecordTiming(*pn.node, frame, start_ns, *services.profile);
      if (!st.ok()) {
        const std::string d = pn.node->Describe();
        if (st.message().rfind(d, 0) == 0) return st;
        return st.WithContext(d);
      }
      if (!ctx.all_set()) return Status::Internal(pn.node->Describe() + " did not produce all of its outputs");
    }
    for (int s : pn.release) {
      frame.owned[s] = Value();
      frame.values[s] = nullptr;
    }
  }
  return Status::Ok();
}

Result<std::vector<Value>> ExecutionPlan::Execute(std::vector<Value> inputs, const Frame* parent,
                                                  const RunServices& services) const {
  Frame frame;
  frame.parent = parent;
  PrepareFrame(frame);
  for (size_t i = 0; i < input_slots_.size(); ++i) {
    const int s = input_slots_[i];
    if (i < inputs.size() && !inputs[i].is_none()) {
      frame.owned[s] = std::move(inputs[i]);
      frame.values[s] = &frame.owned[s];
    } else if (input_defaults_[i]) {
      frame.values[s] = &input_default_values_[i];
    } else {
      frame.values[s] = &kAbsent;
    }
  }
  IL_RETURN_IF_ERROR(RunNodes(frame, services, nullptr));
  std::vector<Value> outs;
  outs.reserve(output_refs_.size());
  for (const ValueRef& r : output_refs_) {
    const Value* v = frame.Lookup(r);
    outs.push_back(v ? *v : Value());
  }
  return outs;
}

Status ExecutionPlan::ExecuteInto(Frame& frame, const Value* const* inputs, const RunServices& services,
                                  const ArenaBinding* binding, Value* outs) const {
  frame.parent = nullptr;
  PrepareFrame(frame);
  for (size_t i = 0; i < input_slots_.size(); ++i) {
    const Value* v = inputs[i];
    if (v && !v->is_none()) frame.values[input_slots_[i]] = v;
    else if (input_defaults_[i]) frame.values[input_slots_[i]] = &input_default_values_[i];
    else frame.values[input_slots_[i]] = v ? v : &kAbsent;
  }
  Status st = RunNodes(frame, services, binding);
  if (st.ok()) {
    for (size_t k = 0; k < output_refs_.size(); ++k) {
      const Value* v = frame.Lookup(output_refs_[k]);
      outs[k] = v ? *v : Value();
    }
  }
  // Drop what the frame still holds (graph outputs; everything after an error).
  for (size_t s = 0; s < frame.values.size(); ++s) {
    if (!frame.values[s]) continue;
    frame.values[s] = nullptr;
    if (!frame.owned[s].is_none()) frame.owned[s] = Value();
  }
  return st;
}

size_t ExecutionPlan::KernelConstantBytes(std::set<const void*>* seen) const {
  size_t total = 0;
  for (const PlanNode& pn : nodes_) {
    if (pn.kernel)
      pn.kernel->ForEachOwnConstantBuffer([&](const void* data, size_t bytes) {
        if (data && seen->insert(data).second) total += bytes;
      });
    for (const auto& sub : pn.subgraphs) total += sub->KernelConstantBytes(seen);
  }
  return total;
}

}  // namespace inferloop
