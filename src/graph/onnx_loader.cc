#include "graph/onnx_loader.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "base/status_macros.h"
#include "graph/tensor_proto.h"
#include "onnx.pb.h"

namespace inferloop {
namespace {

constexpr int kMaxGraphDepth = 64;  // nesting of subgraphs / function calls

struct LoadContext {
  std::string base_dir;
  // Model-local functions by (domain, name).
  std::map<std::pair<std::string, std::string>, const onnxpb::FunctionProto*> functions;
  int inline_counter = 0;
};

Result<TypeInfo> ConvertType(const onnxpb::TypeProto& tp, int depth) {
  if (depth > kMaxGraphDepth) return Status::InvalidArgument("type nesting too deep");
  TypeInfo t;
  auto shape_of = [&t](const onnxpb::TensorShapeProto& sp) {
    t.has_shape = true;
    for (const auto& d : sp.dim()) {
      Dim dim;
      if (d.has_dim_value()) dim.value = d.dim_value();
      else if (d.has_dim_param()) dim.symbol = d.dim_param();
      t.dims.push_back(dim);
    }
  };
  switch (tp.value_case()) {
    case onnxpb::TypeProto::kTensorType:
      t.kind = TypeInfo::Kind::kTensor;
      t.elem_type = static_cast<DataType>(tp.tensor_type().elem_type());
      if (tp.tensor_type().has_shape()) shape_of(tp.tensor_type().shape());
      break;
    case onnxpb::TypeProto::kSparseTensorType:
      t.kind = TypeInfo::Kind::kSparseTensor;
      t.elem_type = static_cast<DataType>(tp.sparse_tensor_type().elem_type());
      if (tp.sparse_tensor_type().has_shape()) shape_of(tp.sparse_tensor_type().shape());
      break;
    case onnxpb::TypeProto::kSequenceType: {
      t.kind = TypeInfo::Kind::kSequence;
      IL_ASSIGN_OR_RETURN(TypeInfo inner, ConvertType(tp.sequence_type().elem_type(), depth + 1));
      t.inner = std::make_shared<TypeInfo>(std::move(inner));
      break;
    }
    case onnxpb::TypeProto::kOptionalType: {
      t.kind = TypeInfo::Kind::kOptional;
      IL_ASSIGN_OR_RETURN(TypeInfo inner, ConvertType(tp.optional_type().elem_type(), depth + 1));
      t.inner = std::make_shared<TypeInfo>(std::move(inner));
      break;
    }
    case onnxpb::TypeProto::kMapType: {
      t.kind = TypeInfo::Kind::kMap;
      t.map_key_type = static_cast<DataType>(tp.map_type().key_type());
      IL_ASSIGN_OR_RETURN(TypeInfo inner, ConvertType(tp.map_type().value_type(), depth + 1));
      t.inner = std::make_shared<TypeInfo>(std::move(inner));
      break;
    }
    default:
      t.kind = TypeInfo::Kind::kUnknown;
  }
  if ((t.kind == TypeInfo::Kind::kTensor || t.kind == TypeInfo::Kind::kSparseTensor) &&
      t.elem_type != DataType::kUndefined && !IsKnownDataType(static_cast<int32_t>(t.elem_type)))
    return Status::InvalidArgument("unknown tensor element type " + std::to_string(static_cast<int>(t.elem_type)));
  return t;
}

Result<GraphValue> ConvertValueInfo(const onnxpb::ValueInfoProto& vi) {
  GraphValue v;
  v.name = vi.name();
  if (vi.has_type()) {
    IL_ASSIGN_OR_RETURN(v.type, ConvertType(vi.type(), 0));
  }
  return v;
}

Result<Graph> ConvertGraph(const onnxpb::GraphProto& gp, LoadContext& ctx, int depth,
                           onnxpb::GraphProto* release = nullptr);

Result<Attribute> ConvertAttribute(const onnxpb::AttributeProto& ap, LoadContext& ctx, int depth) {
  Attribute a;
  a.name = ap.name();
  a.ref_attr_name = ap.ref_attr_name();
  const std::string who = "attribute '" + ap.name() + "'";
  using T = onnxpb::AttributeProto;
  T::AttributeType type = ap.type();
  if (type == T::UNDEFINED) {  // very old models omit the type; infer it from the filled field
    if (ap.has_f()) type = T::FLOAT;
    else if (ap.has_i()) type = T::INT;
    else if (ap.has_s()) type = T::STRING;
    else if (ap.has_t()) type = T::TENSOR;
    else if (ap.has_g()) type = T::GRAPH;
    else if (ap.floats_size()) type = T::FLOATS;
    else if (ap.ints_size()) type = T::INTS;
    else if (ap.strings_size()) type = T::STRINGS;
    else if (ap.tensors_size()) type = T::TENSORS;
    else if (ap.graphs_size()) type = T::GRAPHS;
  }
  switch (type) {
    case T::FLOAT: a.type = Attribute::Type::kFloat; a.f = ap.f(); break;
    case T::INT: a.type = Attribute::Type::kInt; a.i = ap.i(); break;
    case T::STRING: a.type = Attribute::Type::kString; a.s = ap.s(); break;
    case T::TENSOR: {
      a.type = Attribute::Type::kTensor;
      auto r = TensorFromProto(ap.t(), ctx.base_dir);
      if (!r.ok()) return r.status().WithContext(who);
      a.t = std::move(r).value();
      break;
    }
    case T::SPARSE_TENSOR: {
      a.type = Attribute::Type::kSparseTensor;
      auto r = SparseTensorFromProto(ap.sparse_tensor(), ctx.base_dir);
      if (!r.ok()) return r.status().WithContext(who);
      a.t = std::move(r).value();
      break;
    }
    case T::GRAPH: {
      a.type = Attribute::Type::kGraph;
      auto r = ConvertGraph(ap.g(), ctx, depth + 1);
      if (!r.ok()) return r.status().WithContext(who);
      a.g = std::make_shared<Graph>(std::move(r).value());
      break;
    }
    case T::FLOATS: a.type = Attribute::Type::kFloats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
    case T::INTS: a.type = Attribute::Type::kInts; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
    case T::STRINGS: a.type = Attribute::Type::kStrings; a.strings.assign(ap.strings().begin(), ap.strings().end()); break;
    case T::TENSORS:
      a.type = Attribute::Type::kTensors;
      for (const auto& tp : ap.tensors()) {
        auto r = TensorFromProto(tp, ctx.base_dir);
        if (!r.ok()) return r.status().WithContext(who);
        a.tensors.push_back(std::move(r).value());
      }
      break;
    case T::GRAPHS:
      a.type = Attribute::Type::kGraphs;
      for (const auto& gp : ap.graphs()) {
        auto r = ConvertGraph(gp, ctx, depth + 1);
        if (!r.ok()) return r.status().WithContext(who);
        a.graphs.push_back(std::make_shared<Graph>(std::move(r).value()));
      }
      break;
    case T::TYPE_PROTO: {
      a.type = Attribute::Type::kTypeProto;
      IL_ASSIGN_OR_RETURN(a.tp, ConvertType(ap.tp(), 0));
      break;
    }
    case T::TYPE_PROTOS:
      a.type = Attribute::Type::kTypeProtos;
      for (const auto& tp : ap.type_protos()) {
        IL_ASSIGN_OR_RETURN(TypeInfo ti, ConvertType(tp, 0));
        a.tps.push_back(std::move(ti));
      }
      break;
    default:
      if (a.ref_attr_name.empty()) return Status::InvalidArgument(who + " has no type");
  }
  return a;
}

Result<Node> ConvertNode(const onnxpb::NodeProto& np, LoadContext& ctx, int depth) {
  Node n;
  n.name = np.name();
  n.op_type = np.op_type();
  n.domain = CanonicalDomain(np.domain());
  if (n.op_type.empty()) return Status::InvalidArgument("a node has an empty op_type (name '" + np.name() + "')");
  n.inputs.assign(np.input().begin(), np.input().end());
  n.outputs.assign(np.output().begin(), np.output().end());
  std::set<std::string> seen;
  for (const auto& ap : np.attribute()) {
    if (!seen.insert(ap.name()).second)
      return Status::InvalidArgument(n.Describe() + " has attribute '" + ap.name() + "' twice");
    auto r = ConvertAttribute(ap, ctx, depth);
    if (!r.ok()) return r.status().WithContext(n.Describe());
    n.attributes.push_back(std::move(r).value());
  }
  return n;
}

// Appends the body of model-local function `fn` called by `call` to `out`, renaming
// internal values so they cannot collide, substituting attribute references.
Status InlineFunction(const onnxpb::FunctionProto& fn, const Node& call, LoadContext& ctx, int depth,
                      std::vector<Node>* out);

Status AppendNode(const onnxpb::NodeProto& np, LoadContext& ctx, int depth, std::vector<Node>* out) {
  IL_ASSIGN_OR_RETURN(Node n, ConvertNode(np, ctx, depth));
  auto it = ctx.functions.find({n.domain, n.op_type});
  if (it != ctx.functions.end()) return InlineFunction(*it->second, n, ctx, depth + 1, out);
  out->push_back(std::move(n));
  return Status::Ok();
}

Status InlineFunction(const onnxpb::FunctionProto& fn, const Node& call, LoadContext& ctx, int depth,
                      std::vector<Node>* out) {
  if (depth > kMaxGraphDepth) return Status::InvalidArgument("function '" + fn.name() + "' recurses too deeply");
  const std::string prefix = "__fn" + std::to_string(ctx.inline_counter++) + "_" + fn.name() + "/";
  std::unordered_map<std::string, std::string> rename;
  for (int i = 0; i < fn.input_size(); ++i)
    rename[fn.input(i)] = i < static_cast<int>(call.inputs.size()) ? call.inputs[i] : "";
  for (int i = 0; i < fn.output_size(); ++i)
    rename[fn.output(i)] = i < static_cast<int>(call.outputs.size()) ? call.outputs[i] : prefix + fn.output(i);
  // Attribute values visible in the body: the call's, then the function's defaults.
  std::map<std::string, const Attribute*> attrs;
  for (const auto& a : call.attributes) attrs[a.name] = &a;
  std::vector<Attribute> defaults;
  defaults.reserve(fn.attribute_proto_size());
  for (const auto& ap : fn.attribute_proto()) {
    if (attrs.count(ap.name())) continue;
    IL_ASSIGN_OR_RETURN(Attribute a, ConvertAttribute(ap, ctx, depth));
    defaults.push_back(std::move(a));
  }
  for (const auto& a : defaults) attrs.emplace(a.name, &a);
  auto map_name = [&](const std::string& s) -> std::string {
    if (s.empty()) return s;
    auto it = rename.find(s);
    if (it != rename.end()) return it->second;
    return prefix + s;
  };
  for (const auto& np : fn.node()) {
    std::vector<Node> body;
    IL_RETURN_IF_ERROR(AppendNode(np, ctx, depth, &body));
    for (Node& n : body) {
      for (auto& s : n.inputs) s = map_name(s);
      for (auto& s : n.outputs) s = map_name(s);
      std::vector<Attribute> resolved;
      for (auto& a : n.attributes) {
        if (a.ref_attr_name.empty()) { resolved.push_back(std::move(a)); continue; }
        auto it = attrs.find(a.ref_attr_name);
        if (it == attrs.end()) continue;  // unset optional attribute
        Attribute v = *it->second;
        v.name = a.name;
        resolved.push_back(std::move(v));
      }
      n.attributes = std::move(resolved);
      out->push_back(std::move(n));
    }
  }
  return Status::Ok();
}

// Frees a converted initializer's payload so the proto and the tensor are not both resident.
void ReleaseTensorData(onnxpb::TensorProto* tp) {
  std::string().swap(*tp->mutable_raw_data());
  google::protobuf::RepeatedField<float>().Swap(tp->mutable_float_data());
  google::protobuf::RepeatedField<double>().Swap(tp->mutable_double_data());
  google::protobuf::RepeatedField<int32_t>().Swap(tp->mutable_int32_data());
  google::protobuf::RepeatedField<int64_t>().Swap(tp->mutable_int64_data());
}

// `release`: when the caller owns the proto (the top-level graph), each initializer's data is
// freed right after conversion, so loading peaks near one copy of the weights, not two.
Result<Graph> ConvertGraph(const onnxpb::GraphProto& gp, LoadContext& ctx, int depth,
                           onnxpb::GraphProto* release) {
  if (depth > kMaxGraphDepth) return Status::InvalidArgument("subgraphs nested too deeply");
  Graph g;
  g.name = gp.name();
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const auto& tp = gp.initializer(i);
    auto r = TensorFromProto(tp, ctx.base_dir);
    if (!r.ok()) return r.status().WithContext("initializer '" + tp.name() + "'");
    g.initializers.emplace_back(tp.name(), std::move(r).value());
    if (release) ReleaseTensorData(release->mutable_initializer(i));
  }
  for (const auto& sp : gp.sparse_initializer()) {
    auto r = SparseTensorFromProto(sp, ctx.base_dir);
    if (!r.ok()) return r.status().WithContext("sparse initializer '" + sp.values().name() + "'");
    g.initializers.emplace_back(sp.values().name(), std::move(r).value());
  }
  for (const auto& vi : gp.input()) {
    IL_ASSIGN_OR_RETURN(GraphValue v, ConvertValueInfo(vi));
    g.inputs.push_back(std::move(v));
  }
  for (const auto& vi : gp.output()) {
    IL_ASSIGN_OR_RETURN(GraphValue v, ConvertValueInfo(vi));
    g.outputs.push_back(std::move(v));
  }
  for (const auto& vi : gp.value_info()) {
    auto r = ConvertValueInfo(vi);
    if (r.ok()) g.value_info.push_back(std::move(r).value());  // annotations only; tolerate oddities
  }
  for (const auto& np : gp.node()) IL_RETURN_IF_ERROR(AppendNode(np, ctx, depth, &g.nodes));
  return g;
}

constexpr const char* kParseError = "not a valid ONNX model: the protobuf could not be parsed (truncated or corrupt file?)";

Result<Model> ConvertModel(onnxpb::ModelProto& mp, const std::string& base_dir);

}  // namespace

