// The request bodies of the OpenAI-compatible API (POST /v1/completions and
// /v1/chat/completions) parsed and checked into a serve::TextGenerationRequest; the fields and
// what is accepted are listed in openai_handler.h. Separate from the handler so it can be
// unit-tested and fuzzed without a server.
#pragma once

#include <string>
#include <string_view>

#include "serve/text_generation_service.h"

namespace inferloop::frontends {

struct OpenAiRequest {
  serve::TextGenerationRequest gen;  // max_tokens < 0: chat without a limit (the handler decides)
  bool stream = false;
  bool include_usage = false;
};

// A 400: the field at fault ("" for the body as a whole) and a message naming it.
struct OpenAiFieldError {
  std::string field;
  std::string message;
};

// Parses `body` (JSON) as a chat (`chat`) or completions request. False with *err set for broken
// JSON, a missing or wrongly typed field, a value out of range, or a field the server does not
// support (never silently ignored).
bool ParseOpenAiRequest(std::string_view body, bool chat, OpenAiRequest* out, OpenAiFieldError* err);

}  // namespace inferloop::frontends
