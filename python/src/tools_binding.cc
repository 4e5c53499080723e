// inferloop.quantize and inferloop.compare: the CLI's `inferloop quantize` and `inferloop compare`
// (tools/quantizer.h, tools/model_compare.h) with the same options as keyword arguments, returning
// their reports as dicts instead of printing text. Both run with the GIL released.
//
// quantize's dict holds QuantizeReport's figures plus "log" (the text the CLI prints on stdout);
// compare's is the CLI's --json document (compare_report.h CompareReportToJson, or with
// sensitivity=True sensitivity.h SensitivityToJson), parsed.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "bindings.h"
#include "errors.h"
#include "tools/calibration.h"
#include "tools/model_compare.h"
#include "tools/quantizer.h"

namespace inferloop::py {
namespace {

using Names = std::optional<std::variant<std::string, std::vector<std::string>>>;

// A list of names, or one string of comma-separated names (the CLI's form).
std::vector<std::string> NameList(const Names& names) {
  std::vector<std::string> out;
  if (!names) return out;
  if (const auto* list = std::get_if<std::vector<std::string>>(&*names)) return *list;
  std::stringstream ss(std::get<std::string>(*names));
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

void CheckRange(const char* name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi))
    throw StatusError(Status::InvalidArgument(std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                                              std::to_string(hi) + "], got " + std::to_string(v)));
}

// The calibration options QuantizeOptions and SensitivityCommandOptions share.
template <typename Options>
void SetCalibrationOptions(Options& o, const std::optional<std::string>& calibration,
                           const std::optional<std::string>& eval, const std::optional<std::string>& stats,
                           const std::string& method, double percentile, bool per_channel, bool reduce_range,
                           bool progress) {
  o.calibration = calibration.value_or("");
  o.eval = eval.value_or("");
  o.stats = stats.value_or("");
  o.method = ValueOrThrow(ParseCalibrationMethod(method));
  CheckRange("percentile", percentile, 0, 100);
  o.percentile = percentile;
  o.per_channel = per_channel;
  o.reduce_range = reduce_range;
  o.progress = progress;
}

nb::object ParseJson(const std::string& text) { return nb::module_::import_("json").attr("loads")(text); }

nb::dict QuantizeReportDict(const QuantizeOptions& o, const QuantizeReport& r, const std::string& log) {
  nb::dict d;
  d["model"] = o.model;
  d["output"] = o.output;
  d["mode"] = o.dynamic ? "dynamic" : "static";
  d["method"] = o.dynamic ? nb::none() : nb::object(nb::str(CalibrationMethodName(o.method)));
  d["per_channel"] = o.per_channel;
  d["reduce_range"] = o.reduce_range;
  d["quantized_nodes"] = r.quantized_nodes;
  d["qdq_tensors"] = r.qdq_tensors;
  d["excluded"] = o.exclude;
  d["kept_fp32"] = r.kept_fp32;
  d["warnings"] = r.warnings;
  if (r.evaluated) {
    nb::dict e;
    e["samples"] = r.eval_samples;
    e["metric"] = r.metric_name;
    e["fp32"] = r.fp32_metric;
    e["int8"] = r.int8_metric;
    e["drop"] = r.fp32_metric - r.int8_metric;
    e["cosine"] = r.cosine;
    e["agreement"] = r.agreement;
    if (o.max_accuracy_drop >= 0) e["within_bound"] = r.within_bound;
    d["eval"] = e;
  } else {
    d["eval"] = nb::none();
  }
  d["model_bytes"] = r.model_bytes;
  d["output_bytes"] = r.output_bytes;
  if (r.timed) {
    nb::dict t;
    t["runs"] = o.timing_runs;
    t["fp32_ms"] = r.timing.fp32_ms;
    t["int8_ms"] = r.timing.int8_ms;
    d["timing"] = t;
  } else {
    d["timing"] = nb::none();
  }
  d["log"] = log;
  return d;
}

nb::dict Quantize(const std::string& model, const std::string& output, const std::optional<std::string>& calibration,
                  const std::string& method, double percentile, bool per_channel, bool reduce_range, bool dynamic,
                  bool quantize_activation_matmul, const Names& exclude, std::optional<double> max_accuracy_drop,
                  const std::optional<std::string>& eval, const std::optional<std::string>& stats, int timing_runs,
                  bool progress) {
  QuantizeOptions o;
  o.model = model;
  o.output = output;
  SetCalibrationOptions(o, calibration, eval, stats, method, percentile, per_channel, reduce_range, progress);
  o.dynamic = dynamic;
  o.quantize_activation_matmul = quantize_activation_matmul;
  o.exclude = NameList(exclude);
  if (max_accuracy_drop) CheckRange("max_accuracy_drop", *max_accuracy_drop, 0, 100);
  o.max_accuracy_drop = max_accuracy_drop.value_or(-1);
  if (timing_runs < 0) throw StatusError(Status::InvalidArgument("timing_runs must be >= 0 (0: no timing)"));
  o.timing_runs = timing_runs;
  QuantizeReport report;
  std::ostringstream out, err;  // err holds only warnings, which the report lists
  Status st;
  {
    nb::gil_scoped_release nogil;
    st = RunQuantize(o, out, err, &report);
  }
  ThrowIfError(st);
  return QuantizeReportDict(o, report, out.str());
}

nb::object Compare(const std::string& model_a, const std::optional<std::string>& model_b,
                   const std::optional<std::string>& data, double cosine_threshold,
                   const std::optional<std::string>& calibration, const Names& tensors, bool sensitivity,
                   const std::optional<std::string>& eval, const std::string& method, double percentile,
                   bool per_channel, bool reduce_range, const std::optional<std::string>& stats, bool progress) {
  std::string json;
  if (sensitivity) {
    if (model_b) throw StatusError(Status::InvalidArgument("sensitivity=True takes one model (no model_b)"));
    SensitivityCommandOptions so;
    so.model = model_a;
    SetCalibrationOptions(so, calibration, eval, stats, method, percentile, per_channel, reduce_range, progress);
    std::ostringstream out;
    Status st;
    {
      nb::gil_scoped_release nogil;
      st = RunSensitivityCommand(so, out, &json);
    }
    ThrowIfError(st);
    return ParseJson(json);
  }
  if (!model_b || !data)
    throw StatusError(Status::InvalidArgument(
        "compare needs model_a, model_b and data (or sensitivity=True with calibration and eval)"));
  CheckRange("cosine_threshold", cosine_threshold, -1, 1);
  CompareOptions opts;
  opts.cosine_threshold = cosine_threshold;
  opts.calibration_dir = calibration.value_or("");
  opts.tensors = NameList(tensors);
  Result<CompareReport> report = Status::Internal("not compared");
  {
    nb::gil_scoped_release nogil;
    report = CompareModels(model_a, *model_b, *data, opts);
    if (report.ok()) json = CompareReportToJson(*report);
  }
  ThrowIfError(report.status());
  return ParseJson(json);
}

}  // namespace