Result<Model> LoadModelFromBytes(const void* data, size_t size, const std::string& base_dir) {
  if (size > static_cast<size_t>(INT32_MAX))
    return Status::InvalidArgument("model file is over 2 GiB; store large weights as external data");
  onnxpb::ModelProto mp;
  google::protobuf::io::CodedInputStream cis(static_cast<const uint8_t*>(data), static_cast<int>(size));
  cis.SetRecursionLimit(200);
  if (!mp.ParseFromCodedStream(&cis) || !cis.ConsumedEntireMessage()) return Status::InvalidArgument(kParseError);
  return ConvertModel(mp, base_dir);
}

namespace {

Result<Model> ConvertModel(onnxpb::ModelProto& mp, const std::string& base_dir) {
  if (!mp.has_graph()) return Status::InvalidArgument("not a valid ONNX model: it has no graph");
  Model m;
  m.ir_version = mp.ir_version();
  m.producer_name = mp.producer_name();
  for (const auto& kv : mp.metadata_props()) m.metadata[kv.key()] = kv.value();
  for (const auto& op : mp.opset_import()) m.opsets[CanonicalDomain(op.domain())] = op.version();
  if (m.opsets.empty()) m.opsets[""] = 1;  // IR < 3 models carry no opset_import
  LoadContext ctx;
  ctx.base_dir = base_dir;
  for (const auto& fn : mp.functions()) ctx.functions[{CanonicalDomain(fn.domain()), fn.name()}] = &fn;
  IL_ASSIGN_OR_RETURN(m.graph, ConvertGraph(mp.graph(), ctx, 0, mp.mutable_graph()));
  return m;
}

}  // namespace

Result<Model> LoadModelFromFile(const std::string& path) {
  // Streamed from the file through a small buffer: the file's bytes are never held whole
  // next to the parsed proto (for a 440 MB model this halves peak memory while loading).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open model file '" + path + "'");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("'" + path + "' is not a regular file");
  }
  if (st.st_size > static_cast<off_t>(INT32_MAX)) {
    ::close(fd);
    return Status::InvalidArgument(path + ": model file is over 2 GiB; store large weights as external data");
  }
  onnxpb::ModelProto mp;
  bool parsed;
  {
    google::protobuf::io::FileInputStream fis(fd, 1 << 20);
    fis.SetCloseOnDelete(true);
    google::protobuf::io::CodedInputStream cis(&fis);
    cis.SetRecursionLimit(200);
    parsed = mp.ParseFromCodedStream(&cis) && cis.ConsumedEntireMessage();
  }
  if (!parsed) return Status::InvalidArgument(path + ": " + kParseError);
  std::string dir = std::filesystem::path(path).parent_path().string();
  auto r = ConvertModel(mp, dir);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

}  // namespace inferloop
