// Fuzzes the OpenAI-compatible API's request parsing (src/frontends/openai_request.h): any bytes
// give a request or a field error, never a crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::frontends;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (bool chat : {false, true}) {
    OpenAiRequest r;
    OpenAiFieldError e;
    (void)ParseOpenAiRequest(body, chat, &r, &e);
  }
  return 0;
}
