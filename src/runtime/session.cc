#include "inferloop/session.h"

#include <filesystem>
#include <map>
#include <set>

#include "graph/onnx_loader.h"
#include "graph/tensor_proto.h"
#include "runtime/memory_plan.h"
#include "runtime/plan.h"
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

class Session::Impl {
 public:
  Model model;
  std::unique_ptr<ExecutionPlan> plan;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<bool> input_required;        // parallel to graph inputs
  std::map<std::string, size_t> input_index;  // name -> graph input index

  Status CheckInput(size_t gi, const Value& v) const;
};

Status Session::Impl::CheckInput(size_t gi, const Value& v) const {
  const GraphValue& gv = model.graph.inputs[gi];
  const TypeInfo& t = gv.type;
  const std::string who = "input '" + gv.name + "'";
  if (t.kind == TypeInfo::Kind::kTensor) {
    if (!v.is_tensor()) return Status::InvalidArgument(who + " must be a tensor, got " + v.DebugString());
    const Tensor& x = v.tensor();
    if (t.elem_type != DataType::kUndefined && x.dtype() != t.elem_type)
      return Status::InvalidArgument(who + " expects dtype " + DataTypeName(t.elem_type) + ", got " + DataTypeName(x.dtype()));
    if (t.has_shape) {
      if (x.rank() != static_cast<int>(t.dims.size()))
        return Status::InvalidArgument(who + " expects rank " + std::to_string(t.dims.size()) + " (" + gv.type.ToString() +
                                       "), got shape " + ShapeToString(x.shape()));
      for (size_t d = 0; d < t.dims.size(); ++d)
        if (t.dims[d].value >= 0 && t.dims[d].value != x.dim(static_cast<int>(d)))
          return Status::InvalidArgument(who + " expects shape " + gv.type.ToString() + ", got " + ShapeToString(x.shape()) +
                                         " (dimension " + std::to_string(d) + " must be " + std::to_string(t.dims[d].value) + ")");
    }
  } else if (t.kind == TypeInfo::Kind::kSequence) {
    if (!v.is_sequence()) return Status::InvalidArgument(who + " must be a sequence, got " + v.DebugString());
  }
  return Status::Ok();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

const std::vector<ValueInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Session::outputs() const { return impl_->outputs; }

Result<std::unique_ptr<Session>> Session::CreateFromModel(Model model, const SessionOptions& opts) {
  auto impl = std::make_unique<Session::Impl>();
  impl->model = std::move(model);
  PlanOptions po;
  po.max_tensor_bytes = opts.max_tensor_bytes;
  IL_ASSIGN_OR_RETURN(impl->plan, ExecutionPlan::Compile(impl->model.graph, impl->model.opsets, po));
  std::set<std::string> inits;
  for (const auto& [name, t] : impl->model.graph.initializers) inits.insert(name);
  const auto& g = impl->model.graph;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    impl->input_index[g.inputs[i].name] = i;
    bool has_default = inits.count(g.inputs[i].name) > 0;
    bool optional_type = g.inputs[i].type.kind == TypeInfo::Kind::kOptional;
    impl->input_required.push_back(!has_default && !optional_type);
    if (!has_default) impl->inputs.push_back(ToValueInfo(g.inputs[i]));
  }
  for (const auto& o : g.outputs) impl->outputs.push_back(ToValueInfo(o));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<std::unique_ptr<Session>> Session::CreateFromFile(const std::string& path, const SessionOptions& opts) {
  IL_ASSIGN_OR_RETURN(Model m, LoadModelFromFile(path));
  auto r = CreateFromModel(std::move(m), opts);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

Result<std::unique_ptr<Session>> Session::CreateFromBytes(const void* data, size_t size, const SessionOptions& opts) {
  IL_ASSIGN_OR_RETURN(Model m, LoadModelFromBytes(data, size, opts.external_data_dir));
  return CreateFromModel(std::move(m), opts);
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

Result<std::vector<NamedValue>> Session::Run(const std::vector<NamedValue>& inputs, const RunOptions& opts) const {
  const auto& g = impl_->model.graph;
  std::vector<Value> ordered(g.inputs.size());
  std::vector<bool> given(g.inputs.size(), false);
  for (const auto& [name, v] : inputs) {
    auto it = impl_->input_index.find(name);
    if (it == impl_->input_index.end()) {
      std::string names;
      for (const auto& vi : impl_->inputs) names += (names.empty() ? "" : ", ") + vi.name;
      return Status::InvalidArgument("unknown input '" + name + "'; the model's inputs are: " + names);
    }
    if (given[it->second]) return Status::InvalidArgument("input '" + name + "' given twice");
    IL_RETURN_IF_ERROR(impl_->CheckInput(it->second, v));
    ordered[it->second] = v;
    given[it->second] = true;
  }
  // Symbolic dimensions must agree across inputs.
  std::map<std::string, std::pair<int64_t, std::string>> sym;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (!given[i]) {
      if (impl_->input_required[i]) return Status::InvalidArgument("missing required input '" + g.inputs[i].name + "'");
      continue;
    }
    const TypeInfo& t = g.inputs[i].type;
    if (t.kind != TypeInfo::Kind::kTensor || !t.has_shape || !ordered[i].is_tensor()) continue;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (t.dims[d].symbol.empty()) continue;
      int64_t actual = ordered[i].tensor().dim(static_cast<int>(d));
      auto [it, fresh] = sym.emplace(t.dims[d].symbol, std::make_pair(actual, g.inputs[i].name));
      if (!fresh && it->second.first != actual)
        return Status::InvalidArgument("dimension '" + t.dims[d].symbol + "' is " + std::to_string(it->second.first) + " in input '" +
                                       it->second.second + "' but " + std::to_string(actual) + " in input '" + g.inputs[i].name + "'");
    }
  }
  std::vector<size_t> wanted;
  if (opts.output_names.empty()) {
    for (size_t i = 0; i < g.outputs.size(); ++i) wanted.push_back(i);
  } else {
    for (const auto& name : opts.output_names) {
      size_t k = 0;
      while (k < g.outputs.size() && g.outputs[k].name != name) ++k;
      if (k == g.outputs.size()) return Status::InvalidArgument("unknown output '" + name + "'");
      wanted.push_back(k);
    }
  }
  IL_ASSIGN_OR_RETURN(std::vector<Value> outs, impl_->plan->Execute(std::move(ordered), nullptr));
  std::vector<NamedValue> result;
  for (size_t k : wanted) result.emplace_back(g.outputs[k].name, outs[k]);
  return result;
}

}  // namespace inferloop
