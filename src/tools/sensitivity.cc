#include "tools/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/c_locale_number.h"
#include "base/json_string.h"
#include "base/status_macros.h"
#include "tools/progress_bar.h"

namespace inferloop {

Result<std::vector<LayerSensitivity>> MeasureSensitivity(const Model& fp32, const RangeLookup& ranges,
                                                         const QdqOptions& base, const Evaluator& eval, bool progress) {
  std::vector<std::string> layers;
  for (const auto& l : QuantizableLayers(fp32, base))
    if (!base.exclude.count(l)) layers.push_back(l);
  std::vector<LayerSensitivity> out;
  ProgressBar bar("sensitivity", static_cast<int64_t>(layers.size()), progress);
  for (size_t i = 0; i < layers.size(); ++i) {
    QdqOptions o = base;
    o.exclude.clear();
    o.only = {layers[i]};
    IL_ASSIGN_OR_RETURN(QdqResult q, WriteQdqModel(fp32, ranges, o));
    auto m = eval.Evaluate(q.model);
    if (!m.ok()) return m.status().WithContext("layer '" + layers[i] + "' quantized alone");
    LayerSensitivity s;
    s.layer = layers[i];
    for (const Node& n : fp32.graph.nodes)
      if (NodeId(n) == layers[i]) s.op_type = n.op_type;
    s.metric = m->metric;
    s.loss = eval.fp32().metric - m->metric;
    s.cosine = m->cosine;
    out.push_back(s);
    bar.Update(static_cast<int64_t>(i + 1));
  }
  bar.Finish();
  std::stable_sort(out.begin(), out.end(), [](const LayerSensitivity& a, const LayerSensitivity& b) {
    if (a.loss != b.loss) return a.loss > b.loss;
    return a.cosine < b.cosine;
  });
  return out;
}

std::string FormatSensitivity(const std::vector<LayerSensitivity>& s, const Evaluator& eval) {
  std::string o;
  char buf[512];
  std::snprintf(buf, sizeof(buf), "metric: %s over %lld eval samples; FP32: %.4g%%\n", eval.metric_name(),
                static_cast<long long>(eval.rows()), eval.fp32().metric);
  o += buf;
  std::snprintf(buf, sizeof(buf), "%-4s %-32s %-10s %12s %12s %12s\n", "#", "layer (only it INT8)", "op", "metric %",
                "lost (pp)", "cosine");
  o += buf;
  for (size_t i = 0; i < s.size(); ++i) {
    std::snprintf(buf, sizeof(buf), "%-4zu %-32s %-10s %12.4g %12.4g %12.6f\n", i, s[i].layer.c_str(), s[i].op_type.c_str(),
                  s[i].metric, s[i].loss, s[i].cosine);
    o += buf;
  }
  if (s.empty()) o += "no quantizable layer (Conv/Gemm/MatMul with a constant weight)\n";
  return o;
}

std::string SensitivityToJson(const std::vector<LayerSensitivity>& s, const Evaluator& eval) {
  auto num = [](double v) {
    if (!std::isfinite(v)) return std::string("null");
    return FormatGeneralC(v, 17);
  };
  std::string o = "{\"metric\": ";
  AppendJsonString(o, eval.has_labels() ? "accuracy" : "agreement");
  o += ", \"rows\": " + std::to_string(eval.rows()) + ", \"fp32_metric\": " + num(eval.fp32().metric) + ", \"layers\": [";
  for (size_t i = 0; i < s.size(); ++i) {
    o += i ? ",\n  " : "\n  ";
    o += "{\"layer\": ";
    AppendJsonString(o, s[i].layer);
    o += ", \"op_type\": ";
    AppendJsonString(o, s[i].op_type);
    o += ", \"metric\": " + num(s[i].metric) + ", \"loss\": " + num(s[i].loss) + ", \"cosine\": " + num(s[i].cosine) + "}";
  }
  o += "]}\n";
  return o;
}

}  // namespace inferloop
