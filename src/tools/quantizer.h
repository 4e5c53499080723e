// `inferloop quantize`: post-training INT8 quantization of an ONNX model (docs/QUANTIZATION.md).
//
// Static (default): calibrate the FP32 model over --calibration data (or reuse saved statistics),
// pick ranges with the chosen calibrator, write a QDQ model (qdq_writer.h). Dynamic (--dynamic):
// weight-only MatMul/Gemm quantization in ONNX Runtime's dynamic format (dynamic_quant.h). With
// --max-accuracy-drop, layers are kept FP32 in order of sensitivity until the metric on --eval is
// within the bound. Finally both models are timed on this CPU.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tools/calibration_stats.h"
#include "tools/qdq_writer.h"

namespace inferloop {

struct QuantizeOptions {
  std::string model, output;
  std::string calibration;  // data folder (static: required)
  std::string eval;         // data folder for the metric (required with max_accuracy_drop)
  std::string stats;        // calibration statistics file: reused when it matches, else written
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.99;
  bool per_channel = false;
  bool reduce_range = false;  // 7-bit weights (qdq_writer.h kReducedWeightLevel)
  bool dynamic = false;
  bool quantize_activation_matmul = false;
  std::vector<std::string> exclude;
  double max_accuracy_drop = -1;  // percentage points; < 0: off
  int timing_runs = 30;           // runs of each model for the timing; 0 = no timing
  bool progress = true;
};

// Ranges of a statistics set for one method, computed on first use.
class RangeCache {
 public:
  RangeCache(const CalibrationStats& stats, CalibrationMethod m, double percentile)
      : stats_(stats), method_(m), percentile_(percentile) {}
  std::optional<QuantRange> Get(const std::string& tensor);
  RangeLookup Lookup() { return [this](const std::string& t) { return Get(t); }; }

 private:
  const CalibrationStats& stats_;
  CalibrationMethod method_;
  double percentile_;
  std::map<std::string, QuantRange> cache_;
};

// Statistics for `model_path` over `data`: read from `stats_path` when it exists and was made from
// the same model and data (says so on `log`), else collected by running the model (and saved to
// `stats_path` when given). A stats file that cannot be read is an error.
Result<CalibrationStats> ObtainCalibrationStats(const std::string& model_path, const QuantDataSet& data,
                                                const std::string& stats_path, bool progress, std::ostream& log);


// `inferloop compare --sensitivity MODEL --calibration DATA --eval DATA`: calibrates (or reuses
// `stats`), ranks the quantizable layers by the metric lost when only that layer is INT8
// (sensitivity.h) and prints the table; writes it as JSON to `json` when set.
struct SensitivityCommandOptions {
  std::string model, calibration, eval, stats, json;
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.99;
  bool per_channel = false;
  bool reduce_range = false;  // 7-bit weights (qdq_writer.h kReducedWeightLevel)
  bool quantize_activation_matmul = false;
  bool progress = true;
};
// `json_out`, when given, receives the JSON too (whether or not opts.json is set).
Status RunSensitivityCommand(const SensitivityCommandOptions& opts, std::ostream& out, std::string* json_out = nullptr);

// Median milliseconds of `runs` runs (after 3 warm-up runs) of each model file on `sample`, both
// inferloop sessions at optimization level 2.
struct ModelTiming {
  double fp32_ms = 0, int8_ms = 0;
};
Result<ModelTiming> TimeModels(const std::string& fp32_path, const std::string& int8_path, const Sample& sample, int runs);

// What RunQuantize did, as figures (the Python module returns them; the CLI prints the text).
struct QuantizeReport {
  int quantized_nodes = 0;             // static: nodes between QDQ pairs; dynamic: MatMul/Gemm with int8 weights
  int qdq_tensors = 0;                 // static: activation tensors quantized
  std::vector<std::string> kept_fp32;  // layers mixed precision kept FP32 (besides `exclude`), in the order kept
  std::vector<std::string> warnings;   // also written to `err`
  // With `eval`: the metric (percent) of both models on it, and the written model's output
  // cosine and top-1 agreement (percent) to FP32's.
  bool evaluated = false;
  int64_t eval_samples = 0;
  std::string metric_name;             // "top-1 accuracy" or "top-1 agreement with FP32"
  double fp32_metric = 0, int8_metric = 0, cosine = 0, agreement = 0;
  bool within_bound = true;            // with max_accuracy_drop: the drop is within it
  uint64_t model_bytes = 0, output_bytes = 0;
  bool timed = false;                  // timing_runs > 0 and calibration data to time with
  ModelTiming timing;
};

// Runs the whole command; reports on `out`, warnings on `err`, and the figures in `*report` when
// given. Errors: bad options, unreadable model or data, unknown --exclude names, a model that
// fails to run.
Status RunQuantize(const QuantizeOptions& opts, std::ostream& out, std::ostream& err, QuantizeReport* report = nullptr);

}  // namespace inferloop
