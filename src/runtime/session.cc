#include "inferloop/session.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>

#include "base/process_memory.h"
#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "graph/onnx_loader.h"
#include "optimizer/optimizer.h"
#include "runtime/memory_plan.h"
#include "runtime/plan.h"
#include "runtime/shape_plan_cache.h"
#include "runtime/session_internal.h"

namespace inferloop {

namespace {

ValueInfo ToValueInfo(const GraphValue& gv) {
  ValueInfo vi;
  vi.name = gv.name;
  const TypeInfo* t = &gv.type;
  switch (t->kind) {
    case TypeInfo::Kind::kTensor: case TypeInfo::Kind::kSparseTensor: vi.kind = ValueInfo::Kind::kTensor; break;
    case TypeInfo::Kind::kSequence: vi.kind = ValueInfo::Kind::kSequence; break;
    case TypeInfo::Kind::kOptional: vi.kind = ValueInfo::Kind::kOptional; break;
    case TypeInfo::Kind::kMap: vi.kind = ValueInfo::Kind::kMap; break;
    default: vi.kind = ValueInfo::Kind::kUnknown;
  }
  while (t->inner && t->kind != TypeInfo::Kind::kTensor) t = t->inner.get();
  vi.dtype = t->elem_type;
  vi.has_shape = t->has_shape;
  vi.shape = t->dims;
  return vi;
}

// True when the main graph holds quantization nodes (a QDQ model, or one with integer ops).
bool HasQuantizationNodes(const Graph& g) {
  static const std::set<std::string> kOps = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                                             "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"};
  for (const Node& n : g.nodes)
    if ((n.domain.empty() || n.domain == "ai.onnx") && kOps.count(n.op_type)) return true;
  return false;
}

// SessionOptions::precision for this model: the precision in force, the float32 kernels'
// weight precision, and whether the optimizer fuses Q/DQ patterns into int8 kernels.
struct ResolvedPrecision {
  Precision effective = Precision::kFp32;
  Precision float_precision = Precision::kFp32;
  bool fuse_qdq = true;
};

Result<ResolvedPrecision> ResolvePrecision(Precision requested, const Graph& g) {
  ResolvedPrecision r;
  const bool quantized = HasQuantizationNodes(g);
  switch (requested) {
    case Precision::kAuto:
      r.effective = quantized ? Precision::kInt8 : Precision::kFp32;
      break;
    case Precision::kFp32:
      r.effective = Precision::kFp32;
      r.fuse_qdq = false;  // Q/DQ nodes run as written, in float
      break;
    case Precision::kInt8:
      if (!quantized)
        return Status::InvalidArgument(
            "precision int8: the model has no QuantizeLinear/DequantizeLinear nodes; make an int8 model first with "
            "`inferloop quantize MODEL -o MODEL_INT8.onnx --calibration DATA` (or use fp32, bf16 or fp16)");
      r.effective = Precision::kInt8;
      break;
    case Precision::kBf16:
      if (DefaultKernelsComputeBf16()) {
        r.effective = r.float_precision = Precision::kBf16;
      } else {
        std::cerr << "note: precision bf16: this CPU lacks AVX512_BF16 (or oneDNN is off); storing weights as fp16 "
                     "and computing in fp32 instead\n";
        r.effective = r.float_precision = Precision::kFp16;
      }
      break;
    case Precision::kFp16:
      r.effective = r.float_precision = Precision::kFp16;
      break;
  }
  return r;
}

}  // namespace

std::string ValueInfo::ToString() const {
  std::string s = name + ": ";
  std::string elem = DataTypeName(dtype);
  if (has_shape) {
    elem += "[";
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) elem += ",";
      elem += shape[i].value >= 0 ? std::to_string(shape[i].value) : (shape[i].symbol.empty() ? "?" : shape[i].symbol);
    }
    elem += "]";
  }
  switch (kind) {
    case Kind::kTensor: return s + elem;
    case Kind::kSequence: return s + "sequence<" + elem + ">";
    case Kind::kOptional: return s + "optional<" + elem + ">";
    case Kind::kMap: return s + "map<" + elem + ">";
    default: return s + "unknown";
  }
}

