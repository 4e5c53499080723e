// The KServe v2 REST inference body: JSON, optionally followed by binary tensor data (Triton's
// binary tensor data extension, which tritonclient's HTTP client uses by default).
//
// A body with binary data is the JSON header (its length given by the HTTP header
// Inference-Header-Content-Length) followed by the raw bytes (v2_tensor_data.h) of every input
// whose parameters carry "binary_data_size", in the order of the "inputs" array.
// Tensor "data" may be flat or nested arrays (row-major); BYTES data are JSON strings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "frontends/request_types.h"
#include "inferloop/status.h"

namespace inferloop::frontends {

struct JsonDecodeOptions {
  // Largest tensor (declared shape x element size) a request may declare; checked before any
  // allocation. Larger: ResourceExhausted.
  size_t max_tensor_bytes = size_t{1} << 30;
  // Try the fast path first (v2_json_fast_decode.h: simdjson on the common form of a request,
  // the full decoder for anything else; same results). false: the full decoder alone (tests
  // compare the two).
  bool fast_path = true;
};

// Decodes an infer request body. json_header_length: the Inference-Header-Content-Length value,
// or 0 when the whole body is JSON (no binary data). The model name and version come from the
// URL, so they are left empty. Errors are InvalidArgument (ResourceExhausted for the size
// limit) with messages naming the input and the problem: broken JSON (with its byte offset),
// missing or mistyped fields, unknown datatypes, element-count and binary-size mismatches,
// negative or overflowing shapes, duplicate input names, unused trailing binary data.
Result<InferRequest> DecodeJsonInferRequest(std::string_view body, size_t json_header_length,
                                            const JsonDecodeOptions& options = {});

// An encoded REST body. json_length is the JSON header's length: when binary data follows
// (has_binary), the server sends it as Inference-Header-Content-Length.
struct EncodedBody {
  std::string body;
  size_t json_length = 0;
  bool has_binary = false;
};

// Encodes a response. Outputs for which WantsBinaryOutput(request, name) go after the JSON as
// raw bytes with "binary_data_size"; the others as flat "data" arrays (FP16/BF16 as numbers,
// NaN/Inf as NaN/Infinity, BYTES as strings; BYTES that are not valid UTF-8 must be sent as
// binary, else InvalidArgument).
Result<EncodedBody> EncodeJsonInferResponse(const InferResponse& response, const InferRequest& request);

// Encodes a request the way tritonclient's HTTP client does (inputs as binary when
// binary_inputs, else as flat JSON data): for tests, fuzz seeds and clients.
Result<EncodedBody> EncodeJsonInferRequest(const InferRequest& request, bool binary_inputs);

// {"error":"<message>"}, the v2 error body.
std::string JsonErrorBody(const Status& status);

}  // namespace inferloop::frontends
