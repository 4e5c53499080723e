#include "frontends/v2_grpc_codec.h"

#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "base/status_macros.h"
#include "frontends/v2_datatype.h"
#include "frontends/v2_tensor_data.h"

namespace inferloop::frontends {
namespace {

using google::protobuf::Map;

Result<InferParameters> FromProto(const Map<std::string, inference::InferParameter>& in, const std::string& where) {
  InferParameters out;
  for (const auto& [key, p] : in) {
    switch (p.parameter_choice_case()) {
      case inference::InferParameter::kBoolParam: out[key] = p.bool_param(); break;
      case inference::InferParameter::kInt64Param: out[key] = p.int64_param(); break;
      case inference::InferParameter::kUint64Param: out[key] = p.uint64_param(); break;
      case inference::InferParameter::kDoubleParam: out[key] = p.double_param(); break;
      case inference::InferParameter::kStringParam: out[key] = p.string_param(); break;
      default: return Status::InvalidArgument(where + ": parameter '" + key + "' has no value");
    }
  }
  return out;
}

void ToProto(const InferParameters& in, Map<std::string, inference::InferParameter>* out) {
  for (const auto& [key, value] : in) {
    inference::InferParameter& p = (*out)[key];
    std::visit(
        [&p](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) p.set_bool_param(x);
          else if constexpr (std::is_same_v<T, int64_t>) p.set_int64_param(x);
          else if constexpr (std::is_same_v<T, uint64_t>) p.set_uint64_param(x);
          else if constexpr (std::is_same_v<T, double>) p.set_double_param(x);
          else p.set_string_param(x);
        },
        value);
  }
}

// The typed field a datatype uses, and its element count.
Result<int64_t> ContentsCount(DataType dtype, const inference::InferTensorContents& c, const char** field) {
  switch (dtype) {
    case DataType::kBool: *field = "bool_contents"; return int64_t{c.bool_contents_size()};
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32: *field = "int_contents"; return int64_t{c.int_contents_size()};
    case DataType::kInt64: *field = "int64_contents"; return int64_t{c.int64_contents_size()};
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32: *field = "uint_contents"; return int64_t{c.uint_contents_size()};
    case DataType::kUInt64: *field = "uint64_contents"; return int64_t{c.uint64_contents_size()};
    case DataType::kFloat: *field = "fp32_contents"; return int64_t{c.fp32_contents_size()};
    case DataType::kDouble: *field = "fp64_contents"; return int64_t{c.fp64_contents_size()};
    case DataType::kString: *field = "bytes_contents"; return int64_t{c.bytes_contents_size()};
    default:
      return Status::InvalidArgument(std::string(V2DataTypeName(dtype) ? V2DataTypeName(dtype) : "this datatype") +
                                     " has no typed contents field; send it in raw_input_contents");
  }
}

template <typename T, typename Src>
Status NarrowInto(const Src& src, Tensor& t, const std::string& what) {
  T* dst = t.data<T>();
  for (int i = 0; i < src.size(); ++i) {
    auto v = src.Get(i);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
      return Status::InvalidArgument(what + ": contents element " + std::to_string(i) + " (" + std::to_string(v) +
                                     ") is out of range for the datatype");
    }
    dst[i] = static_cast<T>(v);
  }
  return Status::Ok();
}

Status FillFromContents(const inference::InferTensorContents& c, Tensor& t, const std::string& what) {
  switch (t.dtype()) {
    case DataType::kBool:
      for (int i = 0; i < c.bool_contents_size(); ++i) t.data<uint8_t>()[i] = c.bool_contents(i) ? 1 : 0;
      return Status::Ok();
    case DataType::kInt8: return NarrowInto<int8_t>(c.int_contents(), t, what);
    case DataType::kInt16: return NarrowInto<int16_t>(c.int_contents(), t, what);
    case DataType::kInt32: return NarrowInto<int32_t>(c.int_contents(), t, what);
    case DataType::kInt64: return NarrowInto<int64_t>(c.int64_contents(), t, what);
    case DataType::kUInt8: return NarrowInto<uint8_t>(c.uint_contents(), t, what);
    case DataType::kUInt16: return NarrowInto<uint16_t>(c.uint_contents(), t, what);
    case DataType::kUInt32: return NarrowInto<uint32_t>(c.uint_contents(), t, what);
    case DataType::kUInt64: return NarrowInto<uint64_t>(c.uint64_contents(), t, what);
    case DataType::kFloat:
      for (int i = 0; i < c.fp32_contents_size(); ++i) t.data<float>()[i] = c.fp32_contents(i);
      return Status::Ok();
    case DataType::kDouble:
      for (int i = 0; i < c.fp64_contents_size(); ++i) t.data<double>()[i] = c.fp64_contents(i);
      return Status::Ok();
    case DataType::kString:
      for (int i = 0; i < c.bytes_contents_size(); ++i) t.strings()[i] = c.bytes_contents(i);
      return Status::Ok();
    default: return Status::Internal(what + ": unhandled datatype");
  }
}

