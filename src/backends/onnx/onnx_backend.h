// The onnx backend: ONNX models (DIR/<model>/<version>/model.onnx) run by the inferloop runtime,
// each version a serve::ServedModelVersion (dynamic batcher, instances, warmup, statistics).
// Serves configs whose platform is empty or "onnxruntime_onnx" and whose backend is empty,
// "onnxruntime" or "inferloop" (what Triton users write for ONNX models).
#pragma once

#include <memory>

#include "control/adaptive_loop.h"
#include "serve/model_backend.h"

namespace inferloop::backends {

// `adaptive`: the server's adaptive loop; versions whose config.pbtxt has an `adaptive { ... }`
// block get their precision variants and controller from it (docs/ADAPTIVE.md). May be null:
// then such a block is served as if absent (except its checks).
std::shared_ptr<serve::ModelBackend> MakeOnnxBackend(control::AdaptiveLoop* adaptive = nullptr);

}  // namespace inferloop::backends
