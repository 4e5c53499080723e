// The Jinja parser: tokens (jinja_lexer.h) to a statement tree (jinja_ast.h). Supports what chat
// templates use: {{ }}, if/elif/else, for (else, `if` filter, tuple targets), set (also
// `set ns.attr` and block set), macro, break/continue, generation, raw; expressions with
// jinja2's precedence (filters and tests bind tighter than arithmetic).
#pragma once

#include <string_view>

#include "inferloop/status.h"
#include "llm/jinja_ast.h"

namespace inferloop::llm::jinja {

// InvalidArgument naming the line for a syntax error, an unknown or unclosed tag, or nesting
// deeper than a fixed limit (kMaxParseDepth).
inline constexpr int kMaxParseDepth = 200;
Result<Body> Parse(std::string_view source);

}  // namespace inferloop::llm::jinja
