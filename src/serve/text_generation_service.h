// TextGenerationService: what the OpenAI-compatible frontend (src/frontends/openai_handler.h)
// needs from the LLM side: the models, and text generation with streamed pieces. Implemented by
// LlmTextService (src/serve/llm_text_service.h); tests use fakes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::serve {

// A tool call of an assistant message (OpenAI's tool_calls[i]).
struct TextToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct TextChatMessage {
  std::string role;  // system, user, assistant, tool
  std::string content;
  std::vector<TextToolCall> tool_calls;  // assistant
  std::string tool_call_id;              // tool
};

// A function the model may call (OpenAI's tools[i].function).
struct TextTool {
  std::string name;
  std::string description;
  std::string parameters;  // JSON schema text ({"type": "object", "properties": {}} when not given)
  bool strict = false;
};

// One completions prompt: text (tokenized by the model, which adds its BOS) or token ids (used
// as given).
struct TextPrompt {
  std::string text;
  std::vector<int32_t> tokens;
  bool is_tokens = false;
};

struct TextGenerationRequest {
  std::string model;
  bool chat = false;
  // Completions: one or more prompts, each generated as its own n choices (concurrently);
  // choice index = prompt index * n + k.
  std::vector<TextPrompt> prompts;
  bool echo = false;                      // completions: each choice's text starts with its prompt
  std::vector<TextChatMessage> messages;  // chat completions
  int max_tokens = 16;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;                          // 0: no limit
  float min_p = 0;                        // 0: off
  // Penalties and biases as llm::SamplingParams documents them (src/llm/sampler.h).
  float presence_penalty = 0;
  float frequency_penalty = 0;
  float repetition_penalty = 1;
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;           // none: a random seed
  int n = 1;
  int best_of = 0;                        // > n: completions only, see best_of.h (0 or n: off)
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;    // vLLM's extension: generating one ends the choice (not emitted)
  int logprobs = -1;                      // -1: none; k >= 0: chosen token + k alternatives
  int priority = 0;
  // Structured output (response_format): free text, any JSON object, or JSON valid under
  // `json_schema` (the schema as JSON text; `json_schema_strict`: every property is written).
  enum class Format { kText, kJsonObject, kJsonSchema };
  Format format = Format::kText;
  std::string json_schema;
  bool json_schema_strict = false;
  // Chat tools (src/llm/tool_calls.h): kNone never calls (the tools are not shown to the model);
  // kAuto may call; kRequired calls one of them; kFunction calls `tool_choice_name`.
  std::vector<TextTool> tools;
  enum class ToolChoice { kNone, kAuto, kRequired, kFunction };
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_choice_name;
  // Set when the client went away: the generation is cancelled and its KV blocks freed.
  std::shared_ptr<std::atomic<bool>> cancelled;
};

struct TextTokenLogprob {
  std::string token;  // the token's text (its bytes; may be part of a UTF-8 character)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

// New text of choice `index`: final (never retracted), whole UTF-8 characters, no part of a stop
// string. `tokens` are the tokens generated since the previous piece of this choice (with
// logprobs when asked).
struct TextPiece {
  int index = 0;
  std::string text;
  std::vector<TextTokenLogprob> tokens;
  // Chat with tools: the answer is a tool call instead of text. The call's first piece has
  // `call_id` and `call_name`; pieces carry fragments of its arguments' JSON text in
  // `call_arguments` (they concatenate to the whole arguments).
  std::string call_id = {};
  std::string call_name = {};
  std::string call_arguments = {};
  bool has_call() const { return !call_name.empty() || !call_arguments.empty(); }
};

struct TextChoiceEnd {
  int index = 0;
  std::string finish_reason;  // "stop", "length" or "tool_calls" (a whole tool call was made)
  int completion_tokens = 0;
};

struct TextGenerationResult {
  Status status;                     // not OK: the generation failed (error after it started)
  std::vector<TextChoiceEnd> choices;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  int completion_tokens = 0;
};

// POST /v1/embeddings: one vector per input.
struct EmbeddingRequest {
  std::string model;
  std::vector<TextPrompt> inputs;  // text (the model adds its BOS) or token ids, as prompts are
  int dimensions = 0;              // 0: the model's; else truncate to this many and renormalise
  std::shared_ptr<std::atomic<bool>> cancelled;
};

struct EmbeddingResult {
  Status status;                          // not OK: it failed after it started
  std::vector<std::vector<float>> embeddings;  // per input, in order, L2-normalised
  int prompt_tokens = 0;
};

class TextGenerationService {
 public:
  virtual ~TextGenerationService() = default;

  struct ModelInfo {
    std::string name;
    int64_t created = 0;  // unix seconds when loaded
    int64_t context_length = 0;
    int64_t vocab_size = 0;  // token ids are 0 .. vocab_size - 1
  };
  virtual std::vector<ModelInfo> ListModels() const = 0;

  // Starts a generation. Errors up front: NotFound for an unknown model, InvalidArgument for a
  // request that cannot run (its message starts with the field at fault in single quotes, e.g.
  // "'max_tokens' ...", which the frontend reports as the error's param), ResourceExhausted when the server's token backlog
  // is over its bound (retry later). After an OK return, `on_piece` is called for each piece of
  // text and then `on_done` exactly once, from another thread; neither may block.
  virtual Status Generate(TextGenerationRequest request, std::function<void(const TextPiece&)> on_piece,
                          std::function<void(const TextGenerationResult&)> on_done) = 0;

  // Computes the embedding of every input (pooled as the model says, L2-normalised). Errors up
  // front as Generate's ('input' or 'dimensions' quoted), plus InvalidArgument for a model that
  // gives no pooled embedding. After an OK return `on_done` is called exactly once, from another
  // thread; it may not block. The default: Unimplemented.
  virtual Status Embed(EmbeddingRequest request, std::function<void(const EmbeddingResult&)> on_done) {
    (void)request;
    (void)on_done;
    return Status(StatusCode::kUnimplemented, "this service computes no embeddings");
  }
};

}  // namespace inferloop::serve
