#include "frontends/rest_router.h"

#include <utility>

namespace inferloop::frontends {

HttpHandler RestRouter(RestHandler& rest, OpenAiHandler* openai) {
  return [&rest, openai](HttpRequest request, HttpResponder respond) {
    if (openai != nullptr && OpenAiHandler::Owns(request.target)) {
      return openai->Handle(std::move(request), std::move(respond));
    }
    rest.Handle(std::move(request), std::move(respond));
  };
}

}  // namespace inferloop::frontends
