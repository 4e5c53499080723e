#include "llm/jinja.h"

#include "base/status_macros.h"
#include "llm/jinja_parser.h"

namespace inferloop::llm::jinja {

Result<std::shared_ptr<const Template>> Template::Parse(std::string_view text) {
  IL_ASSIGN_OR_RETURN(Body body, jinja::Parse(text));
  auto t = std::make_shared<Template>();
  t->body_ = std::move(body);
  return std::shared_ptr<const Template>(std::move(t));
}

Result<std::string> Template::Render(const Value& context, const RenderLimits& limits) const {
  return jinja::Render(body_, context, limits);
}

Result<std::string> RenderTemplate(std::string_view template_text, const Value& context) {
  IL_ASSIGN_OR_RETURN(std::shared_ptr<const Template> t, Template::Parse(template_text));
  return t->Render(context);
}

}  // namespace inferloop::llm::jinja
