// The report backend (`backend: "report"`): the last step of a solution pipeline, turning the
// numbers earlier steps produced into a JSON document (one TYPE_STRING output, dims [1]; with
// batching one document per row).
//
// Inputs: any numeric tensors (their values per row go under "values", by input name; an
// optional input that is absent, because the step producing it was skipped, is listed under
// "skipped"), plus optionally one TYPE_STRING input named by parameter `trace_input`, mapped to
// the ensemble's "inferloop.trace", whose steps (model, version, outcome, ms) go under "stages"
// (a trace that is not such a JSON document is InvalidArgument).
// The verdict (parameters): verdict_tensor (an input), verdict_index (the element of its last
// axis; default 0), verdict_threshold, verdict_labels ("below,at_or_above"; default
// "negative,positive"), verdict_when_absent (the verdict when verdict_tensor is absent; default:
// the first label). Document: {"verdict", "verdict_rule", "values": {...}, "skipped": [...],
// "stages": [...]}.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeReportBackend();

}  // namespace inferloop::backends
