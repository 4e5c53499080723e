// Chat prompts. A model's prompt comes from the GGUF file's tokenizer.chat_template (a Jinja
// template) run by the Jinja engine (llm/jinja.h) exactly as Hugging Face transformers'
// apply_chat_template runs it: variables messages, tools (None when absent), documents (None),
// add_generation_prompt, bos_token and eos_token (the vocabulary's BOS/EOS text, when it has
// them). Hard-coded formats are the fallback, for a file without a template or with one the
// engine cannot parse (or that fails on a plain one-user-message conversation): the format is
// then recognized by the template's markers: ChatML (<|im_start|>), Llama 3
// (<|start_header_id|>), Llama 2 / Mistral ([INST]); no template: the plain format (the messages'
// contents, one per line, for base models).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"
#include "llm/gguf_file.h"
#include "llm/jinja.h"

namespace inferloop::llm {

class Tokenizer;

enum class ChatFormat { kPlain, kChatml, kLlama3, kLlama2 };
const char* ChatFormatName(ChatFormat f);  // "plain", "chatml", "llama3", "llama2"

// One message of a conversation, as the OpenAI API carries it.
struct ChatMessage {
  std::string role;            // "system", "user", "assistant", "tool"
  std::string content;
  bool content_is_null = false;  // content: null (an assistant message that only calls tools)
  // An assistant's tool calls: a JSON array as OpenAI sends it ([{"id", "type": "function",
  // "function": {"name", "arguments": "<JSON text>"}}]); "" for none. Templates see arguments
  // as an object (parsed from the JSON text, as vLLM does), or the string when it is not one.
  std::string tool_calls_json = {};
  std::string tool_call_id = {};  // role "tool": the call answered
  std::string name = {};          // role "tool": the function's name (optional)
};

// What a chat template renders: the conversation, the tools (a JSON array as OpenAI's request
// `tools` holds it: [{"type": "function", "function": {"name", "description", "parameters"}}];
// "" for none) and whether the prompt ends where the assistant's answer starts.
struct ChatInput {
  std::vector<ChatMessage> messages;
  std::string tools_json;
  bool add_generation_prompt = true;
};

// The template variable `messages` for `messages` (a list of dicts with role, content and, where
// set, tool_calls, tool_call_id, name). InvalidArgument naming the message for bad tool_calls JSON.
Result<jinja::Value> MessagesValue(const std::vector<ChatMessage>& messages);

// The fallback format for a template text ("" = none). Unimplemented for a template none of the
// known formats matches (naming what was recognized).
Result<ChatFormat> DetectChatFormat(std::string_view jinja_template);

// A model's chat prompt renderer: its Jinja template, parsed once, or a fallback format.
class ChatTemplate {
 public:
  // From a template text ("" = none) and the vocabulary's BOS/EOS text ("" = none). Errors
  // (Unimplemented) only for a template the engine cannot use that no fallback format matches.
  static Result<ChatTemplate> FromText(std::string_view text, std::string bos_token, std::string eos_token);
  // From a model file's tokenizer.chat_template and its vocabulary.
  static Result<ChatTemplate> FromGguf(const GgufFile& file, const Tokenizer& tokenizer);

  bool uses_jinja() const { return jinja_ != nullptr; }
  ChatFormat fallback_format() const { return format_; }
  // How prompts are made, for the load log: "jinja", or "<format> (<why not jinja>)".
  const std::string& description() const { return description_; }

  // The prompt text. Special tokens appear as text, to be encoded with parse_special. *add_bos:
  // whether the tokenizer should put BOS first (never for a Jinja template, which writes the BOS
  // it wants, as transformers encodes with add_special_tokens=False; fallback formats that begin
  // with the BOS text set it false too). InvalidArgument starting with "'messages'" for a
  // conversation the template refuses (the template's raise_exception message, or its error)
  // or the fallback cannot express (a role other than system/user/assistant, tools).
  Result<std::string> Render(const ChatInput& input, bool* add_bos) const;

 private:
  std::shared_ptr<const jinja::Template> jinja_;
  ChatFormat format_ = ChatFormat::kPlain;
  std::string bos_, eos_;
  std::string description_;
};

// The prompt text for `messages` in a fallback format, ending where the assistant's answer
// starts. For formats that begin with the BOS text, `*starts_with_bos` is set (do not add
// another BOS). InvalidArgument for an unknown role or an empty message list.
Result<std::string> RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages, bool* starts_with_bos);

}  // namespace inferloop::llm
