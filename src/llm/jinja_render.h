// The Jinja renderer: runs a parsed template (jinja_ast.h) over a context with jinja2's
// semantics (default Undefined, loop scoping, namespace(), macros, loop controls) and the
// globals transformers gives chat templates: raise_exception(msg), strftime_now(fmt), plus
// jinja2's range, dict and namespace.
#pragma once

#include <cstdint>
#include <string>

#include "inferloop/status.h"
#include "llm/jinja_ast.h"

namespace inferloop::llm::jinja {

// What one render may use (a template comes from a model file: it may be hostile).
struct RenderLimits {
  int64_t max_output_bytes = 16 << 20;
  int64_t max_steps = 5'000'000;    // expressions evaluated and statements run
  int max_call_depth = 64;         // nested macro calls
};

// The text `body` renders to with `context` (a dict; its keys are the template's variables).
// Errors: FailedPrecondition with exactly the message a raise_exception(msg) call gave;
// InvalidArgument "line N: ..." for a template error (an undefined value used, a type error,
// an unknown filter); ResourceExhausted when a limit is passed.
Result<std::string> Render(const Body& body, const Value& context, const RenderLimits& limits);

}  // namespace inferloop::llm::jinja