Status ToContents(const Tensor& t, inference::InferTensorContents* c, const std::string& what) {
  const int64_t n = t.size();
  switch (t.dtype()) {
    case DataType::kBool:
      for (int64_t i = 0; i < n; ++i) c->add_bool_contents(t.data<uint8_t>()[i] != 0);
      return Status::Ok();
    case DataType::kInt8:
      for (int64_t i = 0; i < n; ++i) c->add_int_contents(t.data<int8_t>()[i]);
      return Status::Ok();
    case DataType::kInt16:
      for (int64_t i = 0; i < n; ++i) c->add_int_contents(t.data<int16_t>()[i]);
      return Status::Ok();
    case DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) c->add_int_contents(t.data<int32_t>()[i]);
      return Status::Ok();
    case DataType::kInt64:
      for (int64_t i = 0; i < n; ++i) c->add_int64_contents(t.data<int64_t>()[i]);
      return Status::Ok();
    case DataType::kUInt8:
      for (int64_t i = 0; i < n; ++i) c->add_uint_contents(t.data<uint8_t>()[i]);
      return Status::Ok();
    case DataType::kUInt16:
      for (int64_t i = 0; i < n; ++i) c->add_uint_contents(t.data<uint16_t>()[i]);
      return Status::Ok();
    case DataType::kUInt32:
      for (int64_t i = 0; i < n; ++i) c->add_uint_contents(t.data<uint32_t>()[i]);
      return Status::Ok();
    case DataType::kUInt64:
      for (int64_t i = 0; i < n; ++i) c->add_uint64_contents(t.data<uint64_t>()[i]);
      return Status::Ok();
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) c->add_fp32_contents(t.data<float>()[i]);
      return Status::Ok();
    case DataType::kDouble:
      for (int64_t i = 0; i < n; ++i) c->add_fp64_contents(t.data<double>()[i]);
      return Status::Ok();
    case DataType::kString:
      for (int64_t i = 0; i < n; ++i) c->add_bytes_contents(t.strings()[i]);
      return Status::Ok();
    default:
      return Status::InvalidArgument(what + ": " + DataTypeName(t.dtype()) +
                                     " has no typed contents field; send it raw");
  }
}

}  // namespace

