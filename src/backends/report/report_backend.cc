#include "backends/report/report_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backends/processing/ensemble_trace.h"
#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "backends/processing/tensor_values.h"
#include "base/c_locale_number.h"
#include "base/json_string.h"
#include "base/status_macros.h"

namespace inferloop::backends {
namespace {

struct VerdictRule {
  std::string tensor;
  int64_t index = 0;
  double threshold = 0.5;
  std::string below, at_or_above, when_absent;
};

// A JSON number; null for NaN and infinities, which JSON cannot write.
std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  return FormatGeneralC(v, 6);  // '.' whatever the host's locale
}

class Reporter final : public Processor {
 public:
  Reporter(std::vector<std::string> inputs, std::string trace_input, std::string output, VerdictRule rule, bool batched)
      : inputs_(std::move(inputs)), trace_input_(std::move(trace_input)), output_(std::move(output)),
        rule_(std::move(rule)), batched_(batched) {}

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    std::map<std::string, const Tensor*> given;
    for (const auto& i : request.inputs) given[i.name] = &i.tensor;
    const int64_t rows = Rows(given);
    std::map<std::string, std::vector<double>> values;  // the numeric inputs given
    for (const auto& n : inputs_) {
      auto it = given.find(n);
      if (it == given.end()) continue;
      auto v = NumericValues(*it->second);
      if (!v.ok()) return Status::InvalidArgument("input '" + n + "': " + v.status().message());
      values[n] = std::move(v).value();
    }
    const auto trace = given.find(trace_input_);
    std::vector<std::string> docs;
    for (int64_t r = 0; r < rows; ++r) {
      std::string stages = "[]";
      if (trace != given.end() && trace->second->size() > 0) {
        // Each row's own trace (an ensemble gives every row the same document).
        const int64_t k = std::min<int64_t>(r, trace->second->size() - 1);
        IL_ASSIGN_OR_RETURN(stages, TraceStepsJson(trace->second->strings()[k], trace_input_));
      }
      docs.push_back(Document(values, r, rows, stages));
    }
    Shape shape = {1};
    if (batched_) shape.insert(shape.begin(), rows);
    return std::vector<serve::InferOutput>{{output_, Tensor::FromStrings(shape, std::move(docs)), {}}};
  }

 private:
  int64_t Rows(const std::map<std::string, const Tensor*>& given) const {
    if (!batched_) return 1;
    for (const auto& n : inputs_)
      if (auto it = given.find(n); it != given.end() && it->second->rank() > 0) return it->second->dim(0);
    return 1;
  }

  std::string Document(const std::map<std::string, std::vector<double>>& given, int64_t r, int64_t rows,
                       const std::string& stages) const {
    std::string values, skipped, verdict = rule_.when_absent;
    for (const auto& n : inputs_) {
      auto it = given.find(n);
      if (it == given.end()) {
        skipped += (skipped.empty() ? "" : ",") + JsonString(n);
        continue;
      }
      const std::vector<double>& t = it->second;
      const int64_t size = static_cast<int64_t>(t.size());
      const int64_t per = rows > 0 ? size / rows : size;
      values += (values.empty() ? "" : ",") + JsonString(n) + ":[";
      for (int64_t k = 0; k < per; ++k) values += (k ? "," : "") + Number(t[r * per + k]);
      values += "]";
      if (n == rule_.tensor && rule_.index < per)
        verdict = t[r * per + rule_.index] >= rule_.threshold ? rule_.at_or_above : rule_.below;
    }
    const std::string rule = rule_.tensor + "[" + std::to_string(rule_.index) + "] >= " + Number(rule_.threshold) +
                             ": " + rule_.at_or_above + ", else " + rule_.below + "; " + rule_.tensor +
                             " absent: " + rule_.when_absent;
    return "{\"verdict\":" + JsonString(verdict) + ",\"verdict_rule\":" + JsonString(rule) + ",\"values\":{" + values +
           "},\"skipped\":[" + skipped + "],\"stages\":" + stages + "}";
  }

  const std::vector<std::string> inputs_;
  const std::string trace_input_, output_;
  const VerdictRule rule_;
  const bool batched_;
};

Result<VerdictRule> RuleOf(const serve::ModelConfig& c) {
  VerdictRule rule;
  rule.tensor = ParamString(c, "verdict_tensor");
  IL_ASSIGN_OR_RETURN(double index, ParamNumber(c, "verdict_index", 0));
  if (index < 0 || index != static_cast<int64_t>(index))
    return Status::InvalidArgument("parameter 'verdict_index' must be an integer >= 0");
  rule.index = static_cast<int64_t>(index);
  IL_ASSIGN_OR_RETURN(rule.threshold, ParamNumber(c, "verdict_threshold", 0.5));
  const std::string labels = ParamString(c, "verdict_labels", "negative,positive");
  const size_t comma = labels.find(',');
  if (comma == std::string::npos || labels.find(',', comma + 1) != std::string::npos)
    return Status::InvalidArgument("parameter 'verdict_labels' is '" + labels + "' (expected two labels: below,at_or_above)");
  rule.below = labels.substr(0, comma);
  rule.at_or_above = labels.substr(comma + 1);
  rule.when_absent = ParamString(c, "verdict_when_absent", rule.below);
  return rule;
}

class ReportBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "report"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "report";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    const serve::ModelConfig& c = r.partial_config;
    if (c.output_size() != 1 || c.output(0).data_type() != serve::configpb::TYPE_STRING)
      return Status::InvalidArgument("report gives one output of TYPE_STRING (the JSON document)");
    IL_ASSIGN_OR_RETURN(VerdictRule rule, RuleOf(c));
    const std::string trace = ParamString(c, "trace_input");
    std::vector<std::string> numeric;
    bool has_rule_tensor = rule.tensor.empty();
    for (const auto& in : c.input()) {
      if (in.name() == trace) {
        if (in.data_type() != serve::configpb::TYPE_STRING)
          return Status::InvalidArgument("trace input '" + trace + "' must be TYPE_STRING");
        continue;
      }
      if (in.data_type() == serve::configpb::TYPE_STRING)
        return Status::InvalidArgument("report input '" + in.name() + "' is TYPE_STRING; only the trace input may be");
      numeric.push_back(in.name());
      has_rule_tensor |= in.name() == rule.tensor;
    }
    if (!has_rule_tensor) return Status::InvalidArgument("parameter 'verdict_tensor' names no input ('" + rule.tensor + "')");
    auto p = std::make_shared<Reporter>(std::move(numeric), trace, c.output(0).name(), std::move(rule),
                                        c.max_batch_size() > 0);
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v, ProcessingModelVersion::Create(r, c, std::move(p), "report"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeReportBackend() { return std::make_shared<ReportBackend>(); }

}  // namespace inferloop::backends
