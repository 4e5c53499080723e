// Chat prompt formats. The format is chosen from the GGUF file's tokenizer.chat_template (a
// Jinja template, recognized by its markers rather than run): ChatML (<|im_start|>, qwen2 and
// many fine-tunes), Llama 3 (<|start_header_id|>), Llama 2 / Mistral ([INST]). A file without a
// template gets the plain format: the messages' contents, one per line (for base models).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"
#include "llm/gguf_file.h"

namespace inferloop::llm {

enum class ChatFormat { kPlain, kChatml, kLlama3, kLlama2 };
const char* ChatFormatName(ChatFormat f);  // "plain", "chatml", "llama3", "llama2"

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

// The format for a template text ("" = none). Unimplemented for a template none of the known
// formats matches (naming what was recognized).
Result<ChatFormat> DetectChatFormat(std::string_view jinja_template);
// The format for a model file.
Result<ChatFormat> ChatFormatOf(const GgufFile& file);

// The prompt text for `messages`, ending where the assistant's answer starts. Special tokens
// appear as text (<|im_start|>, <s>, ...) and are meant to be encoded with parse_special. For
// formats that begin with the BOS text, `*starts_with_bos` is set (do not add another BOS).
// InvalidArgument for an unknown role or an empty message list.
Result<std::string> RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages, bool* starts_with_bos);

}  // namespace inferloop::llm
