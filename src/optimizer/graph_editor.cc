#include "optimizer/graph_editor.h"

#include <algorithm>
#include <cmath>

#include "compute/kernel_registry.h"

namespace inferloop {
namespace {

// Every name a subgraph reads or returns (its own values included: an over-approximation of
// what it reads from outer scopes, which only makes passes more careful).
void CollectSubgraphNames(const Graph& g, std::vector<std::string>* out) {
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!in.empty()) out->push_back(in);
    for (const auto& a : n.attributes) {
      if (a.g) CollectSubgraphNames(*a.g, out);
      for (const auto& sg : a.graphs)
        if (sg) CollectSubgraphNames(*sg, out);
    }
  }
  for (const auto& o : g.outputs) out->push_back(o.name);
}

void CollectAllNames(const Graph& g, std::set<std::string>* names) {
  for (const auto& v : g.inputs) names->insert(v.name);
  for (const auto& v : g.outputs) names->insert(v.name);
  for (const auto& [name, t] : g.initializers) names->insert(name);
  for (const auto& n : g.nodes) {
    names->insert(n.inputs.begin(), n.inputs.end());
    names->insert(n.outputs.begin(), n.outputs.end());
    for (const auto& a : n.attributes) {
      if (a.g) CollectAllNames(*a.g, names);
      for (const auto& sg : a.graphs)
        if (sg) CollectAllNames(*sg, names);
    }
  }
}

std::vector<std::string> SubgraphNamesOf(const Node& n) {
  std::vector<std::string> names;
  for (const auto& a : n.attributes) {
    if (a.g) CollectSubgraphNames(*a.g, &names);
    for (const auto& sg : a.graphs)
      if (sg) CollectSubgraphNames(*sg, &names);
  }
  return names;
}

}  // namespace

GraphEditor::GraphEditor(Model& model, const PassContext& ctx)
    : model_(model), ctx_(ctx), registry_(ctx.registry ? ctx.registry : &DefaultKernelRegistry()) {
  Graph& g = model_.graph;
  for (const auto& v : g.inputs) graph_inputs_.insert(v.name);
  for (const auto& v : g.outputs) graph_outputs_.insert(v.name);
  IndexConstants();
  CollectAllNames(g, &names_);
  removed_.assign(g.nodes.size(), false);
  for (int i = 0; i < num_nodes(); ++i) IndexNode(i, +1);
}

void GraphEditor::IndexNode(int i, int delta) {
  const Node& n = model_.graph.nodes[i];
  for (const auto& in : n.inputs) {
    if (in.empty()) continue;
    auto& r = readers_[in];
    if (delta > 0) {
      r.push_back(i);
    } else {
      auto it = std::find(r.begin(), r.end(), i);
      if (it != r.end()) r.erase(it);
    }
  }
  for (const auto& out : n.outputs) {
    if (out.empty()) continue;
    if (delta > 0) {
      producer_[out] = i;
      names_.insert(out);
    } else {
      auto it = producer_.find(out);
      if (it != producer_.end() && it->second == i) producer_.erase(it);
    }
  }
  if (HasSubgraph(n))
    for (const auto& name : SubgraphNamesOf(n)) subgraph_reads_[name] += delta;
}

int GraphEditor::Producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : it->second;
}

std::vector<int> GraphEditor::Readers(const std::string& value) const {
  auto it = readers_.find(value);
  return it == readers_.end() ? std::vector<int>{} : it->second;
}

bool GraphEditor::ReadBySubgraph(const std::string& value) const {
  auto it = subgraph_reads_.find(value);
  return it != subgraph_reads_.end() && it->second > 0;
}

bool GraphEditor::OnlyReader(const std::string& value, int reader) const {
  if (IsGraphOutput(value) || ReadBySubgraph(value)) return false;
  auto it = readers_.find(value);
  return it != readers_.end() && it->second.size() == 1 && it->second[0] == reader;
}

bool GraphEditor::Unused(const std::string& value) const {
  if (IsGraphOutput(value) || ReadBySubgraph(value)) return false;
  auto it = readers_.find(value);
  return it == readers_.end() || it->second.empty();
}

const Tensor* GraphEditor::Constant(const std::string& name) const {
  auto it = constants_.find(name);
  return it == constants_.end() ? nullptr : it->second;
}

