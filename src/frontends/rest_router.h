// The REST port's router: which handler answers a request. /v1/... (OpenAiHandler::Owns) goes
// to the OpenAI-compatible API when the server has one; everything else to the KServe v2 REST
// handler (rest_handler.h), which answers 404 for paths it does not know.
#pragma once

#include "frontends/http_server.h"
#include "frontends/openai_handler.h"
#include "frontends/rest_handler.h"

namespace inferloop::frontends {

// An HttpHandler for the REST port. `rest` and `openai` (may be null: no /v1 API) must outlive
// the server using it.
HttpHandler RestRouter(RestHandler& rest, OpenAiHandler* openai);

}  // namespace inferloop::frontends
