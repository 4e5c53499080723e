#include "graph/graph.h"

namespace inferloop {

std::string TypeInfo::ToString() const {
  auto dims_str = [this]() {
    if (!has_shape) return std::string("[?]");
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i) s += ",";
      if (dims[i].value >= 0) s += std::to_string(dims[i].value);
      else if (!dims[i].symbol.empty()) s += dims[i].symbol;
      else s += "?";
    }
    return s + "]";
  };
  switch (kind) {
    case Kind::kUnknown: return "unknown";
    case Kind::kTensor: return std::string(DataTypeName(elem_type)) + dims_str();
    case Kind::kSparseTensor: return std::string("sparse_") + DataTypeName(elem_type) + dims_str();
    case Kind::kSequence: return "sequence<" + (inner ? inner->ToString() : "?") + ">";
    case Kind::kOptional: return "optional<" + (inner ? inner->ToString() : "?") + ">";
    case Kind::kMap: return std::string("map<") + DataTypeName(map_key_type) + "," + (inner ? inner->ToString() : "?") + ">";
  }
  return "?";
}

const char* AttributeTypeName(Attribute::Type t) {
  switch (t) {
    case Attribute::Type::kUndefined: return "undefined";
    case Attribute::Type::kFloat: return "float";
    case Attribute::Type::kInt: return "int";
    case Attribute::Type::kString: return "string";
    case Attribute::Type::kTensor: return "tensor";
    case Attribute::Type::kGraph: return "graph";
    case Attribute::Type::kFloats: return "floats";
    case Attribute::Type::kInts: return "ints";
    case Attribute::Type::kStrings: return "strings";
    case Attribute::Type::kTensors: return "tensors";
    case Attribute::Type::kGraphs: return "graphs";
    case Attribute::Type::kTypeProto: return "type_proto";
    case Attribute::Type::kTypeProtos: return "type_protos";
    case Attribute::Type::kSparseTensor: return "sparse_tensor";
  }
  return "?";
}

const Attribute* Node::FindAttribute(const std::string& attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

std::string Node::Describe() const {
  std::string d = domain.empty() ? op_type : domain + "." + op_type;
  if (!name.empty()) d += " (node '" + name + "')";
  else if (!outputs.empty()) d += " (producing '" + outputs[0] + "')";
  return d;
}

std::string CanonicalDomain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

}  // namespace inferloop
