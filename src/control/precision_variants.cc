#include "control/precision_variants.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "base/status_macros.h"
#include "graph/onnx_loader.h"
#include "runtime/session_internal.h"
#include "base/process_memory.h"
#include "tools/quant_data.h"
#include "tools/quant_eval.h"
#include "tools/quantizer.h"

namespace inferloop::control {
namespace {

namespace fs = std::filesystem;
using serve::VariantReport;

std::string Fixed(double v, int digits) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(digits);
  os << v;
  return os.str();
}

// `t`'s first row repeated `rows` times (t has a leading batch dimension).
Result<Tensor> RepeatFirstRow(const Tensor& t, int64_t rows) {
  if (t.rank() == 0 || t.dim(0) < 1) return Status::InvalidArgument("sample input has no rows");
  if (t.dtype() == DataType::kString) return Status::Unimplemented("string inputs cannot be timed");
  Shape shape = t.shape();
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(t.dim(0));
  shape[0] = rows;
  IL_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(t.dtype(), shape));
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(out.raw_data()) + static_cast<size_t>(r) * row_bytes, t.raw_data(), row_bytes);
  return out;
}

Result<std::vector<NamedValue>> MakeBatch(const serve::ModelConfig& config, const std::vector<NamedValue>& sample,
                                          int rows) {
  const bool batches = config.max_batch_size() > 0;
  std::vector<NamedValue> feeds;
  for (const auto& in : config.input()) {
    const Value* given = nullptr;
    for (const auto& [name, v] : sample)
      if (name == in.name() && v.is_tensor()) given = &v;
    if (given) {
      if (!batches) {
        feeds.emplace_back(in.name(), *given);
        continue;
      }
      IL_ASSIGN_OR_RETURN(Tensor t, RepeatFirstRow(given->tensor(), rows));
      feeds.emplace_back(in.name(), Value(std::move(t)));
      continue;
    }
    std::vector<int64_t> dims;
    if (batches) dims.push_back(rows);
    for (int64_t d : in.dims()) dims.push_back(d < 0 ? 1 : d);
    const DataType dt = serve::FromConfigDataType(in.data_type());
    if (dt == DataType::kString || dt == DataType::kUndefined)
      return Status::Unimplemented("input '" + in.name() + "' cannot be made up for timing (give an evaluation set)");
    IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dt, Shape(dims)));
    std::memset(t.raw_data(), 0, t.nbytes());
    feeds.emplace_back(in.name(), Value(std::move(t)));
  }
  return feeds;
}

double MedianMs(Session& session, const std::vector<NamedValue>& feeds, int runs, Status* error) {
  std::vector<double> ms;
  std::vector<NamedValue> outs;
  for (int i = 0; i < runs + 1; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = session.RunInto(feeds, outs, RunOptions{});
    const auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) {
      *error = st;
      return 0;
    }
    if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());  // run 0 warms
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::vector<int> BatchSizesToTime(const serve::ModelConfig& config) {
  std::vector<int> sizes{1};
  const int max = config.max_batch_size();
  for (int b = 2; b < max; b *= 2) sizes.push_back(b);
  if (max > 1) sizes.push_back(max);
  return sizes;
}

// The evaluation set and its fp32 reference, or the reason there is none.
struct EvaluationSet {
  std::optional<Evaluator> evaluator;
  std::string missing;  // why not, when evaluator is empty
  std::vector<NamedValue> first_chunk;
};

EvaluationSet LoadEvaluation(const VariantPreparation& p, Session& fp32) {
  EvaluationSet e;
  const std::string dir = (fs::path(p.model_dir) / p.objectives.evaluation_dir).string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    e.missing = "no evaluation set (" + p.objectives.evaluation_dir + "/ in the model folder): its accuracy cannot be measured";
    return e;
  }
  auto data = LoadQuantData(dir, fp32.inputs(), 16);
  if (!data.ok()) {
    e.missing = "evaluation set " + p.objectives.evaluation_dir + "/ is unusable: " + data.status().message();
    return e;
  }
  if (!data->chunks.empty()) e.first_chunk = data->chunks.front();
  auto ev = Evaluator::Create(fp32, std::move(data).value());
  if (!ev.ok()) {
    e.missing = "evaluation set " + p.objectives.evaluation_dir + "/ does not run on the model: " + ev.status().message();
    return e;
  }
  e.evaluator = std::move(ev).value();
  return e;
}

// The int8 session: model.qdq.onnx beside the model, else quantized from the calibration set.
Result<std::unique_ptr<Session>> MakeInt8Session(const VariantPreparation& p, const std::vector<ValueInfo>& inputs,
                                                 SessionOptions so, std::string* source) {
  so.precision = Precision::kAuto;
  const std::string shipped = (fs::path(p.version_dir) / "model.qdq.onnx").string();
  std::error_code ec;
  if (fs::is_regular_file(shipped, ec)) {
    *source = "model.qdq.onnx";
    IL_ASSIGN_OR_RETURN(auto s, Session::CreateFromFile(shipped, so));
    if (s->precision() != Precision::kInt8)
      return Status::InvalidArgument("model.qdq.onnx has no QuantizeLinear/DequantizeLinear nodes");
    return s;
  }
  const std::string calib_dir = (fs::path(p.model_dir) / p.objectives.calibration_dir).string();
  if (!fs::is_directory(calib_dir, ec))
    return Status::NotFound("no calibration set (" + p.objectives.calibration_dir +
                            "/ in the model folder) and no model.qdq.onnx beside the model");
  *source = p.objectives.calibration_dir + "/";
  IL_ASSIGN_OR_RETURN(QuantDataSet calib, LoadQuantData(calib_dir, inputs));
  IL_ASSIGN_OR_RETURN(Model fp32, LoadModelFromFile(p.model_path));
  std::ostringstream log;
  IL_ASSIGN_OR_RETURN(CalibrationStats stats, ObtainCalibrationStats(p.model_path, calib, "", false, log));
  RangeCache ranges(stats, CalibrationMethod::kPercentile, 99.99);
  QdqOptions qopts;
  qopts.per_channel = true;
  IL_ASSIGN_OR_RETURN(QdqResult qdq, WriteQdqModel(fp32, ranges.Lookup(), qopts));
  return CreateSessionFromModel(qdq.model, so);
}

}  // namespace

