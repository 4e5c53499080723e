// Calibration statistics of a model over a data set: per tensor min/max and |x| histogram
// (calibration.h), collected by running the FP32 model with every intermediate captured, and
// saved as JSON (`inferloop quantize --stats FILE`) so that trying another method or exclude list
// reuses them instead of recalibrating.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tools/calibration.h"
#include "tools/quant_data.h"

namespace inferloop {

struct CalibrationStats {
  std::string model_hash;   // FileHash of the model the statistics belong to
  std::string data_hash;    // QuantDataSet::fingerprint, hex
  int64_t rows = 0;         // samples calibrated on
  std::map<std::string, TensorHistogram> tensors;  // graph inputs and node outputs (float only)
};

// Runs the FP32 model at `model_path` (optimization level 0, every node output captured) over
// every chunk of `data` and accumulates each float tensor. `progress`: show a progress bar.
Result<CalibrationStats> CollectCalibrationStats(const std::string& model_path, const QuantDataSet& data,
                                                 bool progress = true);

// JSON: {"format": "inferloop-calibration-stats", "version": 1, "model_hash", "data_hash", "rows",
// "tensors": {name: {"count", "min", "max", "range", "histogram": [kHistogramBins counts]}}}.
std::string CalibrationStatsToJson(const CalibrationStats& s);
Result<CalibrationStats> CalibrationStatsFromJson(const std::string& json);
Status SaveCalibrationStats(const CalibrationStats& s, const std::string& path);
Result<CalibrationStats> LoadCalibrationStats(const std::string& path);

std::string HashHex(uint64_t h);

}  // namespace inferloop
