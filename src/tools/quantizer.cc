#include "tools/quantizer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "base/status_macros.h"
#include "graph/onnx_loader.h"
#include "graph/onnx_writer.h"
#include "runtime/session_internal.h"
#include "tools/dynamic_quant.h"
#include "tools/quant_eval.h"
#include "tools/sensitivity.h"

namespace inferloop {

namespace fs = std::filesystem;

std::optional<QuantRange> RangeCache::Get(const std::string& tensor) {
  if (auto it = cache_.find(tensor); it != cache_.end()) return it->second;
  auto it = stats_.tensors.find(tensor);
  if (it == stats_.tensors.end() || it->second.empty()) return std::nullopt;
  QuantRange r = ComputeRange(it->second, method_, percentile_);
  cache_[tensor] = r;
  return r;
}

Result<CalibrationStats> ObtainCalibrationStats(const std::string& model_path, const QuantDataSet& data,
                                                const std::string& stats_path, bool progress, std::ostream& log) {
  IL_ASSIGN_OR_RETURN(std::string model_hash, FileHash(model_path));
  std::error_code ec;
  if (!stats_path.empty() && fs::exists(stats_path, ec)) {
    IL_ASSIGN_OR_RETURN(CalibrationStats s, LoadCalibrationStats(stats_path));
    if (s.model_hash != model_hash) {
      log << "calibration: statistics in " << stats_path << " belong to another model (hash " << s.model_hash
          << ", this model " << model_hash << "): recalibrating\n";
    } else if (s.data_hash != HashHex(data.fingerprint)) {
      log << "calibration: statistics in " << stats_path << " were collected on other data: recalibrating\n";
    } else {
      log << "calibration: reused statistics from " << stats_path << " (model hash " << model_hash << ", " << s.rows
          << " samples, " << s.tensors.size() << " tensors); calibration skipped\n";
      return s;
    }
  }
  log << "calibration: running the FP32 model over " << data.rows << " samples (" << data.chunks.size()
      << " runs) from " << data.dir << "\n";
  log.flush();
  IL_ASSIGN_OR_RETURN(CalibrationStats s, CollectCalibrationStats(model_path, data, progress));
  log << "calibration: statistics of " << s.tensors.size() << " tensors collected\n";
  if (!stats_path.empty()) {
    IL_RETURN_IF_ERROR(SaveCalibrationStats(s, stats_path));
    log << "calibration: statistics saved to " << stats_path << "\n";
  }
  return s;
}

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result<double> TimeOne(const std::string& path, const Sample& sample, int runs) {
  SessionOptions so;
  so.optimization_level = 2;
  IL_ASSIGN_OR_RETURN(auto session, Session::CreateFromFile(path, so));
  std::vector<NamedValue> feeds;
  for (const ValueInfo& vi : session->inputs())
    for (const auto& nv : sample)
      if (nv.first == vi.name) feeds.push_back(nv);
  std::vector<double> ms;
  for (int i = 0; i < runs + 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = session->Run(feeds);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) return r.status().WithContext(path);
    if (i >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return Median(ms);
}

std::string Join(const std::set<std::string>& s) {
  std::string o;
  for (const auto& x : s) o += (o.empty() ? "" : ", ") + x;
  return o;
}

std::string Pct(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << v;
  return s.str();
}

}  // namespace

Result<ModelTiming> TimeModels(const std::string& fp32_path, const std::string& int8_path, const Sample& sample, int runs) {
  ModelTiming t;
  IL_ASSIGN_OR_RETURN(t.fp32_ms, TimeOne(fp32_path, sample, runs));
  IL_ASSIGN_OR_RETURN(t.int8_ms, TimeOne(int8_path, sample, runs));
  return t;
}

namespace {

// Loads the FP32 model at `path` and its declared inputs (what the data must provide), as a
// session reports them.
Status LoadWithInputs(const std::string& path, Model* model, std::vector<ValueInfo>* inputs) {
  auto loaded = LoadModelFromFile(path);
  if (!loaded.ok()) return loaded.status().WithContext(path);
  *model = std::move(loaded).value();
  SessionOptions so;
  so.optimization_level = 0;
  auto s = CreateSessionFromModel(*model, so);
  if (!s.ok()) return s.status().WithContext(path);
  *inputs = (*s)->inputs();
  return Status::Ok();
}

}  // namespace

namespace {

// --max-accuracy-drop: keeps layers FP32, most sensitive first, until the metric's drop from FP32
// is within the bound; `result` and `m` become the final model and its metric.
Status KeepSensitiveLayersFp32(const QuantizeOptions& o, const Model& fp32, RangeCache& ranges, QdqOptions qopts,
                               const Evaluator& eval, QdqResult& result, EvalMetric& m, QuantizeReport& rep,
                               std::ostream& out, std::ostream& err) {
  const double fp = eval.fp32().metric;
  out << "mixed precision: drop " << Pct(fp - m.metric) << " pp > " << o.max_accuracy_drop
      << " pp; measuring per-layer sensitivity (each layer quantized alone)\n";
  out.flush();
  IL_ASSIGN_OR_RETURN(auto sens, MeasureSensitivity(fp32, ranges.Lookup(), qopts, eval, o.progress));
  int step = 0;
  double drop = fp - m.metric;
  for (const auto& s : sens) {
    if (drop <= o.max_accuracy_drop) break;
    qopts.exclude.insert(s.layer);
    rep.kept_fp32.push_back(s.layer);
    IL_ASSIGN_OR_RETURN(result, WriteQdqModel(fp32, ranges.Lookup(), qopts));
    IL_ASSIGN_OR_RETURN(m, eval.Evaluate(result.model));
    drop = fp - m.metric;
    out << "mixed precision step " << ++step << ": keep " << s.op_type << " '" << s.layer
        << "' FP32 (alone it lost " << Pct(s.loss) << " pp, cosine " << std::setprecision(6) << s.cosine
        << ") -> INT8 " << Pct(m.metric) << "%, drop " << Pct(drop) << " pp, cosine " << m.cosine << "\n";
  }
  rep.within_bound = drop <= o.max_accuracy_drop;
  if (rep.within_bound) {
    out << "mixed precision: within " << o.max_accuracy_drop << " pp with " << step << " layer(s) kept FP32\n";
  } else {
    std::ostringstream w;
    w << "could not reach an accuracy drop within " << o.max_accuracy_drop << " pp (drop " << Pct(drop)
      << " pp with every quantizable layer kept FP32: the remaining loss comes from Add/pooling QDQ pairs)";
    err << "warning: " << w.str() << "\n";
    rep.warnings.push_back(w.str());
    out << "mixed precision: could not reach the bound (drop " << Pct(drop) << " pp)\n";
  }
  std::set<std::string> kept(rep.kept_fp32.begin(), rep.kept_fp32.end());
  if (!kept.empty()) out << "kept FP32 (sensitivity): " << Join(kept) << "\n";
  return Status::Ok();
}

// Times both models on the first row of the calibration data (when there is one) and reports it.
Status ReportTiming(const QuantizeOptions& o, const std::optional<QuantDataSet>& calib,
                    const std::vector<ValueInfo>& inputs, QuantizeReport& rep, std::ostream& out, std::ostream& err) {
  const Sample* first = calib && !calib->chunks.empty() ? &calib->chunks[0] : nullptr;
  if (!first) {
    out << "timing skipped: no --calibration data to time with\n";
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Sample sample, FirstRow(*first, inputs));
  auto t = TimeModels(o.model, o.output, sample, o.timing_runs);
  if (!t.ok()) return t.status().WithContext("timing");
  rep.timed = true;
  rep.timing = *t;
  std::string shape;
  for (const auto& [n, v] : sample)
    if (v.is_tensor()) shape += (shape.empty() ? "" : ", ") + n + ShapeToString(v.tensor().shape());
  out << "timing (inferloop, optimization level 2, median of " << o.timing_runs << " runs on " << shape
      << "): FP32 " << std::setprecision(4) << t->fp32_ms << " ms, INT8 " << t->int8_ms << " ms (INT8/FP32 "
      << std::setprecision(3) << (t->fp32_ms > 0 ? t->int8_ms / t->fp32_ms : 0) << ")\n";
  if (t->int8_ms >= t->fp32_ms) {
    std::ostringstream w;
    w << "the INT8 model is not faster than FP32 on this CPU (INT8 " << std::setprecision(4) << t->int8_ms
      << " ms vs FP32 " << t->fp32_ms << " ms median): kernels for its quantized ops may be missing here";
    err << "warning: " << w.str() << "\n";
    rep.warnings.push_back(w.str());
  }
  return Status::Ok();
}

}  // namespace

Status RunQuantize(const QuantizeOptions& o, std::ostream& out, std::ostream& err, QuantizeReport* report) {
  QuantizeReport local;
  QuantizeReport& rep = report ? *report : local;
  rep = QuantizeReport{};
  if (o.max_accuracy_drop >= 0 && o.eval.empty())
    return Status::InvalidArgument("--max-accuracy-drop needs --eval DATA to measure the accuracy on");
  if (o.max_accuracy_drop >= 0 && o.dynamic)
    return Status::InvalidArgument("--max-accuracy-drop works with static quantization only (not --dynamic)");
  if (!o.dynamic && o.calibration.empty())
    return Status::InvalidArgument("static quantization needs --calibration DATA (or use --dynamic)");
  Model fp32;
  std::vector<ValueInfo> inputs;
  IL_RETURN_IF_ERROR(LoadWithInputs(o.model, &fp32, &inputs));
  std::set<std::string> exclude(o.exclude.begin(), o.exclude.end());
  {
    // Check --exclude before the (possibly long) calibration.
    std::set<std::string> ids;
    for (const Node& n : fp32.graph.nodes) ids.insert(NodeId(n));
    for (const auto& e : exclude)
      if (!ids.count(e)) return Status::InvalidArgument("--exclude: no node named '" + e + "' in " + o.model);
  }

  std::optional<QuantDataSet> calib;
  if (!o.calibration.empty()) {
    auto d = LoadQuantData(o.calibration, inputs);
    if (!d.ok()) return d.status().WithContext("--calibration");
    calib = std::move(d).value();
  }
  std::optional<Evaluator> eval;
  if (!o.eval.empty()) {
    auto d = LoadQuantData(o.eval, inputs, 64);
    if (!d.ok()) return d.status().WithContext("--eval");
    auto e = Evaluator::Create(fp32, std::move(d).value());
    if (!e.ok()) return e.status().WithContext("--eval");
    eval = std::move(e).value();
  }

  QdqResult result;
  if (o.dynamic) {
    DynamicQuantOptions dopts;
    dopts.per_channel = o.per_channel;
    dopts.reduce_range = o.reduce_range;
    dopts.exclude = exclude;
    IL_ASSIGN_OR_RETURN(result, WriteDynamicQuantModel(fp32, dopts));
    out << "dynamic quantization: " << result.quantized_nodes
        << " MatMul/Gemm nodes with int8 weights (" << (o.per_channel ? "per column" : "per tensor")
        << (o.reduce_range ? ", 7-bit" : "") << "), activations quantized at run time\n";
  }
  std::optional<CalibrationStats> stats;
  std::optional<RangeCache> ranges;
  QdqOptions qopts;
  qopts.per_channel = o.per_channel;
  qopts.reduce_range = o.reduce_range;
  qopts.exclude = exclude;
  qopts.quantize_activation_matmul = o.quantize_activation_matmul;
  if (!o.dynamic) {
    IL_ASSIGN_OR_RETURN(stats, ObtainCalibrationStats(o.model, *calib, o.stats, o.progress, out));
    ranges.emplace(*stats, o.method, o.percentile);
    IL_ASSIGN_OR_RETURN(result, WriteQdqModel(fp32, ranges->Lookup(), qopts));
    out << "static quantization (" << CalibrationMethodName(o.method);
    if (o.method == CalibrationMethod::kPercentile) out << " " << o.percentile;
    out << ", weights " << (o.per_channel ? "per channel" : "per tensor") << (o.reduce_range ? ", 7-bit" : "")
        << "): " << result.quantized_nodes
        << " nodes between QDQ pairs, " << result.qdq_tensors << " activation tensors quantized\n";
  }
  if (!exclude.empty()) out << "kept FP32 (--exclude): " << Join(exclude) << "\n";
  for (const auto& w : result.warnings) err << "warning: " << w << "\n";
  rep.warnings = result.warnings;

  if (eval) {
    IL_ASSIGN_OR_RETURN(EvalMetric m, eval->Evaluate(result.model));
    const double fp = eval->fp32().metric;
    out << "eval (" << eval->rows() << " samples, " << eval->metric_name() << "): FP32 " << Pct(fp) << "%, INT8 "
        << Pct(m.metric) << "% (drop " << Pct(fp - m.metric) << " pp), output cosine to FP32 " << std::setprecision(6)
        << m.cosine << ", top-1 agreement " << Pct(m.agreement) << "%\n";
    if (o.max_accuracy_drop >= 0 && fp - m.metric > o.max_accuracy_drop) {
      IL_RETURN_IF_ERROR(KeepSensitiveLayersFp32(o, fp32, *ranges, qopts, *eval, result, m, rep, out, err));
    } else if (o.max_accuracy_drop >= 0) {
      out << "mixed precision: drop within " << o.max_accuracy_drop << " pp, no layer kept FP32\n";
    }
    rep.evaluated = true;
    rep.eval_samples = eval->rows();
    rep.metric_name = eval->metric_name();
    rep.fp32_metric = fp;
    rep.int8_metric = m.metric;
    rep.cosine = m.cosine;
    rep.agreement = m.agreement;
  }
  rep.quantized_nodes = result.quantized_nodes;
  rep.qdq_tensors = result.qdq_tensors;

  if (auto s = SaveModelToFile(result.model, o.output); !s.ok()) return s;
  std::error_code ec;
  rep.output_bytes = fs::file_size(o.output, ec);
  rep.model_bytes = fs::file_size(o.model, ec);
  out << "wrote " << o.output << " (" << rep.output_bytes / 1024 << " KiB; FP32 model " << rep.model_bytes / 1024
      << " KiB)\n";
  if (o.timing_runs > 0) IL_RETURN_IF_ERROR(ReportTiming(o, calib, inputs, rep, out, err));
  return Status::Ok();
}

Status RunSensitivityCommand(const SensitivityCommandOptions& o, std::ostream& out, std::string* json_out) {
  if (o.calibration.empty() || o.eval.empty())
    return Status::InvalidArgument("--sensitivity needs --calibration DATA and --eval DATA");
  Model fp32;
  std::vector<ValueInfo> inputs;
  IL_RETURN_IF_ERROR(LoadWithInputs(o.model, &fp32, &inputs));
  auto calib = LoadQuantData(o.calibration, inputs);
  if (!calib.ok()) return calib.status().WithContext("--calibration");
  auto edata = LoadQuantData(o.eval, inputs, 64);
  if (!edata.ok()) return edata.status().WithContext("--eval");
  auto eval = Evaluator::Create(fp32, std::move(edata).value());
  if (!eval.ok()) return eval.status().WithContext("--eval");
  IL_ASSIGN_OR_RETURN(CalibrationStats stats, ObtainCalibrationStats(o.model, *calib, o.stats, o.progress, out));
  RangeCache ranges(stats, o.method, o.percentile);
  QdqOptions q;
  q.per_channel = o.per_channel;
  q.reduce_range = o.reduce_range;
  q.quantize_activation_matmul = o.quantize_activation_matmul;
  out << "sensitivity (" << CalibrationMethodName(o.method) << ", weights " << (o.per_channel ? "per channel" : "per tensor")
      << (o.reduce_range ? ", 7-bit" : "") << "): each layer quantized alone, ranked by the metric lost\n";
  out.flush();
  IL_ASSIGN_OR_RETURN(auto sens, MeasureSensitivity(fp32, ranges.Lookup(), q, *eval, o.progress));
  out << FormatSensitivity(sens, *eval);
  if (json_out) *json_out = SensitivityToJson(sens, *eval);
  if (!o.json.empty()) {
    std::ofstream f(o.json, std::ios::binary | std::ios::trunc);
    f << SensitivityToJson(sens, *eval);
    f.close();
    if (!f.good()) return Status::Unavailable("cannot write '" + o.json + "'");
  }
  return Status::Ok();
}

}  // namespace inferloop
