// Fuzzes the KServe v2 REST request decoder: arbitrary bytes must give a Status, never a crash,
// hang or leak. The first two bytes choose the JSON header length (0: the whole body is JSON),
// the rest is the body; declared tensors are capped at 1 MiB. Whatever decodes is encoded
// again, as a request (JSON and binary) and as a response echoing the inputs as outputs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/v2_json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::frontends;
  if (size < 2) return 0;
  size_t header = (size_t{data[0]} << 8) | data[1];
  std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  JsonDecodeOptions options;
  options.max_tensor_bytes = size_t{1} << 20;
  auto request = DecodeJsonInferRequest(body, header, options);
  if (!request.ok()) {
    (void)JsonErrorBody(request.status());
    return 0;
  }
  (void)EncodeJsonInferRequest(*request, false);
  (void)EncodeJsonInferRequest(*request, true);
  InferResponse response;
  response.model_name = "fuzz";
  response.id = request->id;
  response.parameters = request->parameters;
  for (const auto& in : request->inputs) response.outputs.push_back({in.name, in.tensor, in.parameters});
  (void)EncodeJsonInferResponse(response, *request);
  return 0;
}
