#include "serve/request_validation.h"

#include <algorithm>
#include <map>
#include <optional>

#include "serve/batch_assembly.h"

namespace inferloop::serve {

namespace {

std::string ConfigDimsString(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string s = "[";
  for (int i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// An unsigned integer request parameter, or an error naming it.
Result<std::optional<uint64_t>> UIntParam(const InferParameters& params, const char* name) {
  auto it = params.find(name);
  if (it == params.end()) return std::optional<uint64_t>();
  if (const auto* u = std::get_if<uint64_t>(&it->second)) return std::optional<uint64_t>(*u);
  if (const auto* i = std::get_if<int64_t>(&it->second)) {
    if (*i < 0) return Status::InvalidArgument(std::string("parameter '") + name + "' must not be negative");
    return std::optional<uint64_t>(static_cast<uint64_t>(*i));
  }
  return Status::InvalidArgument(std::string("parameter '") + name + "' must be an unsigned integer");
}

// The request's input `t` against the config's input `ci`: datatype, rank, fixed dims, batch size.
Status CheckInput(const Tensor& t, const configpb::ModelInput& ci, const std::string& model_name,
                  const ModelConfig& config) {
  const bool batching = config.max_batch_size() > 0;
  const DataType want = FromConfigDataType(ci.data_type());
  if (t.dtype() != want)
    return Status::InvalidArgument("input '" + ci.name() + "': datatype " + KServeDataTypeName(ToConfigDataType(t.dtype())) +
                                   ", model '" + model_name + "' expects " + KServeDataTypeName(ci.data_type()));
  const int want_rank = ci.dims_size() + (batching ? 1 : 0);
  auto shape_error = [&] {
    return Status::InvalidArgument("input '" + ci.name() + "': shape " + ShapeToString(t.shape()) + ", model '" + model_name +
                                   "' expects " + (batching ? "[-1," + ConfigDimsString(ci.dims()).substr(1) : ConfigDimsString(ci.dims())) +
                                   (batching ? " (first dimension: batch, 1.." + std::to_string(config.max_batch_size()) + ")" : ""));
  };
  if (t.rank() != want_rank) return shape_error();
  for (int i = 0; i < ci.dims_size(); ++i) {
    const int64_t d = ci.dims(i);
    if (d >= 0 && t.dim(i + (batching ? 1 : 0)) != d) return shape_error();
  }
  if (batching && (t.dim(0) < 1 || t.dim(0) > config.max_batch_size()))
    return Status::InvalidArgument("input '" + ci.name() + "': batch size " + std::to_string(t.dim(0)) + " outside 1.." +
                                   std::to_string(config.max_batch_size()) + " (max_batch_size of model '" + model_name + "')");
  return Status::Ok();
}

// The "priority" and "timeout" parameters into p.
Status ApplyQueueParameters(const InferRequest& request, const std::string& model_name, const ModelConfig& config,
                            PendingRequest& p) {
  auto prio = UIntParam(request.parameters, "priority");
  if (!prio.ok()) return prio.status();
  if (prio.value()) {
    const uint64_t levels = config.has_dynamic_batching() ? config.dynamic_batching().priority_levels() : 0;
    if (*prio.value() > std::max<uint64_t>(levels, 1))
      return Status::InvalidArgument("priority " + std::to_string(*prio.value()) + " outside 0.." +
                                     std::to_string(std::max<uint64_t>(levels, 1)) + " for model '" + model_name + "'");
    p.priority = levels > 0 ? static_cast<uint32_t>(*prio.value()) : 0;
  }
  auto timeout = UIntParam(request.parameters, "timeout");
  if (!timeout.ok()) return timeout.status();
  if (timeout.value()) p.timeout = std::chrono::microseconds(static_cast<int64_t>(std::min<uint64_t>(*timeout.value(), uint64_t{1} << 50)));
  return Status::Ok();
}

}  // namespace

Status ValidateRequest(const InferRequest& request, const std::string& model_name, const ModelConfig& config,
                       const std::vector<std::string>& input_names, const std::vector<std::string>& output_names,
                       PendingRequest& p) {
  const bool batching = config.max_batch_size() > 0;
  for (const auto& in : request.inputs) {
    if (std::find(input_names.begin(), input_names.end(), in.name) == input_names.end())
      return Status::InvalidArgument("unexpected input '" + in.name + "' for model '" + model_name + "'");
  }
  // The request's input named `name` (the last one of that name, as a map by name would keep), or
  // null. Every request input is one of the model's (above), so this is as costly as that check
  // and needs no map per request.
  auto find_input = [&request](const std::string& name) -> const InferInput* {
    for (auto it = request.inputs.rbegin(); it != request.inputs.rend(); ++it)
      if (it->name == name) return &*it;
    return nullptr;
  };
  // Which optional inputs are present is part of the batch key: requests batch together only
  // with the same inputs.
  std::string presence;
  for (const auto& ci : config.input()) {
    const InferInput* found = find_input(ci.name());
    if (found == nullptr) {
      if (ci.optional()) {
        presence += '-';
        continue;
      }
      return Status::InvalidArgument("model '" + model_name + "' expects input '" + ci.name() +
                                     "', the request has no such input");
    }
    presence += '+';
    if (Status st = CheckInput(found->tensor, ci, model_name, config); !st.ok()) return st;
  }
  // The config's inputs present, in config order: input_names itself (the config's inputs, in
  // config order) when all are, the common case with no list built per request; else those
  // marked '+' in `presence` (one mark per config input, in the same order).
  const bool all_present = presence.find('-') == std::string::npos;
  std::vector<std::string> present;
  if (!all_present) {
    for (size_t i = 0; i < presence.size() && i < input_names.size(); ++i)
      if (presence[i] == '+') present.push_back(input_names[i]);
  }
  // Rows (the inputs must agree on dim 0) and the key of non-batch shapes.
  auto shape = ComputeBatchShape(request, all_present ? input_names : present, batching);
  if (!shape.ok()) return shape.status();
  for (const auto& out : request.outputs) {
    if (std::find(output_names.begin(), output_names.end(), out.name) == output_names.end())
      return Status::InvalidArgument("unknown output '" + out.name + "' requested from model '" + model_name + "'");
  }
  p.rows = shape->rows;
  p.batch_key = presence + shape->batch_key;
  return ApplyQueueParameters(request, model_name, config, p);
}

}  // namespace inferloop::serve