std::optional<double> GraphEditor::ScalarConstant(const std::string& name) const {
  const Tensor* t = Constant(name);
  if (!t || t->size() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DataType::kFloat: return t->data<float>()[0];
    case DataType::kDouble: return t->data<double>()[0];
    case DataType::kInt32: return t->data<int32_t>()[0];
    case DataType::kInt64: return static_cast<double>(t->data<int64_t>()[0]);
    default: return std::nullopt;
  }
}

const TypeInfo* GraphEditor::Type(const std::string& value) {
  if (!types_ready_) {
    types_ready_ = true;
    auto r = InferShapes(model_);
    if (r.ok()) types_ = std::move(r->types);
  }
  auto it = types_.find(value);
  if (it != types_.end()) return &it->second;
  if (const Tensor* t = Constant(value)) {  // added by a rewrite
    TypeInfo ti;
    ti.kind = TypeInfo::Kind::kTensor;
    ti.elem_type = t->dtype();
    ti.has_shape = true;
    for (int64_t d : t->shape()) ti.dims.push_back(Dim{d, ""});
    return &(types_[value] = std::move(ti));
  }
  return nullptr;
}

int GraphEditor::Rank(const std::string& value) {
  const TypeInfo* t = Type(value);
  return t && t->kind == TypeInfo::Kind::kTensor && t->has_shape ? static_cast<int>(t->dims.size()) : -1;
}

bool GraphEditor::IsFloat32(const std::string& value) {
  const TypeInfo* t = Type(value);
  return t && t->kind == TypeInfo::Kind::kTensor && t->elem_type == DataType::kFloat;
}

bool GraphEditor::SameShape(const std::string& a, const std::string& b) {
  const TypeInfo* ta = Type(a);
  const TypeInfo* tb = Type(b);
  if (!ta || !tb || !ta->has_shape || !tb->has_shape || ta->dims.size() != tb->dims.size()) return false;
  for (size_t k = 0; k < ta->dims.size(); ++k) {
    const Dim &x = ta->dims[k], &y = tb->dims[k];
    if (x.value >= 0 || y.value >= 0) {
      if (x.value != y.value) return false;
    } else if (x.symbol.empty() || x.symbol != y.symbol) {
      return false;
    }
  }
  return true;
}

int64_t GraphEditor::Opset(const std::string& domain) const {
  auto it = model_.opsets.find(domain);
  return it == model_.opsets.end() ? -1 : it->second;
}

bool GraphEditor::HasKernel(const std::string& domain, const std::string& op_type, int64_t version) const {
  return registry_->Find(domain, op_type, version) != nullptr;
}

std::string GraphEditor::UniqueName(const std::string& base) {
  std::string name = base;
  while (names_.count(name)) name = base + "_" + std::to_string(++name_counter_);
  names_.insert(name);
  return name;
}

std::string GraphEditor::AddInitializer(const std::string& base, Tensor t) {
  std::string name = UniqueName(base);
  AddNamedInitializer(name, std::move(t));
  return name;
}

void GraphEditor::AddNamedInitializer(const std::string& name, Tensor t) {
  names_.insert(name);
  model_.graph.initializers.emplace_back(name, std::move(t));
  IndexConstants();  // emplace_back may have moved every tensor
}

int GraphEditor::RemoveUnusedInitializers() {
  auto& inits = model_.graph.initializers;
  const size_t before = inits.size();
  inits.erase(std::remove_if(inits.begin(), inits.end(),
                             [&](const std::pair<std::string, Tensor>& kv) {
                               return !IsGraphInput(kv.first) && Unused(kv.first);
                             }),
              inits.end());
  IndexConstants();
  return static_cast<int>(before - inits.size());
}

void GraphEditor::IndexConstants() {
  constants_.clear();
  for (auto& [n, tensor] : model_.graph.initializers)
    if (!graph_inputs_.count(n)) constants_[n] = &tensor;
}

void GraphEditor::ReplaceNode(int i, Node n) {
  IndexNode(i, -1);
  model_.graph.nodes[i] = std::move(n);
  IndexNode(i, +1);
}

void GraphEditor::RemoveNode(int i) {
  if (removed_[i]) return;
  IndexNode(i, -1);
  removed_[i] = true;
}

