// The accuracy metric of the quantizer's mixed precision and of `compare --sensitivity`.
//
// A model is run (inferloop Session, optimization level 2) over every chunk of an eval data set,
// and its first output is read as scores: rows = every dimension but the last, prediction =
// argmax over the last axis. With labels (labels.npy) the metric is top-1 accuracy in percent;
// without, top-1 agreement with the FP32 model's predictions in percent. The cosine similarity
// of the whole first output to the FP32 model's is reported as well.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "tools/quant_data.h"

namespace inferloop {

struct EvalMetric {
  double metric = 0;     // percent: accuracy (labels) or agreement with FP32
  double cosine = 1;     // first output vs FP32's
  double agreement = 100;  // top-1 agreement with FP32, percent
};

class Evaluator {
 public:
  // Runs the FP32 model over `data` to keep its outputs as the reference.
  static Result<Evaluator> Create(const Model& fp32, QuantDataSet data);
  static Result<Evaluator> Create(Session& fp32, QuantDataSet data);
  bool has_labels() const { return !data_.labels.empty(); }
  const char* metric_name() const { return has_labels() ? "top-1 accuracy" : "top-1 agreement with FP32"; }
  // The FP32 model's metric (100 for agreement).
  const EvalMetric& fp32() const { return fp32_metric_; }
  // Runs `model` (a copy is compiled) over the data and scores it.
  Result<EvalMetric> Evaluate(const Model& model) const;
  // Scores a session already made (any precision, e.g. the serving variants of the adaptive loop).
  Result<EvalMetric> EvaluateSession(Session& session) const;
  int64_t rows() const { return rows_; }

 private:
  static Result<Evaluator> FromReference(std::vector<Tensor> reference, QuantDataSet data);
  Result<EvalMetric> Score(const std::vector<Tensor>& outs) const;

  QuantDataSet data_;
  std::vector<Tensor> reference_;  // FP32 first output per chunk
  std::vector<int64_t> reference_argmax_;
  EvalMetric fp32_metric_;
  int64_t rows_ = 0;
};

// The first output of `model` (or of `session`) for each chunk of `data`.
Result<std::vector<Tensor>> RunFirstOutput(const Model& model, const QuantDataSet& data);
Result<std::vector<Tensor>> RunFirstOutput(Session& session, const QuantDataSet& data);

}  // namespace inferloop
