// Model warmup: running a model's warmup samples before it takes traffic, so the first requests
// do not pay for planning, kernel selection and tuning.
//
// The samples are the config's model_warmup entries (Triton's format: per input zero_data,
// random_data or input_data_file, a file of raw bytes in <model_dir>/warmup/; each sample runs
// `count` times, at least once). A config without any gets one zero sample per batch bucket
// (batch_assembly.h; batch 1 for a model that does not batch), but only when every input's
// size is known. Inputs the config reshapes are fed in the model's (reshaped) shape.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "serve/model_config.h"

namespace inferloop::serve {

// Runs the warmup samples of the completed `config` on `session` (outputs `output_names`).
// Returns how long the first sample's last run took (nullopt when nothing ran), to seed the
// version's execution-time average. An error names the failing sample or input.
Result<std::optional<std::chrono::nanoseconds>> RunModelWarmup(const Session& session, const ModelConfig& config,
                                                               const std::string& model_dir,
                                                               const std::vector<int64_t>& buckets,
                                                               const std::vector<std::string>& output_names);

}  // namespace inferloop::serve