bool GraphEditor::RedirectReaders(const std::string& from, const std::string& to) {
  if (IsGraphOutput(from) || ReadBySubgraph(from)) return false;
  std::vector<int> readers = Readers(from);
  std::sort(readers.begin(), readers.end());
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  for (int r : readers) {
    IndexNode(r, -1);
    for (auto& in : model_.graph.nodes[r].inputs)
      if (in == from) in = to;
    IndexNode(r, +1);
  }
  return true;
}

bool GraphEditor::BypassNode(int i, const std::string& in) {
  const std::string out = node(i).outputs[0];
  if (out == in) return false;
  if (!IsGraphOutput(out)) {
    if (ReadBySubgraph(out)) return false;
    RedirectReaders(out, in);
    RemoveNode(i);
    return true;
  }
  // `out` must survive by name: let the producer of `in` write it.
  const int p = Producer(in);
  if (p < 0 || p == i || IsGraphOutput(in) || ReadBySubgraph(in)) return false;
  RemoveNode(i);
  IndexNode(p, -1);
  for (auto& o : model_.graph.nodes[p].outputs)
    if (o == in) o = out;
  IndexNode(p, +1);
  RedirectReaders(in, out);  // `in` is no graph output and no subgraph reads it (checked above)
  return true;
}

void GraphEditor::ImportDomain(const std::string& domain, int64_t version) {
  auto it = model_.opsets.find(domain);
  if (it == model_.opsets.end()) model_.opsets[domain] = version;
}

void GraphEditor::Commit() {
  Graph& g = model_.graph;
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed_[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  // value_info annotations of values that no longer exist would only mislead readers.
  std::set<std::string> defined;
  for (const auto& n : g.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
  g.value_info.erase(std::remove_if(g.value_info.begin(), g.value_info.end(),
                                    [&](const GraphValue& v) { return !defined.count(v.name); }),
                     g.value_info.end());
  removed_.assign(g.nodes.size(), false);
  producer_.clear();
  readers_.clear();
  subgraph_reads_.clear();
  for (int i = 0; i < num_nodes(); ++i) IndexNode(i, +1);
}

const Attribute* FindAttr(const Node& n, const std::string& name) { return n.FindAttribute(name); }

int64_t AttrInt(const Node& n, const std::string& name, int64_t def) {
  const Attribute* a = n.FindAttribute(name);
  return a && a->type == Attribute::Type::kInt ? a->i : def;
}

float AttrFloat(const Node& n, const std::string& name, float def) {
  const Attribute* a = n.FindAttribute(name);
  return a && a->type == Attribute::Type::kFloat ? a->f : def;
}

std::string AttrString(const Node& n, const std::string& name, const std::string& def) {
  const Attribute* a = n.FindAttribute(name);
  return a && a->type == Attribute::Type::kString ? a->s : def;
}

std::vector<int64_t> AttrInts(const Node& n, const std::string& name) {
  const Attribute* a = n.FindAttribute(name);
  return a && a->type == Attribute::Type::kInts ? a->ints : std::vector<int64_t>{};
}

namespace {
Attribute& Slot(Node& n, const std::string& name) {
  for (auto& a : n.attributes)
    if (a.name == name) {
      a = Attribute();
      a.name = name;
      return a;
    }
  n.attributes.emplace_back();
  n.attributes.back().name = name;
  return n.attributes.back();
}
}  // namespace

void SetAttr(Node& n, const std::string& name, int64_t v) {
  Attribute& a = Slot(n, name);
  a.type = Attribute::Type::kInt;
  a.i = v;
}
void SetAttr(Node& n, const std::string& name, float v) {
  Attribute& a = Slot(n, name);
  a.type = Attribute::Type::kFloat;
  a.f = v;
}
void SetAttr(Node& n, const std::string& name, const std::string& v) {
  Attribute& a = Slot(n, name);
  a.type = Attribute::Type::kString;
  a.s = v;
}
void SetAttr(Node& n, const std::string& name, const std::vector<int64_t>& v) {
  Attribute& a = Slot(n, name);
  a.type = Attribute::Type::kInts;
  a.ints = v;
}
void SetAttr(Node& n, const std::string& name, const std::vector<float>& v) {
  Attribute& a = Slot(n, name);
  a.type = Attribute::Type::kFloats;
  a.floats = v;
}

bool HasSubgraph(const Node& n) {
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool NearlyEqual(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::fabs(b); }

}  // namespace inferloop
