// Reading an ensemble's inferloop.trace document (backends/ensemble/ensemble_plan.h) in the
// report steps that map it to an input: the one parser, so every report checks it the same way.
#pragma once

#include <string>

#include "inferloop/status.h"

namespace inferloop::backends {

// The steps of a trace document (a JSON object with a "steps" array, or that array itself),
// serialised again as a JSON array: what a report puts under "stages". InvalidArgument naming
// `input` when the text is not JSON or holds no steps array (a client may send anything there).
Result<std::string> TraceStepsJson(const std::string& trace, const std::string& input);

}  // namespace inferloop::backends
