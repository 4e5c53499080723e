// OpenAiHandler: the OpenAI-compatible HTTP API over serve::TextGenerationService.
//
// Routes:
//   GET  /v1/models, /v1/models/{id}
//   POST /v1/completions        prompt (string or [string])
//   POST /v1/chat/completions   messages (content as a string or [{"type": "text", "text": ...}])
// Sampling and output fields: max_tokens (chat also max_completion_tokens), temperature, top_p,
// top_k, seed, n, stop (string or up to 4 strings), logprobs (completions: 0..5 alternatives;
// chat: bool with top_logprobs 0..20), stream, stream_options.include_usage, user (ignored),
// priority (an extension: larger runs first). presence_penalty / frequency_penalty are accepted
// only as 0, echo only as false, best_of only equal to n, response_format only {"type":
// "text"}; any other field, or a value the server does not support, is a 400 naming the field,
// never silently ignored.
// Streaming answers are server-sent events (one "data: {json}" per piece, ending with
// "data: [DONE]"); the streamed text equals the non-streamed text. Errors use OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}, with 404 for an unknown model and 429 plus
// Retry-After when the token backlog is over its bound. A client that disconnects cancels its
// generation.
#pragma once

#include "frontends/http_server.h"
#include "serve/text_generation_service.h"

namespace inferloop::frontends {

class OpenAiHandler {
 public:
  // `service` must outlive the handler and every request in flight.
  explicit OpenAiHandler(serve::TextGenerationService& service) : service_(service) {}

  // True for the paths this handler owns (/v1/...).
  static bool Owns(std::string_view target);
  // Answers one request (possibly later, from the generation thread). Never blocks.
  void Handle(HttpRequest request, HttpResponder respond);

 private:
  serve::TextGenerationService& service_;
};

}  // namespace inferloop::frontends