// Everything one run needs besides the session's immutable parts; reused by later runs so
// that a steady-state run allocates nothing. One per run in flight.
struct RunState {
  Frame frame;
  ScratchArena scratch;
  std::shared_ptr<ArenaBuffer> arena;
  size_t last_arena_bytes = 0;
  std::vector<const Value*> inputs;   // by graph input
  std::vector<Value> outs;            // by graph output
  std::vector<const Tensor*> bound;   // by slot: caller tensors graph outputs are written into
  std::vector<size_t> wanted;         // graph output index per result entry
  std::vector<int64_t> dim_values;    // by symbolic dimension
  std::chrono::steady_clock::time_point last_used;
};

namespace {
using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
}  // namespace

class Session::Impl {
 public:
  Model model;
  std::unique_ptr<ExecutionPlan> plan;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<bool> input_required;        // parallel to graph inputs
  std::map<std::string, size_t> input_index;  // name -> graph input index
  // Symbolic dimensions: every (input, dim) naming symbol k must agree.
  struct SymbolicDim {
    int symbol;
    size_t input, dim;
  };
  std::vector<SymbolicDim> symbolic_dims;
  std::vector<std::string> symbol_names;
  std::vector<int> output_slot;            // by graph output: depth-0 slot a node produces, else -1

  SessionOptions opts;
  Precision precision = Precision::kFp32;  // opts.precision resolved
  ThreadPool* pool = nullptr;
  std::unique_ptr<ShapePlanCache> shape_plans;
  SessionCreateTimings timings;

  mutable std::mutex states_mu;
  std::vector<std::unique_ptr<RunState>> idle_states;
  int total_states = 0;
  size_t last_arena_bytes = 0;

  Status CheckInput(size_t gi, const Value& v) const;
  Status CheckSymbolicDims(RunState& rs) const;
  std::unique_ptr<RunState> AcquireState();
  void ReleaseState(std::unique_ptr<RunState> rs);
  // Checks `given` and points rs.inputs at the values.
  Status BindInputs(const std::vector<NamedValue>& given, RunState& rs) const;
  // Runs with rs.inputs, leaving every graph output in rs.outs. bind_outputs: the caller's
  // result entries, parallel to rs.wanted, whose tensors outputs may be written into.
  Status Execute(RunState& rs, const std::vector<NamedValue>* bind_outputs, std::vector<NodeTiming>* profile);
  Status SelectOutputs(const std::vector<std::string>& names, RunState& rs) const;
  class StateLease;
};

Status Session::Impl::CheckInput(size_t gi, const Value& v) const {
  const GraphValue& gv = model.graph.inputs[gi];
  const TypeInfo& t = gv.type;
  auto who = [&] { return "input '" + gv.name + "'"; };  // built only for an error
  if (t.kind == TypeInfo::Kind::kTensor) {
    if (!v.is_tensor()) return Status::InvalidArgument(who() + " must be a tensor, got " + v.DebugString());
    const Tensor& x = v.tensor();
    if (t.elem_type != DataType::kUndefined && x.dtype() != t.elem_type)
      return Status::InvalidArgument(who() + " expects dtype " + DataTypeName(t.elem_type) + ", got " + DataTypeName(x.dtype()));
    if (t.has_shape) {
      if (x.rank() != static_cast<int>(t.dims.size()))
        return Status::InvalidArgument(who() + " expects rank " + std::to_string(t.dims.size()) + " (" + gv.type.ToString() +
                                       "), got shape " + ShapeToString(x.shape()));
      for (size_t d = 0; d < t.dims.size(); ++d)
        if (t.dims[d].value >= 0 && t.dims[d].value != x.dim(static_cast<int>(d)))
          return Status::InvalidArgument(who() + " expects shape " + gv.type.ToString() + ", got " + ShapeToString(x.shape()) +
                                         " (dimension " + std::to_string(d) + " must be " + std::to_string(t.dims[d].value) + ")");
    }
  } else if (t.kind == TypeInfo::Kind::kSequence) {
    if (!v.is_sequence()) return Status::InvalidArgument(who() + " must be a sequence, got " + v.DebugString());
  }
  return Status::Ok();
}

