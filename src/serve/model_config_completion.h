// Completing a model's configuration from the model itself, and checking a given configuration
// against it.
//
// The rule (also in docs/MODEL_REPOSITORY.md):
// - Inputs and outputs the configuration leaves out are taken from the ONNX model, in the
//   model's order, after those the configuration lists. A listed one whose data_type is unset
//   gets the model's; one whose dims are empty gets the model's (fixed sizes as they are,
//   symbolic or unknown sizes as -1).
// - Batching: with max_batch_size > 0, dims exclude the batch dimension, and every model input
//   and output must have a first dimension that is not fixed. When the configuration gives
//   max_batch_size 0 and lists no inputs and no outputs (no config.pbtxt, or one without them),
//   and every model input and output has rank >= 1 with a first dimension that is symbolic or
//   unknown, max_batch_size becomes kDefaultMaxBatchSize. A configuration that lists inputs or
//   outputs with max_batch_size 0 is taken at its word: no batching, dims are the full shapes.
// - Checks against the model: every listed input/output exists in the model; its data_type
//   equals the model's; its dims (or reshape, when given) have the model's rank (less the batch
//   dimension) and equal every size the model fixes (a -1 where the model fixes a size is an
//   error; a fixed size where the model's is symbolic narrows it and is allowed).
// The result passes ValidateCompleteModelConfig. Errors are INVALID_ARGUMENT (UNIMPLEMENTED for
// model inputs/outputs the configuration cannot describe: sequences, maps, complex or float8
// types) and name the input or output.
#pragma once

#include "inferloop/session.h"
#include "serve/model_config.h"

namespace inferloop::serve {

// The max_batch_size chosen for a model that can batch and whose configuration does not say.
inline constexpr int kDefaultMaxBatchSize = 8;

Result<ModelConfig> CompleteConfigFromModel(const ModelConfig& partial_or_empty, const Session& session);

}  // namespace inferloop::serve
