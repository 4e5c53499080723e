#include "graph/onnx_writer.h"

#include <fstream>

#include "base/status_macros.h"
#include "graph/tensor_proto.h"

namespace inferloop {
namespace {

void ShapeToProto(const TypeInfo& t, onnxpb::TensorShapeProto* sp) {
  for (const Dim& d : t.dims) {
    auto* dp = sp->add_dim();
    if (d.value >= 0) dp->set_dim_value(d.value);
    else if (!d.symbol.empty()) dp->set_dim_param(d.symbol);
  }
}

void TypeToProto(const TypeInfo& t, onnxpb::TypeProto* tp) {
  switch (t.kind) {
    case TypeInfo::Kind::kTensor: {
      auto* tt = tp->mutable_tensor_type();
      tt->set_elem_type(static_cast<int32_t>(t.elem_type));
      if (t.has_shape) ShapeToProto(t, tt->mutable_shape());
      return;
    }
    case TypeInfo::Kind::kSparseTensor: {
      auto* st = tp->mutable_sparse_tensor_type();
      st->set_elem_type(static_cast<int32_t>(t.elem_type));
      if (t.has_shape) ShapeToProto(t, st->mutable_shape());
      return;
    }
    case TypeInfo::Kind::kSequence:
      if (t.inner) TypeToProto(*t.inner, tp->mutable_sequence_type()->mutable_elem_type());
      else tp->mutable_sequence_type();
      return;
    case TypeInfo::Kind::kOptional:
      if (t.inner) TypeToProto(*t.inner, tp->mutable_optional_type()->mutable_elem_type());
      else tp->mutable_optional_type();
      return;
    case TypeInfo::Kind::kMap: {
      auto* mt = tp->mutable_map_type();
      mt->set_key_type(static_cast<int32_t>(t.map_key_type));
      if (t.inner) TypeToProto(*t.inner, mt->mutable_value_type());
      return;
    }
    case TypeInfo::Kind::kUnknown: return;  // no type recorded
  }
}

void ValueToProto(const GraphValue& v, onnxpb::ValueInfoProto* vp) {
  vp->set_name(v.name);
  if (v.type.kind != TypeInfo::Kind::kUnknown) TypeToProto(v.type, vp->mutable_type());
}

// A dense tensor as a sparse one listing every element (linear indices), for sparse_value
// attributes, which the loader densified.
void DenseToSparseProto(const Tensor& t, onnxpb::SparseTensorProto* sp) {
  for (int64_t d : t.shape()) sp->add_dims(d);
  auto flat = t.Reshaped({t.size()});
  if (flat.ok()) TensorToProto(*flat, sp->mutable_values());
  auto* idx = sp->mutable_indices();
  idx->set_data_type(static_cast<int32_t>(DataType::kInt64));
  idx->add_dims(t.size());
  for (int64_t i = 0; i < t.size(); ++i) idx->add_int64_data(i);
}

void GraphToProto(const Graph& g, onnxpb::GraphProto* gp);

void AttributeToProto(const Attribute& a, onnxpb::AttributeProto* ap) {
  using T = onnxpb::AttributeProto;
  ap->set_name(a.name);
  if (!a.ref_attr_name.empty()) ap->set_ref_attr_name(a.ref_attr_name);
  switch (a.type) {
    case Attribute::Type::kUndefined: return;
    case Attribute::Type::kFloat: ap->set_type(T::FLOAT); ap->set_f(a.f); return;
    case Attribute::Type::kInt: ap->set_type(T::INT); ap->set_i(a.i); return;
    case Attribute::Type::kString: ap->set_type(T::STRING); ap->set_s(a.s); return;
    case Attribute::Type::kTensor: ap->set_type(T::TENSOR); TensorToProto(a.t, ap->mutable_t()); return;
    case Attribute::Type::kSparseTensor:
      ap->set_type(T::SPARSE_TENSOR);
      DenseToSparseProto(a.t, ap->mutable_sparse_tensor());
      return;
    case Attribute::Type::kGraph:
      ap->set_type(T::GRAPH);
      if (a.g) GraphToProto(*a.g, ap->mutable_g());
      return;
    case Attribute::Type::kFloats:
      ap->set_type(T::FLOATS);
      for (float f : a.floats) ap->add_floats(f);
      return;
    case Attribute::Type::kInts:
      ap->set_type(T::INTS);
      for (int64_t i : a.ints) ap->add_ints(i);
      return;
    case Attribute::Type::kStrings:
      ap->set_type(T::STRINGS);
      for (const auto& s : a.strings) ap->add_strings(s);
      return;
    case Attribute::Type::kTensors:
      ap->set_type(T::TENSORS);
      for (const auto& t : a.tensors) TensorToProto(t, ap->add_tensors());
      return;
    case Attribute::Type::kGraphs:
      ap->set_type(T::GRAPHS);
      for (const auto& g : a.graphs)
        if (g) GraphToProto(*g, ap->add_graphs());
      return;
    case Attribute::Type::kTypeProto: ap->set_type(T::TYPE_PROTO); TypeToProto(a.tp, ap->mutable_tp()); return;
    case Attribute::Type::kTypeProtos:
      ap->set_type(T::TYPE_PROTOS);
      for (const auto& t : a.tps) TypeToProto(t, ap->add_type_protos());
      return;
  }
}

void NodeToProto(const Node& n, onnxpb::NodeProto* np) {
  if (!n.name.empty()) np->set_name(n.name);
  np->set_op_type(n.op_type);
  if (!n.domain.empty()) np->set_domain(n.domain);
  for (const auto& i : n.inputs) np->add_input(i);
  for (const auto& o : n.outputs) np->add_output(o);
  for (const auto& a : n.attributes) AttributeToProto(a, np->add_attribute());
}

void GraphToProto(const Graph& g, onnxpb::GraphProto* gp) {
  gp->set_name(g.name);
  for (const auto& [name, t] : g.initializers) {
    auto* tp = gp->add_initializer();
    TensorToProto(t, tp);
    tp->set_name(name);
  }
  for (const auto& v : g.inputs) ValueToProto(v, gp->add_input());
  for (const auto& v : g.outputs) ValueToProto(v, gp->add_output());
  for (const auto& v : g.value_info) ValueToProto(v, gp->add_value_info());
  for (const auto& n : g.nodes) NodeToProto(n, gp->add_node());
}

}  // namespace

void ModelToProto(const Model& model, onnxpb::ModelProto* proto) {
  proto->set_ir_version(model.ir_version);
  if (!model.producer_name.empty()) proto->set_producer_name(model.producer_name);
  for (const auto& [domain, version] : model.opsets) {
    auto* op = proto->add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  for (const auto& [k, v] : model.metadata) {
    auto* kv = proto->add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  GraphToProto(model.graph, proto->mutable_graph());
}

Result<std::string> SerializeModel(const Model& model) {
  onnxpb::ModelProto proto;
  ModelToProto(model, &proto);
  const size_t size = proto.ByteSizeLong();
  if (size > static_cast<size_t>(INT32_MAX))
    return Status::InvalidArgument("the model is " + std::to_string(size >> 20) +
                                   " MiB, over protobuf's 2 GiB limit for one file");
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) return Status::Internal("could not serialize the model");
  return bytes;
}

Status SaveModelToFile(const Model& model, const std::string& path) {
  IL_ASSIGN_OR_RETURN(std::string bytes, SerializeModel(model));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::Unavailable("cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return Status::Unavailable("error writing '" + path + "'");
  return Status::Ok();
}

}  // namespace inferloop