Status Session::Impl::CheckSymbolicDims(RunState& rs) const {
  rs.dim_values.assign(symbol_names.size(), -1);
  for (const SymbolicDim& sd : symbolic_dims) {
    const Value* v = rs.inputs[sd.input];
    if (!v || !v->is_tensor() || static_cast<int>(sd.dim) >= v->tensor().rank()) continue;
    const int64_t actual = v->tensor().dim(static_cast<int>(sd.dim));
    int64_t& seen = rs.dim_values[sd.symbol];
    if (seen < 0) {
      seen = actual;
      continue;
    }
    if (seen == actual) continue;
    // Name the first input that set the symbol.
    std::string first;
    for (const SymbolicDim& o : symbolic_dims)
      if (o.symbol == sd.symbol && rs.inputs[o.input] && rs.inputs[o.input]->is_tensor()) {
        first = model.graph.inputs[o.input].name;
        break;
      }
    return Status::InvalidArgument("dimension '" + symbol_names[sd.symbol] + "' is " + std::to_string(seen) + " in input '" +
                                   first + "' but " + std::to_string(actual) + " in input '" +
                                   model.graph.inputs[sd.input].name + "'");
  }
  return Status::Ok();
}

std::unique_ptr<RunState> Session::Impl::AcquireState() {
  {
    std::lock_guard<std::mutex> lock(states_mu);
    if (!idle_states.empty()) {
      std::unique_ptr<RunState> rs = std::move(idle_states.back());  // the warmest one
      idle_states.pop_back();
      return rs;
    }
    ++total_states;
  }
  return std::make_unique<RunState>();
}

void Session::Impl::ReleaseState(std::unique_ptr<RunState> rs) {
  const auto now = Clock::now();
  rs->last_used = now;
  const auto idle_limit = std::chrono::milliseconds(std::max(opts.arena_idle_release_ms, 0));
  std::lock_guard<std::mutex> lock(states_mu);
  last_arena_bytes = rs->last_arena_bytes;
  // Arenas idle for too long go back to the OS (big ones are mmapped: freed at once).
  for (auto& idle : idle_states)
    if (now - idle->last_used > idle_limit) {
      idle->arena.reset();
      idle->scratch.Clear();
    }
  idle_states.push_back(std::move(rs));
}

Status Session::Impl::SelectOutputs(const std::vector<std::string>& names, RunState& rs) const {
  const auto& g = model.graph;
  rs.wanted.clear();
  if (names.empty()) {
    for (size_t i = 0; i < g.outputs.size(); ++i) rs.wanted.push_back(i);
    return Status::Ok();
  }
  for (const auto& name : names) {
    size_t k = 0;
    while (k < g.outputs.size() && g.outputs[k].name != name) ++k;
    if (k == g.outputs.size()) return Status::InvalidArgument("unknown output '" + name + "'");
    rs.wanted.push_back(k);
  }
  return Status::Ok();
}

Status Session::Impl::BindInputs(const std::vector<NamedValue>& given, RunState& rs) const {
  const auto& g = model.graph;
  rs.inputs.assign(g.inputs.size(), nullptr);
  for (const auto& [name, v] : given) {
    auto it = input_index.find(name);
    if (it == input_index.end()) {
      std::string names;
      for (const auto& vi : inputs) names += (names.empty() ? "" : ", ") + vi.name;
      return Status::InvalidArgument("unknown input '" + name + "'; the model's inputs are: " + names);
    }
    if (rs.inputs[it->second]) return Status::InvalidArgument("input '" + name + "' given twice");
    IL_RETURN_IF_ERROR(CheckInput(it->second, v));
    rs.inputs[it->second] = &v;
  }
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (!rs.inputs[i] && input_required[i]) return Status::InvalidArgument("missing required input '" + g.inputs[i].name + "'");
  return CheckSymbolicDims(rs);
}

