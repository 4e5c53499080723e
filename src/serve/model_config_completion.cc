#include "serve/model_config_completion.h"

#include <string>
#include <vector>

#include "base/status_macros.h"

namespace inferloop::serve {
namespace {

bool FirstDimVariable(const ValueInfo& v) {
  return v.has_shape && !v.shape.empty() && v.shape[0].value < 0;
}

std::string ModelShapeString(const ValueInfo& v) {
  if (!v.has_shape) return "[?]";
  std::string s = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (i) s += ",";
    const Dim& d = v.shape[i];
    s += d.value >= 0 ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol);
  }
  return s + "]";
}

std::string ListToString(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string s = "[";
  for (int i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Fills or checks one input/output spec (ModelInput or ModelOutput) against the model's value.
template <typename Io>
Status CompleteOne(Io& io, const ValueInfo& v, int max_batch_size, const char* what) {
  const std::string where = std::string(what) + " '" + io.name() + "'";
  if (v.kind != ValueInfo::Kind::kTensor)
    return Status::Unimplemented(where + ": the model's value is not a tensor (" + v.ToString() + ")");
  const ConfigDataType model_type = ToConfigDataType(v.dtype);
  if (model_type == configpb::TYPE_INVALID)
    return Status::Unimplemented(where + ": the model's type " + DataTypeName(v.dtype) +
                                 " has no config data_type");
  if (io.data_type() == configpb::TYPE_INVALID) {
    io.set_data_type(model_type);
  } else if (io.data_type() != model_type) {
    return Status::InvalidArgument(where + ": data_type " + ConfigDataTypeName(io.data_type()) +
                                   " but the model has " + ConfigDataTypeName(model_type) + " (" +
                                   DataTypeName(v.dtype) + ")");
  }
  if (!v.has_shape) {
    if (io.dims_size() == 0)
      return Status::InvalidArgument(where + ": the model does not declare its rank; give dims in config.pbtxt");
    return Status::Ok();
  }
  const size_t skip = max_batch_size > 0 ? 1 : 0;
  if (skip && v.shape.empty())
    return Status::InvalidArgument(where + ": max_batch_size " + std::to_string(max_batch_size) +
                                   " needs a batch dimension but the model's value is a scalar");
  if (skip && v.shape[0].value >= 0)
    return Status::InvalidArgument(where + ": max_batch_size " + std::to_string(max_batch_size) +
                                   " needs a variable first dimension but the model fixes it: " +
                                   ModelShapeString(v) + " (set max_batch_size: 0 and give full dims)");
  if (io.dims_size() == 0 && io.has_reshape())
    return Status::InvalidArgument(where + ": reshape is given without dims");
  if (io.dims_size() == 0) {
    for (size_t i = skip; i < v.shape.size(); ++i) io.add_dims(v.shape[i].value >= 0 ? v.shape[i].value : -1);
    return Status::Ok();
  }
  // The shape the model sees: the reshape when given, else dims.
  const auto& seen = io.has_reshape() ? io.reshape().shape() : io.dims();
  const char* field = io.has_reshape() ? "reshape" : "dims";
  const size_t model_rank = v.shape.size() - skip;
  if (static_cast<size_t>(seen.size()) != model_rank)
    return Status::InvalidArgument(where + ": " + field + " " + ListToString(seen) + " has rank " +
                                   std::to_string(seen.size()) + " but the model's shape " +
                                   ModelShapeString(v) + (skip ? " less the batch dimension" : "") +
                                   " has rank " + std::to_string(model_rank));
  for (size_t i = 0; i < model_rank; ++i) {
    const int64_t want = v.shape[i + skip].value;
    const int64_t got = seen[static_cast<int>(i)];
    if (want >= 0 && got != want)
      return Status::InvalidArgument(where + ": " + field + " " + ListToString(seen) + " differ from the model's " +
                                     ModelShapeString(v) + (skip ? " (batch dimension excluded)" : "") +
                                     " at " + std::to_string(i) + ": " + std::to_string(got) + " vs " +
                                     std::to_string(want));
  }
  return Status::Ok();
}

template <typename List>
Status CompleteList(List& list, const std::vector<ValueInfo>& model, int max_batch_size, const char* what,
                    const char* model_what) {
  for (auto& io : list) {
    const ValueInfo* found = nullptr;
    for (const auto& v : model)
      if (v.name == io.name()) found = &v;
    if (!found) {
      std::string names;
      for (const auto& v : model) names += (names.empty() ? "" : ", ") + v.name;
      return Status::InvalidArgument(std::string(what) + " '" + io.name() + "' is not " + model_what +
                                     " of the model (it has: " + names + ")");
    }
    IL_RETURN_IF_ERROR(CompleteOne(io, *found, max_batch_size, what));
  }
  for (const auto& v : model) {
    bool listed = false;
    for (const auto& io : list) listed = listed || io.name() == v.name;
    if (listed) continue;
    auto* io = list.Add();
    io->set_name(v.name);
    IL_RETURN_IF_ERROR(CompleteOne(*io, v, max_batch_size, what));
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> CompleteConfigFromModel(const ModelConfig& partial_or_empty, const Session& session) {
  ModelConfig c = partial_or_empty;
  IL_RETURN_IF_ERROR(ValidateModelConfig(c, ""));
  if (c.max_batch_size() == 0 && c.input_size() == 0 && c.output_size() == 0) {
    bool batchable = !session.inputs().empty() || !session.outputs().empty();
    for (const auto& v : session.inputs()) batchable = batchable && FirstDimVariable(v);
    for (const auto& v : session.outputs()) batchable = batchable && FirstDimVariable(v);
    if (batchable) c.set_max_batch_size(kDefaultMaxBatchSize);
  }
  IL_RETURN_IF_ERROR(CompleteList(*c.mutable_input(), session.inputs(), c.max_batch_size(), "input", "an input"));
  IL_RETURN_IF_ERROR(CompleteList(*c.mutable_output(), session.outputs(), c.max_batch_size(), "output", "an output"));
  IL_RETURN_IF_ERROR(ValidateCompleteModelConfig(c));
  return c;
}

}  // namespace inferloop::serve
