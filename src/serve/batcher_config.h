// The DynamicBatcher's options from a model's completed config: dynamic_batching (max batch
// size, preferred sizes, queue delay, priority levels, queue policies per level) and one worker
// per instance of the instance groups (at least one). Every kind of model that queues requests
// (ONNX models, processing steps) schedules with the same config fields this way.
#pragma once

#include <cstdint>
#include <string>

#include "serve/dynamic_batcher.h"
#include "serve/model_config.h"

namespace inferloop::serve {

// The config must be complete and valid (ValidateCompleteModelConfig).
BatcherOptions BatcherOptionsOf(const std::string& model_name, int64_t version, const ModelConfig& c);

}  // namespace inferloop::serve