Result<std::vector<std::pair<int, double>>> MeasureLatencyPerBatch(Session& session, const serve::ModelConfig& config,
                                                                   const std::vector<NamedValue>& sample) {
  std::vector<std::pair<int, double>> table;
  for (int b : BatchSizesToTime(config)) {
    IL_ASSIGN_OR_RETURN(std::vector<NamedValue> feeds, MakeBatch(config, sample, b));
    Status error;
    const double ms = MedianMs(session, feeds, b == 1 ? 5 : 3, &error);
    if (!error.ok()) return error.WithContext("timing batch " + std::to_string(b));
    table.emplace_back(b, ms);
  }
  return table;
}

Result<std::vector<VariantReport>> PreparePrecisionVariants(serve::ServedModelVersion& version,
                                                            const VariantPreparation& p) {
  auto progress = [&](const std::string& what) {
    if (p.progress) p.progress(what);
  };
  const serve::ModelConfig& config = version.config();
  Session& base = version.variant_session(0);
  // The accuracy reference is fp32: the version's own session when it is fp32, else one made here.
  std::unique_ptr<Session> fp32_owned;
  Session* fp32 = &base;
  if (base.precision() != Precision::kFp32) {
    SessionOptions so = p.session;
    so.precision = Precision::kFp32;
    IL_ASSIGN_OR_RETURN(fp32_owned, Session::CreateFromFile(p.model_path, so));
    fp32 = fp32_owned.get();
  }
  progress("adaptive: evaluating the reference");
  EvaluationSet eval = LoadEvaluation(p, *fp32);

  std::vector<VariantReport> reports;
  VariantReport r0;
  r0.name = version.variant_name(0);
  r0.usable = true;
  r0.source = fs::path(p.model_path).filename().string();
  r0.memory_bytes = version.MemoryBytes();
  if (eval.evaluator) {
    r0.metric = eval.evaluator->metric_name();
    r0.accuracy_measured = true;
    if (fp32 != &base) {
      IL_ASSIGN_OR_RETURN(EvalMetric m, eval.evaluator->EvaluateSession(base));
      r0.accuracy_drop = eval.evaluator->fp32().metric - m.metric;
    }
  }
  progress("adaptive: timing " + r0.name);
  IL_ASSIGN_OR_RETURN(r0.latency_ms, MeasureLatencyPerBatch(base, config, eval.first_chunk));
  reports.push_back(std::move(r0));

  for (const std::string& name : p.objectives.variants) {
    if (name == version.variant_name(0)) continue;
    VariantReport r;
    r.name = name;
    progress("adaptive: preparing " + name);
    const int64_t heap_before = HeapBytesInUse();
    SessionOptions so = p.session;
    Result<std::unique_ptr<Session>> session = Status::Unimplemented("unknown variant");
    // fp32 is never here: listed, it is the most precise, so the version's own session (variant 0).
    if (name == "bf16") {
      so.precision = Precision::kBf16;
      r.source = "bf16 session of " + fs::path(p.model_path).filename().string();
      session = Session::CreateFromFile(p.model_path, so);
      if (session.ok() && (*session)->precision() != Precision::kBf16)
        session = Status::FailedPrecondition("this CPU lacks AVX512_BF16 (bf16 would run as fp16 weights with fp32 "
                                             "compute: no faster)");
    } else if (name == "int8") {
      session = MakeInt8Session(p, base.inputs(), so, &r.source);
    }
    if (!session.ok()) {
      r.skipped_reason = session.status().message();
      reports.push_back(std::move(r));
      continue;
    }
    r.memory_bytes = std::max<int64_t>(0, HeapBytesInUse() - heap_before);
    if (!eval.evaluator) {
      r.skipped_reason = eval.missing;
      reports.push_back(std::move(r));
      continue;
    }
    auto m = eval.evaluator->EvaluateSession(**session);
    if (!m.ok()) {
      r.skipped_reason = "fails on the evaluation set: " + m.status().message();
      reports.push_back(std::move(r));
      continue;
    }
    r.metric = eval.evaluator->metric_name();
    r.accuracy_measured = true;
    r.accuracy_drop = eval.evaluator->fp32().metric - m->metric;
    if (r.accuracy_drop > p.objectives.max_accuracy_drop) {
      r.skipped_reason = "accuracy drop " + Fixed(r.accuracy_drop, 2) + " pp exceeds max_accuracy_drop " +
                         Fixed(p.objectives.max_accuracy_drop, 2) + " pp (" + r.metric + ")";
      reports.push_back(std::move(r));
      continue;
    }
    progress("adaptive: timing " + name);
    auto table = MeasureLatencyPerBatch(**session, config, eval.first_chunk);
    if (!table.ok()) {
      r.skipped_reason = "could not be timed: " + table.status().message();
      reports.push_back(std::move(r));
      continue;
    }
    r.latency_ms = std::move(table).value();
    IL_RETURN_IF_ERROR(version.AddVariant(name, std::move(session).value(), r.memory_bytes));
    r.usable = true;
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace inferloop::control
