// Precision debugging: run two models on the same inputs and compare every intermediate tensor
// they share by name (`inferloop compare`, docs/QUANTIZATION.md).
//
// Intermediates are captured without touching the runtime's run path: the tool loads each model,
// exposes every main-graph node output as an extra graph output and builds the session with
// optimization level 0 (so names stay those of the file). Normal sessions pay nothing for it.
//
// The parts: input data (sample_data.h), statistics (tensor_stats.h), the report and its text
// and JSON forms (compare_report.h); this file loads, runs and compares.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"
#include "inferloop/tensor.h"
#include "tools/compare_report.h"
#include "tools/sample_data.h"
#include "tools/tensor_stats.h"

namespace inferloop {

// A model loaded for capturing: every main-graph node output is returned by Run.
class CapturingModel {
 public:
  // Loads `path` at optimization level 0. `only`: capture just these names (empty = all); the
  // graph outputs are always captured.
  static Result<std::unique_ptr<CapturingModel>> Load(const std::string& path,
                                                       const std::vector<std::string>& only = {});
  // Captured tensor names in topological order (the file's node order where that is one),
  // graph outputs included.
  const std::vector<std::string>& names() const { return names_; }
  bool is_graph_output(const std::string& name) const;
  const std::vector<ValueInfo>& inputs() const { return session_->inputs(); }
  // Runs with the inputs of `sample` this model declares (others are ignored); a required input
  // the sample lacks is an error. Returns tensors in names() order (non-tensor values skipped).
  Result<std::vector<std::pair<std::string, Tensor>>> Run(const Sample& sample) const;

 private:
  std::unique_ptr<Session> session_;
  std::vector<std::string> names_;
  std::vector<std::string> graph_outputs_;
};

struct CompareOptions {
  double cosine_threshold = 0.99;   // a tensor with cosine below this diverges
  std::string calibration_dir;      // optional: DATA layout; input statistics compared to it
  std::vector<std::string> tensors; // capture only these (empty = every node output)
  double calibration_sigmas = 3.0;  // channel mean further than this many calibration std: flagged
};

// Runs both models on every sample of `data_dir` and compares. Errors: unloadable models,
// unreadable data, inputs the data lacks, shapes the models reject, no tensor in common.
Result<CompareReport> CompareModels(const std::string& model_a, const std::string& model_b,
                                    const std::string& data_dir, const CompareOptions& opts = {});

}  // namespace inferloop
