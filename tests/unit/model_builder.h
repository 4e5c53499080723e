// Builds small ONNX models in memory for tests (via the project's protobuf schema).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/tensor_proto.h"
#include "inferloop/tensor.h"
#include "onnx.pb.h"

namespace inferloop::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  // dims: >= 0 fixed; -1 symbolic (named by `symbols[i]` or "d<i>").
  ModelBuilder& Input(const std::string& name, DataType t, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& symbols = {}) {
    AddValueInfo(model_.mutable_graph()->add_input(), name, t, dims, symbols);
    return *this;
  }
  ModelBuilder& Output(const std::string& name, DataType t, const std::vector<int64_t>& dims) {
    AddValueInfo(model_.mutable_graph()->add_output(), name, t, dims, {});
    return *this;
  }
  onnxpb::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& domain = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  ModelBuilder& Initializer(const std::string& name, const Tensor& t) {
    auto* tp = model_.mutable_graph()->add_initializer();
    TensorToProto(t, tp);
    tp->set_name(name);
    return *this;
  }
  onnxpb::ModelProto& proto() { return model_; }
  std::string Bytes() const { return model_.SerializeAsString(); }

  static void IntAttr(onnxpb::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnxpb::AttributeProto::INT);
    a->set_i(v);
  }

 private:
  static void AddValueInfo(onnxpb::ValueInfoProto* vi, const std::string& name, DataType t, const std::vector<int64_t>& dims,
                           const std::vector<std::string>& symbols) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(t));
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (dims[i] >= 0) d->set_dim_value(dims[i]);
      else d->set_dim_param(i < symbols.size() ? symbols[i] : "d" + std::to_string(i));
    }
  }
  onnxpb::ModelProto model_;
};

using IoList = std::vector<std::pair<std::string, DataType>>;
using AttrFn = std::function<void(onnxpb::NodeProto&)>;

inline void IntsAttr(onnxpb::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void StrAttr(onnxpb::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnxpb::AttributeProto::STRING);
  a->set_s(v);
}

// A model of one `op` node whose tensor inputs and outputs declare a dtype but no shape.
// An empty input name marks an omitted optional input (passed to the node, not declared).
inline std::string OneNodeModel(int64_t opset, const std::string& op, const IoList& ins, const IoList& outs,
                                const AttrFn& attrs = nullptr) {
  ModelBuilder b(opset);
  std::vector<std::string> in_names, out_names;
  for (const auto& [n, t] : ins) {
    in_names.push_back(n);
    if (n.empty()) continue;
    auto* vi = b.proto().mutable_graph()->add_input();
    vi->set_name(n);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
  }
  for (const auto& [n, t] : outs) {
    auto* vi = b.proto().mutable_graph()->add_output();
    vi->set_name(n);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t));
    out_names.push_back(n);
  }
  auto& node = b.Node(op, in_names, out_names);
  if (attrs) attrs(node);
  return b.Bytes();
}

}  // namespace inferloop::testing