Status Session::Impl::Execute(RunState& rs, const std::vector<NamedValue>* bind_outputs,
                              std::vector<NodeTiming>* profile) {
  const auto& g = model.graph;
  static const auto kNoArena = std::make_shared<const ArenaLayout>();
  std::shared_ptr<const ArenaLayout> layout = opts.enable_memory_arena ? shape_plans->Get(rs.inputs.data()) : kNoArena;
  if (layout->arena_bytes > 0 && (!rs.arena || rs.arena->size() < layout->arena_bytes)) {
    rs.arena.reset();  // free the old one first
    rs.arena = ArenaBuffer::Create(layout->arena_bytes);
  }
  rs.last_arena_bytes = layout->arena_bytes;
  ArenaBinding binding;
  if (layout->arena_bytes > 0 && rs.arena) {
    binding.layout = layout.get();
    binding.arena = rs.arena.get();
    binding.keep_alive = rs.arena;
  }
  binding.alias_sink = shape_plans.get();
  if (bind_outputs) {
    rs.bound.assign(plan->num_slots(), nullptr);
    for (size_t e = 0; e < bind_outputs->size(); ++e) {
      const Value& v = (*bind_outputs)[e].second;
      const int slot = output_slot[rs.wanted[e]];
      // Only a buffer nothing else shares may be overwritten.
      if (slot >= 0 && v.is_tensor() && v.tensor().defined() && v.tensor().dtype() != DataType::kString &&
          v.tensor().buffer_use_count() == 1)
        rs.bound[slot] = &v.tensor();
    }
    binding.bound_outputs = rs.bound.data();
  }
  rs.outs.resize(g.outputs.size());
  RunServices services;
  services.pool = pool;
  services.scratch = &rs.scratch;
  services.profile = profile;
  return plan->ExecuteInto(rs.frame, rs.inputs.data(), services, &binding, rs.outs.data());
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }
const SessionCreateTimings& Session::create_timings() const { return impl_->timings; }
int Session::intra_op_threads() const { return impl_->pool->num_threads(); }
Precision Session::precision() const { return impl_->precision; }

// The one friend of Session (inferloop/session.h): creates sessions from loaded models.
class SessionFactory {
 public:
  static Result<std::unique_ptr<Session>> Create(Model model, const SessionOptions& opts);
};

Result<std::unique_ptr<Session>> CreateSessionFromModel(Model model, const SessionOptions& opts) {
  return SessionFactory::Create(std::move(model), opts);
}

