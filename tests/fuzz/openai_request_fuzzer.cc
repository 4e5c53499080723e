// Fuzzes the OpenAI-compatible API's request parsing (src/frontends/openai_request.h, and
// openai_embeddings.h): any bytes give a request or a field error, never a crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/openai_embeddings.h"
#include "frontends/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::frontends;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (bool chat : {false, true}) {
    OpenAiRequest r;
    OpenAiFieldError e;
    (void)ParseOpenAiRequest(body, chat, &r, &e);
  }
  OpenAiEmbeddingsRequest er;
  OpenAiFieldError ee;
  if (ParseOpenAiEmbeddingsRequest(body, &er, &ee)) {
    inferloop::serve::EmbeddingResult res;
    for (const auto& in : er.request.inputs) res.embeddings.push_back(std::vector<float>(in.tokens.size() % 7, 0.5f));
    (void)OpenAiEmbeddingsJson(res, er.request.model, er.base64);
  }
  return 0;
}
