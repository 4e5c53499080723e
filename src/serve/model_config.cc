#include "serve/model_config.h"

#include "base/status_macros.h"
#include "serve/adaptive_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <set>
#include <string>
#include <vector>

namespace inferloop::serve {
namespace {

// Collects the text-format parser's messages with their positions (1-based line:column).
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!first_.empty()) return;  // the first error is the one to fix; later ones follow from it
    std::string text = message;
    const std::string package = "inferloop.serve.configpb.";  // users know the bare message names
    for (size_t at; (at = text.find(package)) != std::string::npos;) text.erase(at, package.size());
    first_ = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + text;
    if (text.find("has no field named") != std::string::npos)
      first_ += " (unknown or unsupported field; supported fields: docs/MODEL_REPOSITORY.md)";
    if (text.find("Unknown enumeration value") != std::string::npos && text.find("\"data_type\"") != std::string::npos)
      first_ += " (data types: TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16,"
                " TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16)";
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

std::string DimsToString(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string s = "[";
  for (int i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// dims: every entry >= -1; a reshape with the same element count when both are fixed.
template <typename Io>
Status CheckTensorSpec(const Io& io, const char* what, std::set<std::string>& seen) {
  if (io.name().empty()) return Status::InvalidArgument(std::string("an ") + what + " has no name");
  const std::string where = std::string(what) + " '" + io.name() + "'";
  if (!seen.insert(io.name()).second) return Status::InvalidArgument(where + " is listed twice");
  if (!configpb::DataType_IsValid(io.data_type()))
    return Status::InvalidArgument(where + ": unknown data_type " + std::to_string(io.data_type()));
  int64_t count = 1;
  bool fixed = true;
  for (int i = 0; i < io.dims_size(); ++i) {
    if (io.dims(i) < -1)
      return Status::InvalidArgument(where + ": dims " + DimsToString(io.dims()) + " has " +
                                     std::to_string(io.dims(i)) + " at " + std::to_string(i) +
                                     " (dims are sizes >= 0, or -1 for a variable size)");
    if (io.dims(i) == -1) fixed = false;
    else if (__builtin_mul_overflow(count, io.dims(i), &count))
      return Status::InvalidArgument(where + ": dims " + DimsToString(io.dims()) + " hold more than 2^63 elements");
  }
  if (io.has_reshape()) {
    int64_t rcount = 1;
    bool rfixed = true;
    for (int64_t d : io.reshape().shape()) {
      if (d < -1)
        return Status::InvalidArgument(where + ": reshape " + DimsToString(io.reshape().shape()) +
                                       " has " + std::to_string(d) + " (sizes >= 0, or -1)");
      if (d == -1) rfixed = false;
      else if (__builtin_mul_overflow(rcount, d, &rcount))
        return Status::InvalidArgument(where + ": reshape " + DimsToString(io.reshape().shape()) +
                                       " holds more than 2^63 elements");
    }
    if (io.dims_size() > 0 && fixed && rfixed && count != rcount)
      return Status::InvalidArgument(where + ": reshape " + DimsToString(io.reshape().shape()) +
                                     " holds " + std::to_string(rcount) + " elements but dims " +
                                     DimsToString(io.dims()) + " hold " + std::to_string(count));
  }
  return Status::Ok();
}

Status CheckQueuePolicy(const configpb::ModelQueuePolicy& p, const std::string& where) {
  if (!configpb::ModelQueuePolicy::TimeoutAction_IsValid(p.timeout_action()))
    return Status::InvalidArgument(where + ": unknown timeout_action " + std::to_string(p.timeout_action()));
  return Status::Ok();
}

}  // namespace

Status ValidateModelConfig(const ModelConfig& c, const std::string& model_name) {
  if (!model_name.empty() && !c.name().empty() && c.name() != model_name)
    return Status::InvalidArgument("name '" + c.name() + "' does not match the model's folder '" +
                                   model_name + "'");
  if (c.max_batch_size() < 0)
    return Status::InvalidArgument("max_batch_size is " + std::to_string(c.max_batch_size()) +
                                   " (0 disables batching; > 0 is the largest batch)");
  std::set<std::string> input_names, output_names;
  for (const auto& in : c.input()) IL_RETURN_IF_ERROR(CheckTensorSpec(in, "input", input_names));
  for (const auto& out : c.output()) IL_RETURN_IF_ERROR(CheckTensorSpec(out, "output", output_names));

  if (c.has_dynamic_batching()) {
    const auto& db = c.dynamic_batching();
    for (int32_t p : db.preferred_batch_size()) {
      if (p < 1)
        return Status::InvalidArgument("dynamic_batching: preferred_batch_size " + std::to_string(p) +
                                       " is not >= 1");
      if (c.max_batch_size() > 0 && p > c.max_batch_size())
        return Status::InvalidArgument("dynamic_batching: preferred_batch_size " + std::to_string(p) +
                                       " exceeds max_batch_size " + std::to_string(c.max_batch_size()));
    }
    const uint64_t levels = db.priority_levels();
    if (levels == 0) {
      if (db.default_priority_level() != 0)
        return Status::InvalidArgument("dynamic_batching: default_priority_level " +
                                       std::to_string(db.default_priority_level()) +
                                       " is set but priority_levels is 0");
      if (!db.priority_queue_policy().empty())
        return Status::InvalidArgument("dynamic_batching: priority_queue_policy is set but priority_levels is 0");
    } else {
      if (db.default_priority_level() < 1 || db.default_priority_level() > levels)
        return Status::InvalidArgument("dynamic_batching: default_priority_level " +
                                       std::to_string(db.default_priority_level()) + " is outside [1, " +
                                       std::to_string(levels) + "] (priority_levels " + std::to_string(levels) + ")");
      for (const auto& [level, policy] : db.priority_queue_policy()) {
        if (level < 1 || level > levels)
          return Status::InvalidArgument("dynamic_batching: priority_queue_policy for level " +
                                         std::to_string(level) + " is outside [1, " + std::to_string(levels) + "]");
        IL_RETURN_IF_ERROR(CheckQueuePolicy(policy, "dynamic_batching: priority_queue_policy " + std::to_string(level)));
      }
    }
    IL_RETURN_IF_ERROR(CheckQueuePolicy(db.default_queue_policy(), "dynamic_batching: default_queue_policy"));
  }
  IL_RETURN_IF_ERROR(ReadAdaptiveObjectives(c).status());

  for (int i = 0; i < c.instance_group_size(); ++i) {
    const auto& g = c.instance_group(i);
    const std::string where = "instance_group " + std::to_string(i) + (g.name().empty() ? "" : " '" + g.name() + "'");
    if (g.count() < 0)
      return Status::InvalidArgument(where + ": count " + std::to_string(g.count()) + " is negative");
    if (g.kind() == configpb::ModelInstanceGroup::KIND_GPU)
      return Status::InvalidArgument(where + ": kind KIND_GPU is not supported (inferloop runs on CPU; use KIND_CPU)");
    if (!configpb::ModelInstanceGroup::Kind_IsValid(g.kind()))
      return Status::InvalidArgument(where + ": unknown kind " + std::to_string(g.kind()));
  }

  if (c.version_policy().has_specific()) {
    const auto& v = c.version_policy().specific().versions();
    if (v.empty()) return Status::InvalidArgument("version_policy: specific lists no versions");
    for (int64_t x : v)
      if (x < 1)
        return Status::InvalidArgument("version_policy: specific version " + std::to_string(x) + " is not >= 1");
  }

  for (const auto& w : c.model_warmup()) {
    const std::string where = "model_warmup '" + w.name() + "'";
    if (w.batch_size() < 1) return Status::InvalidArgument(where + ": batch_size must be >= 1");
    for (const auto& [name, in] : w.inputs()) {
      if (!configpb::DataType_IsValid(in.data_type()) || in.data_type() == configpb::TYPE_INVALID)
        return Status::InvalidArgument(where + ": input '" + name + "' has no valid data_type");
      int64_t count = 1;
      for (int64_t d : in.dims()) {
        if (d < 0)
          return Status::InvalidArgument(where + ": input '" + name + "' dims " + DimsToString(in.dims()) +
                                         " must be fixed sizes >= 0");
        if (__builtin_mul_overflow(count, d, &count))
          return Status::InvalidArgument(where + ": input '" + name + "' dims " + DimsToString(in.dims()) +
                                         " hold more than 2^63 elements");
      }
      if (in.input_data_type_case() == configpb::ModelWarmup::Input::INPUT_DATA_TYPE_NOT_SET)
        return Status::InvalidArgument(where + ": input '" + name +
                                       "' needs one of zero_data, random_data or input_data_file");
    }
  }
  return Status::Ok();
}

Status ValidateCompleteModelConfig(const ModelConfig& c) {
  IL_RETURN_IF_ERROR(ValidateModelConfig(c, ""));
  for (const auto& in : c.input())
    if (in.data_type() == configpb::TYPE_INVALID)
      return Status::InvalidArgument("input '" + in.name() + "' has no data_type");
  for (const auto& out : c.output())
    if (out.data_type() == configpb::TYPE_INVALID)
      return Status::InvalidArgument("output '" + out.name() + "' has no data_type");
  if (c.has_dynamic_batching() && c.max_batch_size() == 0)
    return Status::InvalidArgument("dynamic_batching needs max_batch_size > 0 (the model is not batched)");
  const uint32_t max_warmup_batch = c.max_batch_size() > 0 ? static_cast<uint32_t>(c.max_batch_size()) : 1u;
  for (const auto& w : c.model_warmup()) {
    const std::string where = "model_warmup '" + w.name() + "'";
    if (w.batch_size() > max_warmup_batch)
      return Status::InvalidArgument(where + ": batch_size " + std::to_string(w.batch_size()) +
                                     " exceeds " + (c.max_batch_size() > 0 ? "max_batch_size " : "1 (no batching) ") +
                                     (c.max_batch_size() > 0 ? std::to_string(c.max_batch_size()) : ""));
    for (const auto& [name, in] : w.inputs()) {
      const configpb::ModelInput* spec = nullptr;
      for (const auto& i : c.input())
        if (i.name() == name) spec = &i;
      if (!spec) return Status::InvalidArgument(where + ": '" + name + "' is not an input of the model");
      if (in.data_type() != spec->data_type())
        return Status::InvalidArgument(where + ": input '" + name + "' data_type " + ConfigDataTypeName(in.data_type()) +
                                       " but the input is " + ConfigDataTypeName(spec->data_type()));
      bool fits = in.dims_size() == spec->dims_size();
      for (int i = 0; fits && i < in.dims_size(); ++i) fits = spec->dims(i) == -1 || spec->dims(i) == in.dims(i);
      if (!fits)
        return Status::InvalidArgument(where + ": input '" + name + "' dims " + DimsToString(in.dims()) +
                                       " do not fit the input's dims " + DimsToString(spec->dims()) +
                                       (c.max_batch_size() > 0 ? " (both without the batch dimension)" : ""));
    }
  }
  return Status::Ok();
}

Result<ModelConfig> ParseModelConfig(const std::string& text, const std::string& model_name) {
  ModelConfig config;
  TextErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(false);
  parser.AllowUnknownExtension(false);
  if (!parser.ParseFromString(text, &config)) {
    const std::string where = errors.first().empty() ? "unreadable text" : errors.first();
    return Status::InvalidArgument("config.pbtxt:" + where);
  }
  if (config.name().empty()) config.set_name(model_name);
  Status st = ValidateModelConfig(config, model_name);
  if (!st.ok()) return st.WithContext("config.pbtxt");
  return config;
}

std::string ConfigDataTypeName(int t) {
  if (!configpb::DataType_IsValid(t)) return "TYPE_" + std::to_string(t);
  return configpb::DataType_Name(static_cast<ConfigDataType>(t));
}

std::string KServeDataTypeName(ConfigDataType t) {
  switch (t) {
    case configpb::TYPE_BOOL: return "BOOL";
    case configpb::TYPE_UINT8: return "UINT8";
    case configpb::TYPE_UINT16: return "UINT16";
    case configpb::TYPE_UINT32: return "UINT32";
    case configpb::TYPE_UINT64: return "UINT64";
    case configpb::TYPE_INT8: return "INT8";
    case configpb::TYPE_INT16: return "INT16";
    case configpb::TYPE_INT32: return "INT32";
    case configpb::TYPE_INT64: return "INT64";
    case configpb::TYPE_FP16: return "FP16";
    case configpb::TYPE_FP32: return "FP32";
    case configpb::TYPE_FP64: return "FP64";
    case configpb::TYPE_STRING: return "BYTES";
    case configpb::TYPE_BF16: return "BF16";
    default: return "";
  }
}

ConfigDataType ToConfigDataType(DataType t) {
  switch (t) {
    case DataType::kBool: return configpb::TYPE_BOOL;
    case DataType::kUInt8: return configpb::TYPE_UINT8;
    case DataType::kUInt16: return configpb::TYPE_UINT16;
    case DataType::kUInt32: return configpb::TYPE_UINT32;
    case DataType::kUInt64: return configpb::TYPE_UINT64;
    case DataType::kInt8: return configpb::TYPE_INT8;
    case DataType::kInt16: return configpb::TYPE_INT16;
    case DataType::kInt32: return configpb::TYPE_INT32;
    case DataType::kInt64: return configpb::TYPE_INT64;
    case DataType::kFloat16: return configpb::TYPE_FP16;
    case DataType::kFloat: return configpb::TYPE_FP32;
    case DataType::kDouble: return configpb::TYPE_FP64;
    case DataType::kString: return configpb::TYPE_STRING;
    case DataType::kBFloat16: return configpb::TYPE_BF16;
    default: return configpb::TYPE_INVALID;
  }
}

DataType FromConfigDataType(ConfigDataType t) {
  switch (t) {
    case configpb::TYPE_BOOL: return DataType::kBool;
    case configpb::TYPE_UINT8: return DataType::kUInt8;
    case configpb::TYPE_UINT16: return DataType::kUInt16;
    case configpb::TYPE_UINT32: return DataType::kUInt32;
    case configpb::TYPE_UINT64: return DataType::kUInt64;
    case configpb::TYPE_INT8: return DataType::kInt8;
    case configpb::TYPE_INT16: return DataType::kInt16;
    case configpb::TYPE_INT32: return DataType::kInt32;
    case configpb::TYPE_INT64: return DataType::kInt64;
    case configpb::TYPE_FP16: return DataType::kFloat16;
    case configpb::TYPE_FP32: return DataType::kFloat;
    case configpb::TYPE_FP64: return DataType::kDouble;
    case configpb::TYPE_STRING: return DataType::kString;
    case configpb::TYPE_BF16: return DataType::kBFloat16;
    default: return DataType::kUndefined;
  }
}

}  // namespace inferloop::serve
