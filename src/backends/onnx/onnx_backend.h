// The onnx backend: ONNX models (DIR/<model>/<version>/model.onnx) run by the inferloop runtime,
// each version a serve::ServedModelVersion (dynamic batcher, instances, warmup, statistics).
// Serves configs whose platform is empty or "onnxruntime_onnx" and whose backend is empty,
// "onnxruntime" or "inferloop" (what Triton users write for ONNX models).
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeOnnxBackend();

}  // namespace inferloop::backends
