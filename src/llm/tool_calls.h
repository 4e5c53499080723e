// Tool (function) calling over a model without a tool-aware chat template: how tools, calls and
// results are written into the chat, the grammar a call is constrained to, and how a call is
// read back out of the generated text.
//
// The convention (that of Hermes / Qwen2.5-style templates):
//  - the tools are described in a system message: a one-line instruction, then one JSON line
//    per tool {"name", "description", "parameters"} (the caller decides when: the server does for
//    tool_choice "auto", where the model must know it may call; for "required" and a named
//    function the grammar alone makes the call, which keeps prompts short);
//  - a call is written <tool_call>{"name": NAME, "arguments": {...}}</tool_call>;
//  - an assistant message's earlier calls are written that way in its content;
//  - a tool result becomes a user message <tool_response>\n{content}\n</tool_response>
//    (consecutive results share one message).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"
#include "llm/chat_template.h"
#include "llm/grammar.h"

namespace inferloop::llm {

inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";

struct ToolSpec {
  std::string name;         // [A-Za-z0-9_-]{1,64}
  std::string description;
  std::string parameters;   // a JSON schema (text) for the arguments object
};

struct ToolCallText {
  std::string id;
  std::string name;
  std::string arguments;    // JSON text
};

// A chat message with the tool fields.
struct ToolChatMessage {
  std::string role;  // system, user, assistant, tool
  std::string content;
  std::vector<ToolCallText> tool_calls;  // assistant
  std::string tool_call_id;              // tool
};

// The messages in the convention above, as plain system/user/assistant messages; `tools` (when
// not empty) are described in a system message (the first system message gets the description
// after its own text, or one is put first).
std::vector<ChatMessage> ToolChatToPlain(const std::vector<ToolChatMessage>& messages, const std::vector<ToolSpec>& tools);

// The grammar of an answer that calls one of `tools`: an optional space, then
// <tool_call>{"name": "<one of the names>", "arguments": <that tool's parameters>}</tool_call>
// (the arguments written strictly when `strict`). With `or_text`, instead any text that does not
// begin (after an optional space) with "<tool_call>" (tool_choice "auto"). InvalidArgument
// naming the tool for a parameters schema that cannot be compiled.
Result<Grammar> ToolCallGrammar(const std::vector<ToolSpec>& tools, bool strict, bool or_text);

// Splits a generated answer, as it comes, into text or one tool call (name, then fragments of
// its arguments' JSON text, which concatenate to the whole arguments). Undecided while the text
// could still be the opening of a call (held back); the closing "}</tool_call>" is held back
// until the end, so no fragment ever needs retracting.
class ToolCallStream {
 public:
  struct Event {
    enum class Kind { kText, kCallStart, kArguments } kind;
    std::string text;  // kCallStart: the tool's name
  };
  std::vector<Event> Push(std::string_view text);
  // The end of the answer (`stopped`: it ended by itself, not at a limit): what was held back,
  // and *called = a whole call was made.
  std::vector<Event> Finish(bool stopped, bool* called);

 private:
  void SendArguments(size_t end, std::vector<Event>* out);
  enum class Mode { kUndecided, kText, kCall } mode_ = Mode::kUndecided;
  std::string buf_;
  size_t args_start_ = 0, args_sent_ = 0;
};

// Reads a call back: `text` is " "? <tool_call>{"name": NAME, "arguments": ARGS}</tool_call> with
// the spacing the grammar allows. False when it is not (text, or a cut-off call).
bool ParseToolCall(std::string_view text, std::string* name, std::string* arguments);

// Streaming: when `text` (a prefix of the answer) holds a whole call header " "?<tool_call>{"name":
// "NAME", "arguments": , the offset where the arguments start (and *name); 0 while it does not
// yet; std::string_view::npos when `text` cannot be (or begin) a call.
size_t ToolCallArgumentsStart(std::string_view text, std::string* name);

}  // namespace inferloop::llm
