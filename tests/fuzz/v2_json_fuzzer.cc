// Fuzzes the KServe v2 REST request decoder: arbitrary bytes must give a Status, never a crash,
// hang or leak. The first two bytes choose the JSON header length (0: the whole body is JSON),
// the rest is the body; declared tensors are capped at 1 MiB.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/v2_json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t header = (size_t{data[0]} << 8) | data[1];
  std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  inferloop::frontends::JsonDecodeOptions options;
  options.max_tensor_bytes = size_t{1} << 20;
  auto request = inferloop::frontends::DecodeJsonInferRequest(body, header, options);
  if (request.ok()) {
    // Whatever decodes must encode again, as JSON and as binary.
    (void)inferloop::frontends::EncodeJsonInferRequest(*request, false);
    (void)inferloop::frontends::EncodeJsonInferRequest(*request, true);
  }
  return 0;
}
