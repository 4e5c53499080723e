// A Jinja template engine for chat templates (the tokenizer.chat_template of GGUF files), made
// to render exactly as Hugging Face transformers renders them with jinja2: the environment is
// jinja2's ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols)
// with transformers' globals raise_exception(msg) and strftime_now(fmt) and its tojson filter
// (json.dumps, ensure_ascii=False). It supports the subset of Jinja chat templates use (see
// jinja_parser.h); a template outside it fails to parse with a clear error.
//
// Parse once, render many: a Template is immutable and safe to render from several threads.
// Rendering is bounded (RenderLimits: output size, steps, macro depth), so a hostile template
// cannot hang or exhaust memory.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "inferloop/status.h"
#include "llm/jinja_ast.h"
#include "llm/jinja_render.h"
#include "llm/jinja_value.h"

namespace inferloop::llm::jinja {

class Template {
 public:
  // InvalidArgument "line N: ..." for a syntax error or an unsupported construct.
  static Result<std::shared_ptr<const Template>> Parse(std::string_view text);

  // The text for `context` (a dict of the template's variables). Errors as jinja_render.h's
  // Render: FailedPrecondition carrying exactly a raise_exception message, InvalidArgument
  // "line N: ..." for a template error, ResourceExhausted for a limit.
  Result<std::string> Render(const Value& context, const RenderLimits& limits = {}) const;

 private:
  Body body_;
};

// Parse and render in one call.
Result<std::string> RenderTemplate(std::string_view template_text, const Value& context);

}  // namespace inferloop::llm::jinja
