#include "llm/chat_template.h"

#include "base/status_macros.h"

namespace inferloop::llm {

const char* ChatFormatName(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatml: return "chatml";
    case ChatFormat::kLlama3: return "llama3";
    case ChatFormat::kLlama2: return "llama2";
    case ChatFormat::kPlain: break;
  }
  return "plain";
}

Result<ChatFormat> DetectChatFormat(std::string_view t) {
  if (t.empty()) return ChatFormat::kPlain;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat::kChatml;
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::kLlama3;
  if (t.find("[INST]") != std::string_view::npos) return ChatFormat::kLlama2;
  return Status::Unimplemented("the model's chat template is not one of the supported formats (chatml, llama3, llama2)");
}

Result<ChatFormat> ChatFormatOf(const GgufFile& file) {
  if (file.Find("tokenizer.chat_template") == nullptr) return ChatFormat::kPlain;
  IL_ASSIGN_OR_RETURN(std::string_view t, file.GetString("tokenizer.chat_template"));
  return DetectChatFormat(t);
}

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

Result<std::string> RenderChat(ChatFormat format, const std::vector<ChatMessage>& messages, bool* starts_with_bos) {
  *starts_with_bos = false;
  if (messages.empty()) return Status::InvalidArgument("'messages' must hold at least one message");
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return Status::InvalidArgument("message role '" + m.role + "' is not supported (system, user, assistant)");
    }
  }
  std::string out;
  switch (format) {
    case ChatFormat::kPlain:
      for (const ChatMessage& m : messages) {
        if (!out.empty()) out += "\n";
        out += m.content;
      }
      return out;
    case ChatFormat::kChatml:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      out += "<|im_start|>assistant\n";
      return out;
    case ChatFormat::kLlama3:
      *starts_with_bos = true;
      out = "<|begin_of_text|>";
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + Trim(m.content) + "<|eot_id|>";
      }
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatFormat::kLlama2: {
      // <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] ...
      *starts_with_bos = true;
      std::string system;
      size_t i = 0;
      if (messages[0].role == "system") {
        system = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n";
        i = 1;
      }
      bool first = true;
      for (; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
          out += "<s>[INST] " + (first ? system : std::string()) + Trim(m.content) + " [/INST]";
          first = false;
        } else if (m.role == "assistant") {
          out += " " + Trim(m.content) + " </s>";
        } else {
          return Status::InvalidArgument("the llama2 chat format takes a system message only first");
        }
      }
      if (first) out += "<s>[INST] " + system + " [/INST]";
      return out;
    }
  }
  return out;
}

}  // namespace inferloop::llm
