// Internal session helpers shared by the runtime and tools (not part of the public API).
#pragma once

#include <memory>

#include "graph/graph.h"
#include "inferloop/session.h"

namespace inferloop {

// Builds a session from an already-loaded (possibly rewritten) model, as CreateFromFile does
// after loading; create_timings().load_ms is 0.
Result<std::unique_ptr<Session>> CreateSessionFromModel(Model model, const SessionOptions& opts);

}  // namespace inferloop
