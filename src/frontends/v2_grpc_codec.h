// KServe v2 gRPC inference messages (proto/grpc_service.proto, ModelInferRequest /
// ModelInferResponse) to and from the transport-independent InferRequest / InferResponse.
// Input data come either as raw_input_contents (one entry per input, in order; layout in
// v2_tensor_data.h) or as each input's typed `contents`, never both.
#pragma once

#include <cstddef>

#include "frontends/request_types.h"
#include "grpc_service.pb.h"
#include "inferloop/status.h"

namespace inferloop::frontends {

struct GrpcDecodeOptions {
  // Largest tensor (declared shape x element size) a request may declare; checked before any
  // allocation. Larger: ResourceExhausted.
  size_t max_tensor_bytes = size_t{1} << 30;
};

// Decodes a ModelInferRequest. Errors as for the JSON decoder (v2_json_codec.h): unknown
// datatype, negative/overflowing/oversized shapes, element-count or raw-size mismatches, data in
// the wrong typed field, values out of range for the datatype, raw and typed contents mixed, a
// raw_input_contents count differing from the input count, duplicate input names.
Result<InferRequest> DecodeGrpcInferRequest(const inference::ModelInferRequest& message,
                                            const GrpcDecodeOptions& options = {});

// Fills `out` (cleared first) from `response`, with every output's data in raw_output_contents
// (what tritonclient expects). Fails only for a dtype the protocol cannot carry.
Status EncodeGrpcInferResponse(const InferResponse& response, inference::ModelInferResponse* out);

// Fills `out` (cleared first) from `request`: data as raw_input_contents when `raw`, else as
// typed contents (FP16/BF16 inputs then fail: they have no typed field). For tests and clients.
Status EncodeGrpcInferRequest(const InferRequest& request, bool raw, inference::ModelInferRequest* out);

}  // namespace inferloop::frontends
