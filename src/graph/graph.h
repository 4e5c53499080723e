// The in-memory graph IR: what the ONNX loader produces and the runtime compiles.
// Plain data; no behaviour beyond lookups. Subgraphs (If/Loop/Scan bodies) hang off attributes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "inferloop/shape.h"
#include "inferloop/tensor.h"

namespace inferloop {

struct Graph;

// The declared type of a graph value (from ValueInfoProto / TypeProto).
struct TypeInfo {
  enum class Kind { kUnknown, kTensor, kSequence, kOptional, kMap, kSparseTensor };
  Kind kind = Kind::kUnknown;
  DataType elem_type = DataType::kUndefined;  // tensor element type (kTensor / kSparseTensor)
  bool has_shape = false;
  std::vector<Dim> dims;
  std::shared_ptr<TypeInfo> inner;  // element type of a sequence / optional / map value
  DataType map_key_type = DataType::kUndefined;
  std::string ToString() const;
};

struct GraphValue {
  std::string name;
  TypeInfo type;
};

struct Attribute {
  enum class Type { kUndefined, kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings,
                    kTensors, kGraphs, kTypeProto, kTypeProtos, kSparseTensor };
  std::string name;
  Type type = Type::kUndefined;
  std::string ref_attr_name;  // inside function bodies: refers to the caller's attribute
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TypeInfo tp;
  std::vector<TypeInfo> tps;
};
const char* AttributeTypeName(Attribute::Type t);

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" means ai.onnx
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an unused optional output
  std::vector<Attribute> attributes;
  const Attribute* FindAttribute(const std::string& attr_name) const;
  // "Conv (node 'conv1')" for messages.
  std::string Describe() const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<GraphValue> inputs;
  std::vector<GraphValue> outputs;
  std::vector<GraphValue> value_info;
  std::vector<std::pair<std::string, Tensor>> initializers;
  // Sparse initializers are densified at load time and appear in `initializers`.
};

struct Model {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::string producer_name;
  std::map<std::string, std::string> metadata;
  Graph graph;
};

// Normalizes "ai.onnx" to "".
std::string CanonicalDomain(const std::string& domain);

}  // namespace inferloop
