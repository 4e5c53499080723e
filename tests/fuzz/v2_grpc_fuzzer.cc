// Fuzzes the KServe v2 gRPC request decoder: arbitrary bytes parsed as a ModelInferRequest and
// decoded must give a Status, never a crash, hang or leak; declared tensors are capped at 1 MiB.
// Whatever decodes is encoded again (raw and typed) and answered with a response.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/stubs/logging.h>

#include "frontends/v2_grpc_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::frontends;
  google::protobuf::LogSilencer quiet;  // invalid UTF-8 in string fields is logged, not fatal
  inference::ModelInferRequest message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return 0;
  GrpcDecodeOptions options;
  options.max_tensor_bytes = size_t{1} << 20;
  auto request = DecodeGrpcInferRequest(message, options);
  if (!request.ok()) return 0;
  inference::ModelInferRequest again;
  (void)EncodeGrpcInferRequest(*request, true, &again);
  (void)EncodeGrpcInferRequest(*request, false, &again);
  InferResponse response;
  response.model_name = request->model_name;
  response.id = request->id;
  for (const auto& in : request->inputs) response.outputs.push_back({in.name, in.tensor, in.parameters});
  inference::ModelInferResponse out;
  (void)EncodeGrpcInferResponse(response, &out);
  return 0;
}
