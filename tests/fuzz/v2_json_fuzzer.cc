// Fuzzes the KServe v2 REST request decoder: arbitrary bytes must give a Status, never a crash,
// hang or leak. The first two bytes choose the JSON header length (0: the whole body is JSON),
// the rest is the body; declared tensors are capped at 1 MiB. Whatever decodes is encoded
// again, as a request (JSON and binary) and as a response echoing the inputs as outputs.
// Differential too: whatever the fast path (v2_json_fast_decode.h) decodes, the full decoder
// must decode to the same request (names, id, requested outputs, tensors bit for bit); a
// difference aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "frontends/v2_json_codec.h"
#include "frontends/v2_json_fast_decode.h"

namespace {

bool SameTensor(const inferloop::Tensor& a, const inferloop::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

// The fast path's request must be the full decoder's.
void CheckFastPathAgrees(std::string_view body, const inferloop::frontends::JsonDecodeOptions& options) {
  using namespace inferloop::frontends;
  auto fast = TryDecodeJsonInferRequestFast(body, options);
  if (!fast) return;
  JsonDecodeOptions full_options = options;
  full_options.fast_path = false;
  auto full = DecodeJsonInferRequest(body, 0, full_options);
  if (!full.ok() || full->id != fast->id || !full->parameters.empty() || full->inputs.size() != fast->inputs.size() ||
      full->outputs.size() != fast->outputs.size()) {
    std::abort();
  }
  for (size_t i = 0; i < fast->inputs.size(); ++i) {
    if (full->inputs[i].name != fast->inputs[i].name || !full->inputs[i].parameters.empty() ||
        !SameTensor(full->inputs[i].tensor, fast->inputs[i].tensor)) {
      std::abort();
    }
  }
  for (size_t i = 0; i < fast->outputs.size(); ++i) {
    if (full->outputs[i].name != fast->outputs[i].name || full->outputs[i].binary_data.has_value() ||
        !full->outputs[i].parameters.empty()) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::frontends;
  if (size < 2) return 0;
  size_t header = (size_t{data[0]} << 8) | data[1];
  std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  JsonDecodeOptions options;
  options.max_tensor_bytes = size_t{1} << 20;
  if (header == 0) CheckFastPathAgrees(body, options);
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
