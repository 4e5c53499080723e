// The Jinja lexer: template text to tokens, with jinja2's whitespace rules as transformers
// configures them (trim_blocks, lstrip_blocks, `-`/`+` modifiers on tags, one trailing newline
// of the template dropped, \r\n and \r read as \n).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::llm::jinja {

struct Token {
  enum class Type {
    kText,        // literal template text (already whitespace-trimmed)
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,      // text: the decoded value
    kInt,
    kFloat,
    kOp,          // text: the operator ("+", "==", "(", ...)
    kEnd,         // end of the template
  };
  Type type = Type::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// The tokens of `source`, ending with kEnd. InvalidArgument naming the line for an unclosed tag,
// comment or string, or a character that cannot start a token.
Result<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace inferloop::llm::jinja
