#include "llm/jinja_lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "base/c_locale_number.h"
#include "llm/jinja_value.h"

namespace inferloop::llm::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string Normalize(std::string_view src) {
  std::string s;
  s.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      s += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      s += src[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();  // keep_trailing_newline=False
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding of a string literal's body.
std::string DecodeEscapes(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    switch (c) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': case 'u': case 'U': {
        const size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        bool ok = i + n < body.size();
        for (size_t k = 1; ok && k <= n; ++k) {
          const int h = HexValue(body[i + k]);
          if (h < 0) ok = false;
          else cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (!ok || cp > 0x10FFFF) {  // Python refuses these; keep the text as written
          out += '\\';
          out += c;
        } else {
          AppendUtf8(out, cp);
          i += n;
        }
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = static_cast<uint32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k) {
            cp = cp * 8 + static_cast<uint32_t>(body[++i] - '0');
          }
          AppendUtf8(out, cp);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string s) : s_(std::move(s)) {}

  Result<std::vector<Token>> Run() {
    bool line_starting = true;
    size_t pos = 0;
    while (pos < s_.size()) {
      size_t start = pos;
      while (true) {
        start = s_.find('{', start);
        if (start == std::string::npos || start + 1 >= s_.size()) {
          start = std::string::npos;
          break;
        }
        const char k = s_[start + 1];
        if (k == '{' || k == '%' || k == '#') break;
        ++start;
      }
      if (start == std::string::npos) {
        Text(s_.substr(pos));
        break;
      }
      const char kind = s_[start + 1];
      const char mod = start + 2 < s_.size() ? s_[start + 2] : '\0';
      std::string text = s_.substr(pos, start - pos);
      if (mod == '-') {
        size_t e = text.size();
        while (e > 0 && IsSpace(text[e - 1])) --e;
        text.resize(e);
      } else if (mod != '+' && kind != '{') {
        const size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (l_pos > 0 || line_starting) {
          if (text.find_first_not_of(" \t", l_pos) == std::string::npos) text.resize(l_pos);
        }
      }
      Text(text);
      line_ = LineAt(start);
      size_t p = start + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      Result<size_t> end = kind == '#' ? Comment(p) : kind == '{' ? Tag(p, true) : Tag(p, false);
      if (!end.ok()) return end.status();
      pos = *end;
      line_starting = pos > 0 && s_[pos - 1] == '\n';
    }
    tokens_.push_back({Token::Type::kEnd, "", 0, 0, LineAt(s_.size())});
    return std::move(tokens_);
  }

 private:
  int LineAt(size_t pos) {
    while (line_pos_ < pos && line_pos_ < s_.size()) {
      if (s_[line_pos_] == '\n') ++line_count_;
      ++line_pos_;
    }
    return line_count_;
  }

  void Text(const std::string& t) {
    if (!t.empty()) tokens_.push_back({Token::Type::kText, t, 0, 0, line_});
  }

  Status Error(const std::string& m) { return Status::InvalidArgument("line " + std::to_string(line_) + ": " + m); }

  // After a closing "-X}" or "X}" at `p` (just past it): the position the next text starts at.
  size_t AfterClose(size_t p, bool minus, bool plus, bool block) {
    if (minus) {
      while (p < s_.size() && IsSpace(s_[p])) ++p;
    } else if (block && !plus && p < s_.size() && s_[p] == '\n') {
      ++p;  // trim_blocks
    }
    return p;
  }

  Result<size_t> Comment(size_t p) {
    const size_t e = s_.find("#}", p);
    if (e == std::string::npos) return Error("missing end of comment tag");
    const bool minus = e > p && s_[e - 1] == '-';
    return AfterClose(e + 2, minus, false, true);
  }

  Result<size_t> Tag(size_t p, bool var) {
    tokens_.push_back({var ? Token::Type::kVarBegin : Token::Type::kBlockBegin, "", 0, 0, line_});
    const size_t first = tokens_.size();
    int depth = 0;
    while (true) {
      while (p < s_.size() && IsSpace(s_[p])) ++p;
      line_ = LineAt(p);
      if (p >= s_.size()) return Error(var ? "unexpected end of template: missing '}}'" : "unexpected end of template: missing '%}'");
      const char end_char = var ? '}' : '%';
      if (depth == 0) {
        size_t q = p;
        const bool minus = s_[q] == '-', plus = !var && s_[q] == '+';
        if (minus || plus) ++q;
        if (q + 1 < s_.size() && s_[q] == end_char && s_[q + 1] == '}') {
          tokens_.push_back({var ? Token::Type::kVarEnd : Token::Type::kBlockEnd, "", 0, 0, line_});
          const size_t after = AfterClose(q + 2, minus, plus, !var);
          if (!var && tokens_.size() == first + 2 && tokens_[first].type == Token::Type::kName && tokens_[first].text == "raw") {
            return Raw(after);
          }
          return after;
        }
      }
      Result<size_t> next = OneToken(p, &depth);
      if (!next.ok()) return next.status();
      p = *next;
    }
  }

  // {% raw %} ... {% endraw %}: the text between, as it is.
  Result<size_t> Raw(size_t p) {
    tokens_.resize(tokens_.size() - 3);  // drop {% raw %}
    size_t search = p;
    while (true) {
      const size_t b = s_.find("{%", search);
      if (b == std::string::npos) return Error("missing '{% endraw %}'");
      size_t q = b + 2;
      const bool minus_open = q < s_.size() && s_[q] == '-';
      if (minus_open || (q < s_.size() && s_[q] == '+')) ++q;
      while (q < s_.size() && IsSpace(s_[q])) ++q;
      if (s_.compare(q, 6, "endraw") != 0) {
        search = b + 2;
        continue;
      }
      q += 6;
      while (q < s_.size() && IsSpace(s_[q])) ++q;
      const bool minus_close = q < s_.size() && s_[q] == '-';
      if (minus_close) ++q;
      if (s_.compare(q, 2, "%}") != 0) {
        search = b + 2;
        continue;
      }
      std::string text = s_.substr(p, b - p);
      if (minus_open) {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      }
      Text(text);
      return AfterClose(q + 2, minus_close, false, true);
    }
  }

  Result<size_t> OneToken(size_t p, int* depth) {
    const char c = s_[p];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = p;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      tokens_.push_back({Token::Type::kName, s_.substr(p, e - p), 0, 0, line_});
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return Number(p);
    if (c == '\'' || c == '"') {
      size_t e = p + 1;
      while (e < s_.size() && s_[e] != c) e += s_[e] == '\\' ? 2 : 1;
      if (e >= s_.size()) return Error("unterminated string");
      tokens_.push_back({Token::Type::kString, DecodeEscapes(std::string_view(s_).substr(p + 1, e - p - 1)), 0, 0, line_});
      return e + 1;
    }
    static const char* kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwo) {
      if (s_.compare(p, 2, op) == 0) {
        tokens_.push_back({Token::Type::kOp, op, 0, 0, line_});
        return p + 2;
      }
    }
    if (std::string_view("+-*/%~()[]{},.:|=<>;").find(c) != std::string_view::npos) {
      if (c == '(' || c == '[' || c == '{') ++*depth;
      if ((c == ')' || c == ']' || c == '}') && *depth > 0) --*depth;
      tokens_.push_back({Token::Type::kOp, std::string(1, c), 0, 0, line_});
      return p + 1;
    }
    return Error(std::string("unexpected character '") + c + "'");
  }

  Result<size_t> Number(size_t p) {
    auto digits = [&](size_t q) {
      while (q < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[q])) || (s_[q] == '_' && q + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q + 1]))))) ++q;
      return q;
    };
    size_t e = digits(p);
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q]))) {
        e = digits(q);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = p; i < e; ++i) {
      if (s_[i] != '_') text += s_[i];
    }
    Token t{is_float ? Token::Type::kFloat : Token::Type::kInt, text, 0, 0, line_};
    if (is_float) {
      t.float_value = StrtodC(text.c_str(), nullptr);
    } else {
      errno = 0;
      t.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) return Error("integer literal " + text + " is too large");
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  std::string s_;
  std::vector<Token> tokens_;
  int line_ = 1;
  size_t line_pos_ = 0;
  int line_count_ = 1;
};

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view source) { return Lexer(Normalize(source)).Run(); }

}  // namespace inferloop::llm::jinja
