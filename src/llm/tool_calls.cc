#include "llm/tool_calls.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "llm/json_schema_grammar.h"

namespace inferloop::llm {
namespace {

std::string Json(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return std::string(sb.GetString(), sb.GetSize());
}

// Every "$ref": "#..." under `v` made relative to `base` (where `v` now sits).
void RebaseRefs(rapidjson::Value& v, const std::string& base, rapidjson::Document::AllocatorType& a) {
  if (v.IsObject()) {
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      if (std::string_view(it->name.GetString()) == "$ref" && it->value.IsString() && it->value.GetString()[0] == '#') {
        const std::string r = base + (it->value.GetString() + 1);
        it->value.SetString(r.c_str(), static_cast<rapidjson::SizeType>(r.size()), a);
      } else {
        RebaseRefs(it->value, base, a);
      }
    }
  } else if (v.IsArray()) {
    for (auto& x : v.GetArray()) RebaseRefs(x, base, a);
  }
}

// Scans the call header; returns the arguments' offset, 0 when `text` ends before the header
// does, npos when `text` departs from it.
size_t ScanHeader(std::string_view text, std::string* name) {
  size_t i = 0;
  auto opt = [&](char c) {
    if (i < text.size() && text[i] == c) ++i;
  };
  // Matches `lit` at i; 1 matched, 0 text ended inside it, -1 mismatch.
  auto lit = [&](std::string_view l) {
    for (char c : l) {
      if (i == text.size()) return 0;
      if (text[i] != c) return -1;
      ++i;
    }
    return 1;
  };
  auto step = [&](std::string_view l) -> int { return lit(l); };
  opt(' ');
  if (int r = step(kToolCallOpen); r <= 0) return r < 0 ? std::string_view::npos : 0;
  opt(' ');
  if (int r = step("{\"name\":"); r <= 0) return r < 0 ? std::string_view::npos : 0;
  opt(' ');
  if (int r = step("\""); r <= 0) return r < 0 ? std::string_view::npos : 0;
  const size_t start = i;
  while (i < text.size() && text[i] != '"') ++i;
  if (i == text.size()) return 0;
  *name = std::string(text.substr(start, i - start));
  ++i;
  if (int r = step(","); r <= 0) return r < 0 ? std::string_view::npos : 0;
  opt(' ');
  if (int r = step("\"arguments\":"); r <= 0) return r < 0 ? std::string_view::npos : 0;
  if (i == text.size()) return 0;  // an optional space may still come
  opt(' ');
  if (i == text.size()) return 0;
  return i;
}

}  // namespace

