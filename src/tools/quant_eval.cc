#include "tools/quant_eval.h"

#include <algorithm>
#include <cmath>

#include "base/status_macros.h"
#include "compute/tensor_cast.h"
#include "runtime/session_internal.h"

namespace inferloop {

namespace {

Result<std::vector<int64_t>> Argmax(const std::vector<Tensor>& outs) {
  std::vector<int64_t> pred;
  for (const Tensor& t0 : outs) {
    IL_ASSIGN_OR_RETURN(Tensor t, CastTensor(t0, DataType::kFloat));
    const int64_t k = t.rank() == 0 ? 1 : t.dim(t.rank() - 1);
    if (k <= 0) return Status::InvalidArgument("the first output " + ShapeToString(t.shape()) + " has no scores to rank");
    const float* p = t.data<float>();
    for (int64_t r = 0; r < t.size() / k; ++r)
      pred.push_back(std::max_element(p + r * k, p + (r + 1) * k) - (p + r * k));
  }
  return pred;
}

}  // namespace

Result<std::vector<Tensor>> RunFirstOutput(const Model& model, const QuantDataSet& data) {
  SessionOptions so;
  so.optimization_level = 2;
  IL_ASSIGN_OR_RETURN(auto session, CreateSessionFromModel(model, so));
  return RunFirstOutput(*session, data);
}

Result<std::vector<Tensor>> RunFirstOutput(Session& session, const QuantDataSet& data) {
  std::vector<Tensor> outs;
  for (size_t i = 0; i < data.chunks.size(); ++i) {
    std::vector<NamedValue> feeds;
    for (const ValueInfo& vi : session.inputs())
      for (const auto& nv : data.chunks[i])
        if (nv.first == vi.name) feeds.push_back(nv);
    RunOptions ro;
    ro.output_names = {session.outputs().at(0).name};
    auto r = session.Run(feeds, ro);
    if (!r.ok()) return r.status().WithContext(data.dir + ", chunk " + std::to_string(i));
    if (!(*r)[0].second.is_tensor()) return Status::InvalidArgument("the model's first output is not a tensor");
    outs.push_back((*r)[0].second.tensor());
  }
  return outs;
}

Result<Evaluator> Evaluator::Create(const Model& fp32, QuantDataSet data) {
  IL_ASSIGN_OR_RETURN(std::vector<Tensor> reference, RunFirstOutput(fp32, data));
  return FromReference(std::move(reference), std::move(data));
}

Result<Evaluator> Evaluator::Create(Session& fp32, QuantDataSet data) {
  IL_ASSIGN_OR_RETURN(std::vector<Tensor> reference, RunFirstOutput(fp32, data));
  return FromReference(std::move(reference), std::move(data));
}

Result<Evaluator> Evaluator::FromReference(std::vector<Tensor> reference, QuantDataSet data) {
  Evaluator e;
  e.data_ = std::move(data);
  e.reference_ = std::move(reference);
  IL_ASSIGN_OR_RETURN(e.reference_argmax_, Argmax(e.reference_));
  e.rows_ = static_cast<int64_t>(e.reference_argmax_.size());
  if (e.has_labels() && static_cast<int64_t>(e.data_.labels.size()) != e.rows_)
    return Status::InvalidArgument(e.data_.dir + ": labels.npy has " + std::to_string(e.data_.labels.size()) +
                                   " labels but the model's first output has " + std::to_string(e.rows_) + " rows");
  if (e.has_labels()) {
    int64_t hit = 0;
    for (int64_t i = 0; i < e.rows_; ++i) hit += e.reference_argmax_[i] == e.data_.labels[i];
    e.fp32_metric_.metric = e.rows_ ? 100.0 * static_cast<double>(hit) / static_cast<double>(e.rows_) : 0;
  } else {
    e.fp32_metric_.metric = 100;
  }
  return e;
}

Result<EvalMetric> Evaluator::Evaluate(const Model& model) const {
  IL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunFirstOutput(model, data_));
  return Score(outs);
}

Result<EvalMetric> Evaluator::EvaluateSession(Session& session) const {
  IL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunFirstOutput(session, data_));
  return Score(outs);
}

Result<EvalMetric> Evaluator::Score(const std::vector<Tensor>& outs) const {
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> pred, Argmax(outs));
  if (static_cast<int64_t>(pred.size()) != rows_)
    return Status::InvalidArgument("the quantized model's first output has " + std::to_string(pred.size()) +
                                   " rows, the FP32 model's " + std::to_string(rows_));
  EvalMetric m;
  int64_t agree = 0, hit = 0;
  for (int64_t i = 0; i < rows_; ++i) {
    agree += pred[i] == reference_argmax_[i];
    if (has_labels()) hit += pred[i] == data_.labels[i];
  }
  m.agreement = rows_ ? 100.0 * static_cast<double>(agree) / static_cast<double>(rows_) : 100;
  m.metric = has_labels() ? (rows_ ? 100.0 * static_cast<double>(hit) / static_cast<double>(rows_) : 0) : m.agreement;
  double dot = 0, na = 0, nb = 0;
  for (size_t c = 0; c < outs.size(); ++c) {
    IL_ASSIGN_OR_RETURN(Tensor a, CastTensor(reference_[c], DataType::kFloat));
    IL_ASSIGN_OR_RETURN(Tensor b, CastTensor(outs[c], DataType::kFloat));
    if (a.size() != b.size()) return Status::InvalidArgument("output sizes differ from the FP32 model's");
    for (int64_t i = 0; i < a.size(); ++i) {
      const double x = a.data<float>()[i], y = b.data<float>()[i];
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
  }
  m.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / (std::sqrt(na) * std::sqrt(nb));
  return m;
}

}  // namespace inferloop