Result<std::unique_ptr<Session>> SessionFactory::Create(Model model, const SessionOptions& opts) {
  const auto t_start = Clock::now();
  auto impl = std::make_unique<Session::Impl>();
  impl->opts = opts;
  impl->model = std::move(model);
  IL_ASSIGN_OR_RETURN(const ResolvedPrecision precision, ResolvePrecision(opts.precision, impl->model.graph));
  impl->precision = precision.effective;
  const auto t_optimize = Clock::now();
  if (opts.optimization_level > 0) {
    OptimizeOptions oo;
    oo.level = opts.optimization_level;
    oo.fuse_qdq = precision.fuse_qdq;
    IL_RETURN_IF_ERROR(OptimizeModel(impl->model, oo).status());
  }
  impl->timings.optimize_ms = MsSince(t_optimize);
  const auto t_plan = Clock::now();
  PlanOptions po;
  po.max_tensor_bytes = opts.max_tensor_bytes;
  po.float_precision = precision.float_precision;
  IL_ASSIGN_OR_RETURN(impl->plan, ExecutionPlan::Compile(impl->model.graph, impl->model.opsets, po));
  {  // weights only packing kernels read: the model keeps their shapes, the kernels their data
    const auto& released = impl->plan->released_constants();
    const std::set<std::string> names(released.begin(), released.end());
    for (auto& [name, t] : impl->model.graph.initializers)
      if (names.count(name)) t = Tensor::View(t.dtype(), t.shape(), nullptr, nullptr);
  }
  std::set<std::string> inits;
  for (const auto& [name, t] : impl->model.graph.initializers) inits.insert(name);
  const auto& g = impl->model.graph;
  std::map<std::string, int> symbols;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    impl->input_index[g.inputs[i].name] = i;
    bool has_default = inits.count(g.inputs[i].name) > 0;
    bool optional_type = g.inputs[i].type.kind == TypeInfo::Kind::kOptional;
    impl->input_required.push_back(!has_default && !optional_type);
    if (!has_default) impl->inputs.push_back(ToValueInfo(g.inputs[i]));
    const TypeInfo& t = g.inputs[i].type;
    if (t.kind != TypeInfo::Kind::kTensor || !t.has_shape) continue;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (t.dims[d].symbol.empty()) continue;
      auto [it, fresh] = symbols.emplace(t.dims[d].symbol, static_cast<int>(impl->symbol_names.size()));
      if (fresh) impl->symbol_names.push_back(t.dims[d].symbol);
      impl->symbolic_dims.push_back({it->second, i, d});
    }
  }
  for (const auto& o : g.outputs) impl->outputs.push_back(ToValueInfo(o));
  // Graph outputs a node produces can be written into caller tensors (RunInto).
  std::vector<bool> produced(impl->plan->num_slots(), false);
  for (size_t p = 0; p < impl->plan->num_steps(); ++p)
    for (int s : impl->plan->step_outputs(p))
      if (s >= 0) produced[s] = true;
  for (const ValueRef& r : impl->plan->output_refs())
    impl->output_slot.push_back(r.depth == 0 && r.slot >= 0 && produced[r.slot] ? r.slot : -1);
  impl->pool = SharedThreadPool(opts.intra_op_threads);
  impl->shape_plans = std::make_unique<ShapePlanCache>(impl->model, *impl->plan,
                                                       static_cast<size_t>(std::max(opts.max_cached_shape_plans, 1)));
  impl->timings.plan_ms = MsSince(t_plan);
  impl->timings.total_ms = MsSince(t_start);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<std::unique_ptr<Session>> Session::CreateFromFile(const std::string& path, const SessionOptions& opts) {
  const auto t0 = Clock::now();
  IL_ASSIGN_OR_RETURN(Model m, LoadModelFromFile(path));
  const double load_ms = MsSince(t0);
  auto r = CreateSessionFromModel(std::move(m), opts);
  if (!r.ok()) return r.status().WithContext(path);
  (*r)->impl_->timings.load_ms = load_ms;
  (*r)->impl_->timings.total_ms = MsSince(t0);
  return r;
}

Result<std::unique_ptr<Session>> Session::CreateFromBytes(const void* data, size_t size, const SessionOptions& opts) {
  const auto t0 = Clock::now();
  IL_ASSIGN_OR_RETURN(Model m, LoadModelFromBytes(data, size, opts.external_data_dir));
  const double load_ms = MsSince(t0);
  auto r = CreateSessionFromModel(std::move(m), opts);
  if (!r.ok()) return r;
  (*r)->impl_->timings.load_ms = load_ms;
  (*r)->impl_->timings.total_ms = MsSince(t0);
  return r;
}

Result<MemoryPlanSummary> Session::PlanMemory(const std::map<std::string, Shape>& input_shapes) const {
  for (const auto& [name, shape] : input_shapes)
    if (!impl_->input_index.count(name)) return Status::InvalidArgument("unknown input '" + name + "'");
  IL_ASSIGN_OR_RETURN(ShapeInferenceResult shapes, InferShapes(impl_->model, input_shapes));
  MemoryPlan mp = inferloop::PlanMemory(*impl_->plan, shapes);
  MemoryPlanSummary s;
  s.arena_bytes = mp.arena_bytes;
  s.peak_bytes = mp.peak_bytes;
  s.naive_bytes = mp.naive_bytes;
  s.planned_values = mp.planned;
  s.unplanned_values = mp.unplanned;
  return s;
}