Result<InferRequest> DecodeGrpcInferRequest(const inference::ModelInferRequest& m, const GrpcDecodeOptions& options) {
  InferRequest req;
  req.model_name = m.model_name();
  req.model_version = m.model_version();
  req.id = m.id();
  IL_ASSIGN_OR_RETURN(req.parameters, FromProto(m.parameters(), "request"));
  const bool raw = m.raw_input_contents_size() > 0;
  if (raw && m.raw_input_contents_size() != m.inputs_size()) {
    return Status::InvalidArgument("raw_input_contents has " + std::to_string(m.raw_input_contents_size()) +
                                   " entries for " + std::to_string(m.inputs_size()) + " inputs");
  }
  std::set<std::string> names;
  for (int i = 0; i < m.inputs_size(); ++i) {
    const auto& pin = m.inputs(i);
    std::string what = "input '" + pin.name() + "'";
    if (pin.name().empty()) return Status::InvalidArgument("inputs[" + std::to_string(i) + "]: missing name");
    if (!names.insert(pin.name()).second) return Status::InvalidArgument(what + " appears more than once");
    auto dtype = DataTypeFromV2Name(pin.datatype());
    if (!dtype.ok()) return dtype.status().WithContext(what);
    Shape shape(pin.shape().begin(), pin.shape().end());
    IL_ASSIGN_OR_RETURN(int64_t count, CheckDeclaredShape(what, *dtype, shape, options.max_tensor_bytes));
    InferInput in;
    in.name = pin.name();
    IL_ASSIGN_OR_RETURN(in.parameters, FromProto(pin.parameters(), what));
    if (raw) {
      if (pin.has_contents()) {
        return Status::InvalidArgument(what + ": has typed contents while the request uses raw_input_contents");
      }
      IL_ASSIGN_OR_RETURN(in.tensor,
                          TensorFromRawBytes(what, *dtype, shape, m.raw_input_contents(i), options.max_tensor_bytes));
    } else {
      const char* field = "";
      int64_t got = 0;
      if (pin.has_contents() || count > 0) {
        auto c = ContentsCount(*dtype, pin.contents(), &field);
        if (!c.ok()) return c.status().WithContext(what);
        got = *c;
      }
      if (got != count) {
        return Status::InvalidArgument(what + ": shape " + ShapeToString(shape) + " has " + std::to_string(count) +
                                       " elements but contents." + field + " has " + std::to_string(got));
      }
      IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(*dtype, shape, SIZE_MAX));
      if (count > 0) IL_RETURN_IF_ERROR(FillFromContents(pin.contents(), t, what));
      in.tensor = std::move(t);
    }
    req.inputs.push_back(std::move(in));
  }
  std::set<std::string> out_names;
  for (int i = 0; i < m.outputs_size(); ++i) {
    const auto& pout = m.outputs(i);
    RequestedOutput out;
    out.name = pout.name();
    std::string what = "requested output '" + out.name + "'";
    if (out.name.empty()) return Status::InvalidArgument("outputs[" + std::to_string(i) + "]: missing name");
    if (!out_names.insert(out.name).second) return Status::InvalidArgument(what + " is requested more than once");
    IL_ASSIGN_OR_RETURN(out.parameters, FromProto(pout.parameters(), what));
    if (auto b = out.parameters.find(kBinaryDataParam); b != out.parameters.end()) {
      if (const bool* flag = std::get_if<bool>(&b->second)) out.binary_data = *flag;
    }
    req.outputs.push_back(std::move(out));
  }
  return req;
}

Status EncodeGrpcInferResponse(const InferResponse& response, inference::ModelInferResponse* out) {
  out->Clear();
  out->set_model_name(response.model_name);
  out->set_model_version(response.model_version);
  out->set_id(response.id);
  ToProto(response.parameters, out->mutable_parameters());
  for (const auto& o : response.outputs) {
    const char* dt = V2DataTypeName(o.tensor.dtype());
    if (!dt) {
      return Status::InvalidArgument("output '" + o.name + "': datatype " + DataTypeName(o.tensor.dtype()) +
                                     " has no KServe v2 equivalent");
    }
    auto* po = out->add_outputs();
    po->set_name(o.name);
    po->set_datatype(dt);
    for (int64_t d : o.tensor.shape()) po->add_shape(d);
    ToProto(o.parameters, po->mutable_parameters());
    std::string* raw = out->add_raw_output_contents();
    raw->reserve(RawByteSize(o.tensor));
    AppendRawBytes(o.tensor, raw);
  }
  return Status::Ok();
}

Status EncodeGrpcInferRequest(const InferRequest& request, bool raw, inference::ModelInferRequest* out) {
  out->Clear();
  out->set_model_name(request.model_name);
  out->set_model_version(request.model_version);
  out->set_id(request.id);
  ToProto(request.parameters, out->mutable_parameters());
  for (const auto& in : request.inputs) {
    std::string what = "input '" + in.name + "'";
    const char* dt = V2DataTypeName(in.tensor.dtype());
    if (!dt) return Status::InvalidArgument(what + ": datatype has no KServe v2 equivalent");
    auto* pin = out->add_inputs();
    pin->set_name(in.name);
    pin->set_datatype(dt);
    for (int64_t d : in.tensor.shape()) pin->add_shape(d);
    ToProto(in.parameters, pin->mutable_parameters());
    if (raw) AppendRawBytes(in.tensor, out->add_raw_input_contents());
    else IL_RETURN_IF_ERROR(ToContents(in.tensor, pin->mutable_contents(), what));
  }
  for (const auto& o : request.outputs) {
    auto* po = out->add_outputs();
    po->set_name(o.name);
    InferParameters p = o.parameters;
    if (o.binary_data) p[kBinaryDataParam] = *o.binary_data;
    ToProto(p, po->mutable_parameters());
  }
  return Status::Ok();
}

}  // namespace inferloop::frontends
