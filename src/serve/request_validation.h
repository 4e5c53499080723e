// Request validation: checking an inference request against a loaded model's completed
// configuration before it is queued, and placing it in the DynamicBatcher's terms.
//
// ValidateRequest checks that every input the request names is one of the model's, that every
// non-optional input is present, that each input's datatype and shape match the config (dims
// exclude the batch dimension when max_batch_size > 0; -1 matches any size; the batch size must
// be in 1..max_batch_size), that the inputs agree on their batch size, and that requested
// outputs exist. It then fills the request's batch rows and batch key (which optional inputs are
// present is part of the key), and its "priority" and "timeout" parameters (unsigned integers;
// priority in 0..max(priority_levels, 1)). Every error is INVALID_ARGUMENT naming the model and
// the input, output or parameter.
#pragma once

#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/dynamic_batcher.h"
#include "serve/infer_request.h"
#include "serve/model_config.h"

namespace inferloop::serve {

// `input_names` / `output_names`: the config's inputs and outputs, in config order.
// On success sets p.rows, p.batch_key, p.priority and p.timeout (when given).
Status ValidateRequest(const InferRequest& request, const std::string& model_name, const ModelConfig& config,
                       const std::vector<std::string>& input_names, const std::vector<std::string>& output_names,
                       PendingRequest& p);

}  // namespace inferloop::serve
