// Precision variants of an ONNX model, prepared when a version loads (docs/ADAPTIVE.md,
// "Variants"): for each precision the model's adaptive config allows (fp32, bf16, int8), a
// session of the same model, warmed, with its accuracy loss measured against fp32 on the
// evaluation set in the model's folder, its memory and its latency per batch size.
//
// - fp32 is the version's own session (variant 0) and the accuracy reference.
// - bf16: a session at Precision::kBf16; skipped where the CPU lacks AVX512_BF16 (it would run
//   as fp16 weights with fp32 compute: no faster).
// - int8: <version>/model.qdq.onnx when shipped beside model.onnx, else quantized at load from
//   <model>/<calibration>/ (the quantizer's static QDQ path: per-channel weights, percentile
//   99.99 activation ranges); skipped when neither exists.
// - A variant whose accuracy drop (percentage points of the metric of tools/quant_eval.h: top-1
//   accuracy with labels.npy, else top-1 agreement with fp32) exceeds max_accuracy_drop, or that
//   cannot be measured (no <model>/<evaluation>/ set), is skipped: the report says why. Skipping
//   is not a load error: the model serves with the variants that qualified.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "serve/adaptive_config.h"
#include "serve/adaptive_control.h"
#include "serve/served_model_version.h"

namespace inferloop::control {

struct VariantPreparation {
  serve::AdaptiveObjectives objectives;
  std::string model_path;   // <version>/model.onnx
  std::string model_dir;    // <repo>/<model>
  std::string version_dir;  // <repo>/<model>/<version>
  SessionOptions session;   // the server's options (threads, optimisation level)
  std::function<void(const std::string&)> progress;  // may be empty
};

// Adds every usable variant to `version` (ServedModelVersion::AddVariant, in the order of
// objectives.variants) and returns the report of every candidate, variant 0 first; usable
// reports appear in the version's variant order. Errors only for what breaks the version itself
// (its own session failing on the evaluation data); a variant that cannot be made is a report
// with usable = false and the reason.
Result<std::vector<serve::VariantReport>> PreparePrecisionVariants(serve::ServedModelVersion& version,
                                                                   const VariantPreparation& p);

// Median milliseconds of one run per batch size (1, 2, 4, ... up to max_batch_size, and
// max_batch_size itself; just 1 when the model does not batch), on inputs made from `sample`'s
// first row (or zeros of the config's dims when empty).
Result<std::vector<std::pair<int, double>>> MeasureLatencyPerBatch(Session& session, const serve::ModelConfig& config,
                                                                   const std::vector<NamedValue>& sample);

}  // namespace inferloop::control
