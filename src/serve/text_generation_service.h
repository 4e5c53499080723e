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
#include <vector>

#include "inferloop/status.h"

namespace inferloop::serve {

struct TextChatMessage {
  std::string role;
  std::string content;
};

struct TextGenerationRequest {
  std::string model;
  bool chat = false;
  std::string prompt;                     // completions
  std::vector<TextChatMessage> messages;  // chat completions
  int max_tokens = 16;
  float temperature = 1.0f;
  float top_p = 1.0f;
  int top_k = 0;                          // 0: no limit
  std::optional<uint64_t> seed;           // none: a random seed
  int n = 1;
  std::vector<std::string> stop;
  int logprobs = -1;                      // -1: none; k >= 0: chosen token + k alternatives
  int priority = 0;
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
};

struct TextChoiceEnd {
  int index = 0;
  std::string finish_reason;  // "stop" or "length"
  int completion_tokens = 0;
};

struct TextGenerationResult {
  Status status;                     // not OK: the generation failed (error after it started)
  std::vector<TextChoiceEnd> choices;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  int completion_tokens = 0;
};

class TextGenerationService {
 public:
  virtual ~TextGenerationService() = default;

  struct ModelInfo {
    std::string name;
    int64_t created = 0;  // unix seconds when loaded
    int64_t context_length = 0;
  };
  virtual std::vector<ModelInfo> ListModels() const = 0;

  // Starts a generation. Errors up front: NotFound for an unknown model, InvalidArgument for a
  // request that cannot run (naming the field), ResourceExhausted when the server's token backlog
  // is over its bound (retry later). After an OK return, `on_piece` is called for each piece of
  // text and then `on_done` exactly once, from another thread; neither may block.
  virtual Status Generate(TextGenerationRequest request, std::function<void(const TextPiece&)> on_piece,
                          std::function<void(const TextGenerationResult&)> on_done) = 0;
};

}  // namespace inferloop::serve
