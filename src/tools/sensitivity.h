// Per-layer quantization sensitivity (`inferloop compare --sensitivity`, and the order in which
// `inferloop quantize --max-accuracy-drop` keeps layers FP32): for every quantizable layer
// (qdq_writer.h QuantizableLayers) the model is quantized with only that layer in INT8 and scored
// on the eval data (quant_eval.h); layers are ranked by the metric lost, ties by the lower cosine
// of the output to FP32.
#pragma once

#include <string>
#include <vector>

#include "tools/qdq_writer.h"
#include "tools/quant_eval.h"

namespace inferloop {

struct LayerSensitivity {
  std::string layer;      // node id
  std::string op_type;
  double metric = 0;      // with only this layer quantized
  double loss = 0;        // FP32 metric - metric (percentage points)
  double cosine = 1;      // first output vs FP32
};

// Most sensitive first. `base.exclude` layers are skipped. `progress`: a progress bar.
Result<std::vector<LayerSensitivity>> MeasureSensitivity(const Model& fp32, const RangeLookup& ranges,
                                                         const QdqOptions& base, const Evaluator& eval,
                                                         bool progress = true);

std::string FormatSensitivity(const std::vector<LayerSensitivity>& s, const Evaluator& eval);
std::string SensitivityToJson(const std::vector<LayerSensitivity>& s, const Evaluator& eval);

}  // namespace inferloop
