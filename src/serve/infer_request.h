// InferRequest / InferResponse: one KServe v2 (Open Inference Protocol) inference call, decoded,
// independent of the transport it came over (REST JSON, REST JSON + binary, gRPC).
//
// Every input holds a fully decoded Tensor whose element count matches its shape; the codecs
// (v2_json_codec.h, v2_grpc_codec.h) guarantee that, so the server never re-validates bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "inferloop/shape.h"
#include "inferloop/tensor.h"

namespace inferloop::serve {

// A request/response/tensor parameter value (the v2 protocol's bool, int64, uint64, double or
// string parameters; gRPC's InferParameter oneof).
using InferParameter = std::variant<bool, int64_t, uint64_t, double, std::string>;
// Ordered by name, so encoding is deterministic.
using InferParameters = std::map<std::string, InferParameter, std::less<>>;  // find(const char*) builds no string

// Reserved parameter names of the binary tensor data extension.
inline constexpr const char kBinaryDataSizeParam[] = "binary_data_size";      // int64, on inputs/outputs
inline constexpr const char kBinaryDataParam[] = "binary_data";               // bool, on requested outputs
inline constexpr const char kBinaryDataOutputParam[] = "binary_data_output";  // bool, on the request

struct InferInput {
  std::string name;
  // The tensor's dtype and shape are the input's v2 datatype and shape.
  Tensor tensor;
  // Parameters as sent (binary_data_size included when the data came as binary).
  InferParameters parameters;
};

struct RequestedOutput {
  std::string name;
  // The "binary_data" parameter when given: whether this output goes back as binary data.
  std::optional<bool> binary_data;
  InferParameters parameters;
};

struct InferRequest {
  std::string model_name;     // from the URL for REST (not in the body), from the message for gRPC
  std::string model_version;  // empty: the server's choice
  std::string id;             // echoed in the response; empty when not given
  InferParameters parameters;
  std::vector<InferInput> inputs;
  // Empty: every model output is wanted.
  std::vector<RequestedOutput> outputs;
};

struct InferOutput {
  std::string name;
  Tensor tensor;
  InferParameters parameters;
};

struct InferResponse {
  std::string model_name;
  std::string model_version;
  std::string id;
  InferParameters parameters;
  std::vector<InferOutput> outputs;
};

// Whether output `name` is to be returned as binary data (REST binary tensor data extension):
// its requested output's "binary_data" flag when it has one, otherwise the request's
// "binary_data_output" parameter, otherwise false.
bool WantsBinaryOutput(const InferRequest& request, const std::string& name);

}  // namespace inferloop::serve
