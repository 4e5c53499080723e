// The classification backend (`backend: "classification"`): scores in, Triton classification
// results out (imaging/classification.h: "<score>:<index>[:<label>]", highest first). One input,
// TYPE_FP32 dims [K] (K classes; with batching each row is classified on its own); one output,
// TYPE_STRING dims [class_count], whose label_filename (Triton's field, a file in the model's
// folder, one label per line) names the classes.
//
// Parameters: class_count (default 1; at most K), softmax ("true": the scores are logits and are
// turned into probabilities first; default "false").
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeClassificationBackend();

}  // namespace inferloop::backends
