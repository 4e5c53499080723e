// OpenAiHandler: the OpenAI-compatible HTTP API over serve::TextGenerationService.
//
// Routes:
//   GET  /v1/models, /v1/models/{id}
//   POST /v1/completions        prompt: a string, [string, ...], [token id, ...] or
//                               [[token id, ...], ...]; each prompt gets its own n choices, with
//                               index = prompt index * n + k (all prompts run concurrently)
//   POST /v1/chat/completions   messages (content as a string or [{"type": "text", "text": ...}];
//                               assistant tool_calls and role "tool" messages), tools, tool_choice
//                               (none, auto, required, a named function), parallel_tool_calls;
//                               a call comes back as message.tool_calls (streamed: tool_calls
//                               deltas, the id and name first, then argument fragments) with
//                               finish_reason "tool_calls"
//   POST /v1/embeddings         input, encoding_format, dimensions (openai_embeddings.h)
// Sampling and output fields: max_tokens (chat also max_completion_tokens; chat without either:
// up to the model's context), temperature, top_p, top_k (-1 or 0: off), min_p, seed, n, stop
// (string or up to 4 strings), presence_penalty and frequency_penalty ([-2, 2]),
// repetition_penalty (> 0), logit_bias ({"<token id>": [-100, 100]}), logprobs (completions:
// 0..5 alternatives; chat: bool with top_logprobs 0..20), echo (completions; not with logprobs),
// stream, stream_options.include_usage, user (ignored), priority (an extension: larger runs
// first), response_format ({"type": "text"}, {"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"name", "schema", "strict"}}: the output constrained to the grammar the service
// compiles, src/llm/json_schema_grammar.h; on both endpoints). best_of >= n (completions, not
// streamed: serve/best_of.h), suffix only empty (the models cannot infill); any other field, or a
// value the server does not support, is a 400 naming the field (its "param"), never silently
// ignored. stop_token_ids (vLLM's extension, both endpoints): up to 256 token ids; generating one
// ends the choice with finish_reason "stop", the token not emitted.
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