// Returns a run's state to the session however the run ends.
class Session::Impl::StateLease {
 public:
  explicit StateLease(Session::Impl& impl) : impl_(impl), rs_(impl.AcquireState()) {}
  ~StateLease() { impl_.ReleaseState(std::move(rs_)); }
  RunState& operator*() { return *rs_; }

 private:
  Session::Impl& impl_;
  std::unique_ptr<RunState> rs_;
};

namespace {
void ClearOutputs(RunState& rs) {
  for (Value& v : rs.outs) v = Value();
  for (auto& p : rs.inputs) p = nullptr;
  for (auto& b : rs.bound) b = nullptr;
}
}  // namespace

Result<std::vector<NamedValue>> Session::Run(const std::vector<NamedValue>& inputs, const RunOptions& opts) const {
  Impl::StateLease lease(*impl_);
  RunState& rs = *lease;
  Status st = impl_->BindInputs(inputs, rs);
  if (st.ok()) st = impl_->SelectOutputs(opts.output_names, rs);
  if (st.ok()) st = impl_->Execute(rs, nullptr, opts.profile);
  if (!st.ok()) {
    ClearOutputs(rs);
    return st;
  }
  std::vector<NamedValue> result;
  result.reserve(rs.wanted.size());
  for (size_t k : rs.wanted) result.emplace_back(impl_->model.graph.outputs[k].name, rs.outs[k]);
  ClearOutputs(rs);
  return result;
}

Status Session::RunInto(const std::vector<NamedValue>& inputs, std::vector<NamedValue>& outputs, const RunOptions& opts) const {
  Impl::StateLease lease(*impl_);
  RunState& rs = *lease;
  const auto& g = impl_->model.graph;
  Status bound = impl_->BindInputs(inputs, rs);
  if (!bound.ok()) {
    ClearOutputs(rs);
    return bound;
  }
  if (outputs.empty()) {
    IL_RETURN_IF_ERROR(impl_->SelectOutputs(opts.output_names, rs));
  } else {
    rs.wanted.clear();
    for (const auto& [name, v] : outputs) {
      size_t k = 0;
      while (k < g.outputs.size() && g.outputs[k].name != name) ++k;
      if (k == g.outputs.size()) return Status::InvalidArgument("unknown output '" + name + "'");
      rs.wanted.push_back(k);
    }
  }
  const bool fill = outputs.empty();
  Status st = impl_->Execute(rs, fill ? nullptr : &outputs, opts.profile);
  if (!st.ok()) {
    ClearOutputs(rs);
    return st;
  }
  if (fill) {
    outputs.reserve(rs.wanted.size());
    for (size_t k : rs.wanted) outputs.emplace_back(g.outputs[k].name, rs.outs[k]);
  } else {
    for (size_t e = 0; e < outputs.size(); ++e) outputs[e].second = rs.outs[rs.wanted[e]];
  }
  ClearOutputs(rs);
  return Status::Ok();
}

RuntimeMemoryStats Session::memory_stats() const {
  RuntimeMemoryStats m;
  m.cached_shape_plans = impl_->shape_plans->size();
  std::lock_guard<std::mutex> lock(impl_->states_mu);
  m.last_arena_bytes = impl_->last_arena_bytes;
  m.run_states = impl_->total_states;
  for (const auto& rs : impl_->idle_states)
    m.arena_bytes_held += (rs->arena ? rs->arena->size() : 0) + rs->scratch.capacity();
  std::set<const void*> seen;
  for (const auto& [name, t] : impl_->model.graph.initializers)
    if (t.raw_data() != nullptr && seen.insert(t.raw_data()).second) m.weight_bytes += t.nbytes();
  m.weight_bytes += impl_->plan->KernelConstantBytes(&seen);
  return m;
}

void Session::Trim() const {
  {
    std::lock_guard<std::mutex> lock(impl_->states_mu);
    impl_->total_states -= static_cast<int>(impl_->idle_states.size());
    impl_->idle_states.clear();
  }
  impl_->shape_plans->Clear();
  ReleaseFreeMemoryToSystem();
}

}  // namespace inferloop
