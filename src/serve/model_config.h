// A model's serving configuration: what a model repository's `<model>/config.pbtxt` says
// (protobuf text format, the fields of proto/model_config.proto, named and numbered as in the
// public Triton/KServe model configuration), parsed and checked.
//
// Parsing never throws and never aborts: every problem comes back as an INVALID_ARGUMENT Status
// whose message says where (line:column for syntax errors and unknown fields) and what is wrong.
// Which fields are supported, and what each check means: docs/MODEL_REPOSITORY.md.
#pragma once

#include <string>

#include "inferloop/status.h"
#include "inferloop/tensor.h"
#include "model_config.pb.h"

namespace inferloop::serve {

using ModelConfig = configpb::ModelConfig;
using ConfigDataType = configpb::DataType;

// Parses config.pbtxt text for the model stored in the folder `model_name` and checks what can
// be checked without the model itself (see ValidateModelConfig). An empty `name` field is set to
// `model_name`; a different one is an error. Unknown fields, unknown enum values and syntax
// errors are errors that say line:column. `model_name` may be empty: then no name check.
Result<ModelConfig> ParseModelConfig(const std::string& text, const std::string& model_name);

// Checks a configuration on its own (ParseModelConfig runs this): name matches `model_name`
// (when both are set); max_batch_size >= 0; inputs and outputs have non-empty unique
// names, known data types, dims >= -1 and reshapes that fit them; preferred batch sizes are in
// [1, max_batch_size] when max_batch_size > 0; priority levels, the default level and the
// per-level queue policies are in range; instance counts >= 0 and no GPU instances; a specific
// version policy lists positive versions; warmup samples have batch_size >= 1.
// Data types and dims may still be unset (TYPE_INVALID / empty): completion fills them.
// Whether platform/backend name a kind of model this server has is the BackendRegistry's check.
Status ValidateModelConfig(const ModelConfig& config, const std::string& model_name);

// Checks a configuration that is to be served as is (CompleteConfigFromModel runs this on its
// result): ValidateModelConfig, plus every input/output has a data type, dynamic_batching needs
// max_batch_size > 0, preferred batch sizes <= max_batch_size, warmup batch sizes fit
// max_batch_size (1 when it is 0) and warmup inputs name config inputs.
Status ValidateCompleteModelConfig(const ModelConfig& config);

// "TYPE_FP32" for TYPE_FP32; "TYPE_<number>" for values outside the enum.
std::string ConfigDataTypeName(int config_data_type);
// The KServe v2 tensor datatype string ("FP32", "BYTES", ...); "" for TYPE_INVALID or unknown.
std::string KServeDataTypeName(ConfigDataType t);
// Config type for an engine data type; TYPE_INVALID when the config enum has no such type
// (complex, float8, int4, ...).
ConfigDataType ToConfigDataType(DataType t);
// Engine data type for a config type; kUndefined for TYPE_INVALID or unknown values.
DataType FromConfigDataType(ConfigDataType t);

}  // namespace inferloop::serve
