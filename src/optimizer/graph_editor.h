// GraphEditor: what every pass needs to find a pattern and rewrite it in the main graph.
//
// Indexes (producer and readers of every value, graph outputs, constant initializers, names
// read from inside subgraphs) stay current across edits. Value types come from shape inference
// run once when first asked; rewrites keep the names of the values they preserve, so those
// types stay valid. Removed nodes are dropped by Commit(), which keeps the remaining order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "optimizer/graph_pass.h"

namespace inferloop {

class KernelRegistry;

class GraphEditor {
 public:
  GraphEditor(Model& model, const PassContext& ctx);

  Model& model() { return model_; }
  Graph& graph() { return model_.graph; }
  int num_nodes() const { return static_cast<int>(model_.graph.nodes.size()); }
  Node& node(int i) { return model_.graph.nodes[i]; }
  bool removed(int i) const { return removed_[i]; }

  // --- analysis ---
  // Index of the node that writes `value`; -1 for graph inputs, initializers and unknown names.
  int Producer(const std::string& value) const;
  // Nodes reading `value` as an explicit input (a node reading it twice is listed twice).
  std::vector<int> Readers(const std::string& value) const;
  bool IsGraphOutput(const std::string& value) const { return graph_outputs_.count(value) > 0; }
  bool IsGraphInput(const std::string& value) const { return graph_inputs_.count(value) > 0; }
  // Read by name from inside some subgraph (If/Loop/Scan bodies).
  bool ReadBySubgraph(const std::string& value) const;
  // True when `value` is read exactly once, by node `reader`, and by nothing else (no graph
  // output, no subgraph): the value may disappear into a fusion.
  bool OnlyReader(const std::string& value, int reader) const;
  // True when nothing reads `value`.
  bool Unused(const std::string& value) const;
  // The initializer named `name` when it cannot be overridden by a graph input; else nullptr.
  const Tensor* Constant(const std::string& name) const;
  // A constant holding exactly one element, as float (any float or integer dtype).
  std::optional<double> ScalarConstant(const std::string& name) const;
  // The inferred type of `value` (nullptr when unknown).
  const TypeInfo* Type(const std::string& value);
  // Inferred rank (-1 when unknown).
  int Rank(const std::string& value);
  bool IsFloat32(const std::string& value);
  // Both values have fully matching inferred shapes (equal fixed dims or the same symbol).
  bool SameShape(const std::string& a, const std::string& b);
  // The ai.onnx opset the model imports.
  int64_t Opset(const std::string& domain = "") const;
  // A kernel exists for domain.op_type at version (for com.inferloop: 1).
  bool HasKernel(const std::string& domain, const std::string& op_type, int64_t version) const;
  const KernelRegistry& registry() const { return *registry_; }
  const PassContext& context() const { return ctx_; }

  // --- edits ---
  // A value name not used anywhere in the model yet, derived from `base`.
  std::string UniqueName(const std::string& base);
  // Adds an initializer (a constant) under a fresh name derived from `base`; returns the name.
  std::string AddInitializer(const std::string& base, Tensor t);
  // Adds an initializer named exactly `name` (the output of a node being folded away).
  void AddNamedInitializer(const std::string& name, Tensor t);
  // Drops initializers nothing reads (graph inputs' defaults stay); returns how many.
  int RemoveUnusedInitializers();
  // Replaces node i by `n` at the same position.
  void ReplaceNode(int i, Node n);
  void RemoveNode(int i);
  // Makes every explicit reader of `from` read `to` instead. Refuses (false, no change) when
  // `from` is a graph output or is read from inside a subgraph.
  bool RedirectReaders(const std::string& from, const std::string& to);
  // Removes node i, whose output 0 equals its input `in` (Identity, a no-op Reshape, ...),
  // rewiring readers. When the output is a graph output, the producer of `in` is renamed to
  // write it instead. False (no change) when neither is possible.
  bool BypassNode(int i, const std::string& in);
  // Declares domain `domain` at `version` in the model's opset imports.
  void ImportDomain(const std::string& domain, int64_t version);
  // Drops removed nodes. Call once at the end of the pass.
  void Commit();

 private:
  void IndexNode(int i, int delta);
  void IndexConstants();

  Model& model_;
  PassContext ctx_;
  const KernelRegistry* registry_;
  std::vector<bool> removed_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> readers_;
  std::unordered_map<std::string, int> subgraph_reads_;
  std::unordered_map<std::string, const Tensor*> constants_;
  std::set<std::string> graph_outputs_, graph_inputs_, names_;
  bool types_ready_ = false;
  std::map<std::string, TypeInfo> types_;
  int name_counter_ = 0;
};

// Attribute helpers for building and reading nodes.
const Attribute* FindAttr(const Node& n, const std::string& name);
int64_t AttrInt(const Node& n, const std::string& name, int64_t def);
float AttrFloat(const Node& n, const std::string& name, float def);
std::string AttrString(const Node& n, const std::string& name, const std::string& def);
std::vector<int64_t> AttrInts(const Node& n, const std::string& name);
void SetAttr(Node& n, const std::string& name, int64_t v);
void SetAttr(Node& n, const std::string& name, float v);
void SetAttr(Node& n, const std::string& name, const std::string& v);
void SetAttr(Node& n, const std::string& name, const std::vector<int64_t>& v);
void SetAttr(Node& n, const std::string& name, const std::vector<float>& v);
bool HasSubgraph(const Node& n);

// Values `a` and `b` are within `rel` of each other (relative to |b|).
bool NearlyEqual(double a, double b, double rel = 1e-4);

// The domain of inferloop's fused operators (docs/FUSED_OPS.md).
inline constexpr const char* kInferloopDomain = "com.inferloop";

}  // namespace inferloop