std::vector<ChatMessage> ToolChatToPlain(const std::vector<ToolChatMessage>& messages, const std::vector<ToolSpec>& tools) {
  std::vector<ChatMessage> out;
  std::string described;
  if (!tools.empty()) {
    described = "Tools; call one as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>";
    for (const ToolSpec& t : tools) {
      rapidjson::Document d;
      d.SetObject();
      auto& a = d.GetAllocator();
      d.AddMember("name", rapidjson::Value(t.name.c_str(), a), a);
      if (!t.description.empty()) d.AddMember("description", rapidjson::Value(t.description.c_str(), a), a);
      rapidjson::Document p;
      p.Parse(t.parameters.c_str());
      rapidjson::Value params;
      if (p.HasParseError()) params.SetObject(); else params.CopyFrom(p, a);
      d.AddMember("parameters", params, a);
      described += "\n" + Json(d);
    }
  }
  if (!described.empty()) {
    if (!messages.empty() && messages[0].role == "system") {
      out.push_back({"system", messages[0].content + "\n\n" + described});
    } else {
      out.push_back({"system", described});
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ToolChatMessage& m = messages[i];
    if (i == 0 && !described.empty() && m.role == "system") continue;
    if (m.role == "tool") {
      const std::string body = "<tool_response>\n" + m.content + "\n</tool_response>";
      if (i > 0 && messages[i - 1].role == "tool" && !out.empty()) {
        out.back().content += "\n" + body;
      } else {
        out.push_back({"user", body});
      }
      continue;
    }
    std::string content = m.content;
    for (const ToolCallText& c : m.tool_calls) {
      if (!content.empty()) content += "\n";
      content += std::string(kToolCallOpen) + "{\"name\": \"" + c.name + "\", \"arguments\": " + c.arguments + "}" +
                 std::string(kToolCallClose);
    }
    out.push_back({m.role, content});
  }
  return out;
}

Result<Grammar> ToolCallGrammar(const std::vector<ToolSpec>& tools, bool strict, bool or_text) {
  if (tools.empty()) return Status::InvalidArgument("no tools to call");
  rapidjson::Document schema;
  schema.SetObject();
  auto& a = schema.GetAllocator();
  rapidjson::Value any(rapidjson::kArrayType);
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec& t = tools[i];
    rapidjson::Document p;
    p.Parse(t.parameters.c_str());
    if (p.HasParseError()) return Status::InvalidArgument("tool '" + t.name + "': its parameters are not JSON");
    rapidjson::Value params;
    params.CopyFrom(p, a);
    RebaseRefs(params, "#/anyOf/" + std::to_string(i) + "/properties/arguments", a);
    rapidjson::Value name(rapidjson::kObjectType);
    name.AddMember("const", rapidjson::Value(t.name.c_str(), a), a);
    rapidjson::Value props(rapidjson::kObjectType);
    props.AddMember("name", name, a);
    props.AddMember("arguments", params, a);
    rapidjson::Value call(rapidjson::kObjectType);
    call.AddMember("type", "object", a);
    call.AddMember("properties", props, a);
    rapidjson::Value req(rapidjson::kArrayType);
    req.PushBack("name", a);
    req.PushBack("arguments", a);
    call.AddMember("required", req, a);
    any.PushBack(call, a);
  }
  schema.AddMember("anyOf", any, a);
  auto g = JsonSchemaToGrammar(Json(schema), {strict});
  if (!g.ok()) return Status::InvalidArgument("the tools' parameters: " + g.status().message());
  Grammar grammar = std::move(*g);
  const int object = grammar.root();
  GrammarSequence call = Literal(kToolCallOpen);
  call.push_back(GrammarSymbol::Rule(object));
  for (const GrammarSymbol& s : Literal(kToolCallClose)) call.push_back(s);
  const int top = grammar.NewRule("tool_answer");
  grammar.AddAlternative(top, call);
  GrammarSequence spaced = {GrammarSymbol::Byte(' ')};
  spaced.insert(spaced.end(), call.begin(), call.end());
  grammar.AddAlternative(top, spaced);
  if (or_text) {
    // Text that does not begin (after one optional space) with the opening marker.
    const int rest = grammar.NewRule("any_bytes");
    grammar.AddAlternative(rest, {GrammarSymbol::Range(0, 255), GrammarSymbol::Rule(rest)});
    grammar.AddAlternative(rest, {});
    const int text = grammar.NewRule("text");
    for (size_t k = 0; k < kToolCallOpen.size(); ++k) {
      GrammarSequence prefix = Literal(kToolCallOpen.substr(0, k));
      if (k > 0) grammar.AddAlternative(text, prefix);
      ByteSet other;
      other.set();
      other.reset(static_cast<uint8_t>(kToolCallOpen[k]));
      if (k == 0) other.reset(' ');
      prefix.push_back(GrammarSymbol::Bytes(other));
      prefix.push_back(GrammarSymbol::Rule(rest));
      grammar.AddAlternative(text, prefix);
    }
    grammar.AddAlternative(top, {});
    grammar.AddAlternative(top, {GrammarSymbol::Byte(' ')});
    grammar.AddAlternative(top, {GrammarSymbol::Rule(text)});
    grammar.AddAlternative(top, {GrammarSymbol::Byte(' '), GrammarSymbol::Rule(text)});
  }
  grammar.SetRoot(top);
  if (Status st = grammar.Finalize(); !st.ok()) return st;
  return grammar;
}

void ToolCallStream::SendArguments(size_t end, std::vector<Event>* out) {
  while (end > args_sent_ && end < buf_.size() && (static_cast<unsigned char>(buf_[end]) & 0xC0) == 0x80) --end;
  if (end <= args_sent_) return;
  out->push_back({Event::Kind::kArguments, buf_.substr(args_sent_, end - args_sent_)});
  args_sent_ = end;
}

std::vector<ToolCallStream::Event> ToolCallStream::Push(std::string_view text) {
  std::vector<Event> out;
  if (mode_ == Mode::kText) {
    if (!text.empty()) out.push_back({Event::Kind::kText, std::string(text)});
    return out;
  }
  buf_ += text;
  if (mode_ == Mode::kUndecided) {
    std::string name;
    const size_t start = ScanHeader(buf_, &name);
    if (start == std::string_view::npos) {
      mode_ = Mode::kText;
      out.push_back({Event::Kind::kText, std::move(buf_)});
      buf_.clear();
      return out;
    }
    if (start == 0) return out;
    mode_ = Mode::kCall;
    args_start_ = args_sent_ = start;
    out.push_back({Event::Kind::kCallStart, name});
  }
  const size_t tail = 1 + kToolCallClose.size();  // "}</tool_call>"
  if (buf_.size() > args_start_ + tail) SendArguments(buf_.size() - tail, &out);
  return out;
}

std::vector<ToolCallStream::Event> ToolCallStream::Finish(bool stopped, bool* called) {
  std::vector<Event> out;
  *called = false;
  if (mode_ == Mode::kUndecided && !buf_.empty()) out.push_back({Event::Kind::kText, buf_});
  if (mode_ != Mode::kCall) return out;
  std::string name, args;
  if (stopped && ParseToolCall(buf_, &name, &args)) {
    SendArguments(args_start_ + args.size(), &out);
    *called = true;
  } else {
    SendArguments(buf_.size(), &out);
  }
  return out;
}

size_t ToolCallArgumentsStart(std::string_view text, std::string* name) { return ScanHeader(text, name); }

bool ParseToolCall(std::string_view text, std::string* name, std::string* arguments) {
  const size_t start = ScanHeader(text, name);
  if (start == 0 || start == std::string_view::npos) return false;
  const std::string end = "}" + std::string(kToolCallClose);
  if (text.size() < start + end.size() + 1 || text.substr(text.size() - end.size()) != end) return false;
  *arguments = std::string(text.substr(start, text.size() - end.size() - start));
  return true;
}

}  // namespace inferloop::llm