void RegisterTools(nb::module_& m) {
  m.def("quantize", &Quantize, nb::arg("model"), nb::arg("output"), nb::arg("calibration").none() = nb::none(),
        nb::kw_only(), nb::arg("method") = "minmax", nb::arg("percentile") = 99.99, nb::arg("per_channel") = false,
        nb::arg("reduce_range") = false, nb::arg("dynamic") = false, nb::arg("quantize_activation_matmul") = false,
        nb::arg("exclude").none() = nb::none(), nb::arg("max_accuracy_drop").none() = nb::none(),
        nb::arg("eval").none() = nb::none(), nb::arg("stats").none() = nb::none(), nb::arg("timing_runs") = 30,
        nb::arg("progress") = false,
        "Post-training INT8 quantization of an ONNX model (`inferloop quantize`); returns the report as a dict.");
  m.def("compare", &Compare, nb::arg("model_a"), nb::arg("model_b").none() = nb::none(),
        nb::arg("data").none() = nb::none(), nb::kw_only(), nb::arg("cosine_threshold") = 0.99,
        nb::arg("calibration").none() = nb::none(), nb::arg("tensors").none() = nb::none(),
        nb::arg("sensitivity") = false, nb::arg("eval").none() = nb::none(), nb::arg("method") = "minmax",
        nb::arg("percentile") = 99.99, nb::arg("per_channel") = false, nb::arg("reduce_range") = false,
        nb::arg("stats").none() = nb::none(), nb::arg("progress") = false,
        "Per-tensor comparison of two models on the same inputs (`inferloop compare`), or with sensitivity=True "
        "the per-layer quantization sensitivity of model_a; returns the CLI's --json report as a dict.");
}

}  // namespace inferloop::py
