#include "backends/ensemble/ensemble_model_version.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "backends/ensemble/step_condition.h"
#include "base/c_locale_number.h"
#include "base/json_string.h"
#include "base/status_macros.h"
#include "serve/version_statistics.h"

namespace inferloop::backends {

using Clock = std::chrono::steady_clock;

struct EnsembleModelVersion::Shared {
  std::mutex mu;
  std::condition_variable idle;
  int64_t inflight = 0;
  serve::VersionStatistics stats;
  // Per step: ran / skipped / failed counters and the duration histogram.
  std::vector<serve::Counter> ran, skipped, failed;
  std::vector<serve::Histogram> seconds;
  serve::Histogram request_seconds;
};

// One request going through the steps.
struct EnsembleModelVersion::Run {
  const EnsemblePlan* plan = nullptr;
  std::string name;
  int64_t version = 0;
  const serve::ModelConfig* config = nullptr;
  serve::ModelResolver* models = nullptr;
  std::shared_ptr<Shared> shared;
  std::shared_ptr<const EnsembleModelVersion> keep;  // the plan and config live while runs do

  serve::InferRequest request;
  serve::RequestContext context;
  serve::InferCallback done;
  serve::AdmissionTicket ticket;
  Clock::time_point start = Clock::now();

  std::mutex mu;
  std::map<std::string, Tensor> tensors;  // produced so far (ensemble inputs included)
  std::vector<int> waiting_on;            // per step: steps it reads from still running
  std::string trace;                      // JSON objects of the steps ended so far, comma-separated
  int remaining = 0;                      // steps not yet ended
  bool finished = false;
};

namespace {

using RunPtr = std::shared_ptr<EnsembleModelVersion::Run>;

void StartStep(const RunPtr& run, int i);

// Appends step i's record to the run's trace. Called with run->mu held.
void Trace(EnsembleModelVersion::Run& run, int i, const char* outcome, const std::string& version, Clock::duration t) {
  const EnsembleStep& s = run.plan->steps[i];
  const std::string ms = FormatFixedC(std::chrono::duration<double, std::milli>(t).count(), 3);
  if (!run.trace.empty()) run.trace += ",";
  run.trace += "{\"step\":" + JsonString(s.label) + ",\"model\":" + JsonString(s.model) +
               ",\"version\":" + JsonString(version) + ",\"outcome\":\"" + outcome + "\",\"ms\":" + ms + "}";
}

// The kTraceTensor value now, for step `s`: [1], or [rows, 1] for a batching model (the same
// document in each row). Called with run->mu held.
Tensor TraceTensor(const EnsembleModelVersion::Run& run, const EnsembleStep& s) {
  const std::string doc = "{\"ensemble\":" + JsonString(run.name) + ",\"version\":\"" + std::to_string(run.version) +
                          "\",\"steps\":[" + run.trace + "]}";
  int64_t rows = 1;
  if (s.model_batches && !run.request.inputs.empty() && run.request.inputs[0].tensor.rank() > 0)
    rows = run.request.inputs[0].tensor.dim(0);
  if (!s.model_batches) return Tensor::FromStrings({1}, {doc});
  return Tensor::FromStrings({rows, 1}, std::vector<std::string>(static_cast<size_t>(rows), doc));
}

// A tensor of the ensemble output's type filled with `value`: [batch] + dims.
Result<Tensor> FilledOutput(const serve::ModelConfig& config, const std::string& name, double value, int64_t batch) {
  for (const auto& out : config.output()) {
    if (out.name() != name) continue;
    Shape shape;
    if (config.max_batch_size() > 0) shape.push_back(batch);
    for (int64_t d : out.dims()) {
      if (d < 0) return Status::InvalidArgument("skipped_value for '" + name + "' needs fixed dims in the ensemble output");
      shape.push_back(d);
    }
    const DataType dt = serve::FromConfigDataType(out.data_type());
    IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dt, shape));
    for (int64_t k = 0; k < t.size(); ++k) {
      switch (dt) {
        case DataType::kFloat: t.data<float>()[k] = static_cast<float>(value); break;
        case DataType::kDouble: t.data<double>()[k] = value; break;
        case DataType::kInt32: t.data<int32_t>()[k] = static_cast<int32_t>(value); break;
        case DataType::kInt64: t.data<int64_t>()[k] = static_cast<int64_t>(value); break;
        case DataType::kUInt8: t.data<uint8_t>()[k] = static_cast<uint8_t>(value); break;
        case DataType::kBool: t.data<bool>()[k] = value != 0; break;
        default: return Status::InvalidArgument("skipped_value for '" + name + "': unsupported data type");
      }
    }
    return t;
  }
  return Status::InvalidArgument("skipped_value names '" + name + "', which is not an ensemble output");
}

// Answers the request (once): the error, or the outputs asked for that exist.
void Finish(const RunPtr& run, Status error) {
  {
    std::lock_guard<std::mutex> lock(run->mu);
    if (run->finished) return;
    run->finished = true;
  }
  Result<serve::InferResponse> result = error;
  if (error.ok()) {
    serve::InferResponse resp;
    resp.model_name = run->name;
    resp.model_version = std::to_string(run->version);
    resp.id = run->request.id;
    std::vector<std::string> wanted;
    for (const auto& o : run->request.outputs) wanted.push_back(o.name);
    if (wanted.empty())
      for (const auto& o : run->config->output()) wanted.push_back(o.name());
    for (const auto& n : wanted) {
      auto it = run->tensors.find(n);
      if (it != run->tensors.end()) resp.outputs.push_back({n, it->second, {}});
    }
    result = std::move(resp);
  }
  const auto total = Clock::now() - run->start;
  if (error.ok()) {
    run->shared->stats.RecordSuccess(1, std::chrono::nanoseconds(0), total, total);
  } else {
    run->shared->stats.RecordFailure(total);
  }
  run->shared->request_seconds.Observe(std::chrono::duration<double>(total).count());
  run->ticket.Release();
  serve::InferCallback done = std::move(run->done);
  done(std::move(result));
  std::lock_guard<std::mutex> lock(run->shared->mu);
  if (--run->shared->inflight == 0) run->shared->idle.notify_all();
}

// Step i ended (ran, or was skipped): starts the steps that were waiting only on it; answers the
// request when every step has ended.
void StepEnded(const RunPtr& run, int i) {
  std::vector<int> ready;
  bool all_done = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    if (run->finished) return;
    for (size_t j = 0; j < run->plan->steps.size(); ++j) {
      const auto& after = run->plan->steps[j].after;
      if (std::find(after.begin(), after.end(), i) != after.end() && --run->waiting_on[j] == 0)
        ready.push_back(static_cast<int>(j));
    }
    all_done = --run->remaining == 0;
  }
  for (int j : ready) StartStep(run, j);
  if (all_done) Finish(run, Status::Ok());
}

// Whether step i runs: its conditions hold and every tensor it reads exists. Called with run->mu held.
Result<bool> ShouldRun(const EnsembleModelVersion::Run& run, const EnsembleStep& s) {
  for (const auto& [model_in, tensor] : s.input_map) {
    const bool optional = std::find(s.optional_inputs.begin(), s.optional_inputs.end(), model_in) != s.optional_inputs.end();
    if (tensor != kTraceTensor && !optional && !run.tensors.count(tensor)) return false;  // produced by a skipped step
  }
  for (const auto& c : s.conditions) {
    auto it = run.tensors.find(c.tensor());
    if (it == run.tensors.end()) return false;
    auto holds = EvaluateCondition(c, it->second);
    if (!holds.ok()) return holds.status();
    if (!*holds) return false;
  }
  return true;
}

void SkipStep(const RunPtr& run, int i) {
  const EnsembleStep& s = run->plan->steps[i];
  run->shared->skipped[i].Increment();
  {
    std::lock_guard<std::mutex> lock(run->mu);
    Trace(*run, i, "skipped", "", Clock::duration(0));
    int64_t batch = 1;
    if (!run->request.inputs.empty() && run->request.inputs[0].tensor.rank() > 0)
      batch = run->request.inputs[0].tensor.dim(0);
    for (const auto& [tensor, value] : s.skipped_value) {
      auto t = FilledOutput(*run->config, tensor, value, batch);
      if (t.ok()) run->tensors[tensor] = std::move(t).value();
    }
  }
  StepEnded(run, i);
}

void OnStepAnswer(const RunPtr& run, int i, Clock::time_point t0, Result<serve::InferResponse> r) {
  const EnsembleStep& s = run->plan->steps[i];
  run->shared->seconds[i].Observe(std::chrono::duration<double>(Clock::now() - t0).count());
  if (!r.ok()) {
    run->shared->failed[i].Increment();
    return Finish(run, Status(r.status().code(), "ensemble '" + run->name + "' " + s.label + ": " + r.status().message()));
  }
  run->shared->ran[i].Increment();
  {
    std::lock_guard<std::mutex> lock(run->mu);
    Trace(*run, i, "ran", r.value().model_version, Clock::now() - t0);
    for (auto& out : r.value().outputs) {
      auto it = s.output_map.find(out.name);
      if (it != s.output_map.end()) run->tensors[it->second] = std::move(out.tensor);
    }
  }
  StepEnded(run, i);
}

void StartStep(const RunPtr& run, int i) {
  const EnsembleStep& s = run->plan->steps[i];
  serve::InferRequest req;
  Result<bool> go = false;
  {
    std::lock_guard<std::mutex> lock(run->mu);
    if (run->finished) return;
    go = ShouldRun(*run, s);
    if (go.ok() && *go) {
      req.model_name = s.model;
      if (s.version > 0) req.model_version = std::to_string(s.version);
      req.id = run->request.id;
      req.parameters = run->request.parameters;
      for (const auto& [model_in, tensor] : s.input_map) {
        if (tensor == kTraceTensor) {
          req.inputs.push_back({model_in, TraceTensor(*run, s), {}});
        } else if (auto t = run->tensors.find(tensor); t != run->tensors.end()) {
          req.inputs.push_back({model_in, t->second, {}});
        }  // else: an optional input whose producer was skipped
      }
      for (const auto& [model_out, tensor] : s.output_map) req.outputs.push_back({model_out, std::nullopt, {}});
    }
  }
  if (!go.ok())
    return Finish(run, Status(go.status().code(), "ensemble '" + run->name + "' " + s.label + ": " + go.status().message()));
  if (!*go) return SkipStep(run, i);
  const auto t0 = Clock::now();
  serve::RequestContext ctx;
  ctx.cancelled = run->context.cancelled;
  ctx.protocol = run->context.protocol;
  Status sent = serve::InferOnServingVersion(
      *run->models, s.model, s.version, std::move(req), std::move(ctx),
      [run, i, t0](Result<serve::InferResponse> r) { OnStepAnswer(run, i, t0, std::move(r)); });
  if (!sent.ok()) OnStepAnswer(run, i, t0, sent);
}

}  // namespace

EnsembleModelVersion::EnsembleModelVersion(std::string name, int64_t version)
    : name_(std::move(name)), version_(version), shared_(std::make_shared<Shared>()) {}

EnsembleModelVersion::~EnsembleModelVersion() = default;

Result<std::shared_ptr<EnsembleModelVersion>> EnsembleModelVersion::Load(const serve::VersionLoadRequest& r,
                                                                         const EnsembleMetricFamilies& metrics) {
  if (r.models == nullptr) return Status::Internal("an ensemble needs the server's models to load");
  serve::ModelConfig config = r.partial_config;
  IL_RETURN_IF_ERROR(serve::ValidateCompleteModelConfig(config));
  if (config.input().empty() || config.output().empty())
    return Status::InvalidArgument("an ensemble declares its inputs and outputs (name, data_type, dims)");
  IL_ASSIGN_OR_RETURN(EnsemblePlan plan, PlanEnsemble(config, *r.models));
  auto v = std::make_shared<EnsembleModelVersion>(r.model_name, r.version);
  v->config_ = std::move(config);
  v->plan_ = std::move(plan);
  v->models_ = r.models;
  Shared& sh = *v->shared_;
  for (const auto& s : v->plan_.steps) {
    auto counter = [&](const char* outcome) {
      if (metrics.steps == nullptr) return serve::Counter();
      auto c = metrics.steps->WithLabels({r.model_name, s.label, outcome});
      return c.ok() ? *c : serve::Counter();
    };
    sh.ran.push_back(counter("ran"));
    sh.skipped.push_back(counter("skipped"));
    sh.failed.push_back(counter("failed"));
    serve::Histogram h;
    if (metrics.seconds) {
      auto x = metrics.seconds->WithLabels({r.model_name, s.label});
      if (x.ok()) h = *x;
    }
    sh.seconds.push_back(h);
  }
  if (metrics.requests) {
    auto x = metrics.requests->WithLabels({r.model_name});
    if (x.ok()) sh.request_seconds = *x;
  }
  return v;
}

std::vector<std::string> EnsembleModelVersion::Dependencies() const {
  std::vector<std::string> out;
  for (const auto& s : plan_.steps) out.push_back(s.model);
  return out;
}

Status EnsembleModelVersion::CheckRequest(const serve::InferRequest& r) const {
  std::set<std::string> given;
  for (const auto& in : r.inputs) {
    const serve::configpb::ModelInput* spec = nullptr;
    for (const auto& c : config_.input())
      if (c.name() == in.name) spec = &c;
    if (spec == nullptr) return Status::InvalidArgument("ensemble '" + name_ + "' has no input '" + in.name + "'");
    const DataType want = serve::FromConfigDataType(spec->data_type());
    if (in.tensor.dtype() != want)
      return Status::InvalidArgument("input '" + in.name + "' is " + DataTypeName(in.tensor.dtype()) + ", expected " +
                                     DataTypeName(want));
    if (!given.insert(in.name).second) return Status::InvalidArgument("input '" + in.name + "' is given twice");
  }
  for (const auto& c : config_.input())
    if (!c.optional() && !given.count(c.name())) return Status::InvalidArgument("input '" + c.name() + "' is missing");
  for (const auto& o : r.outputs) {
    bool known = false;
    for (const auto& c : config_.output()) known |= c.name() == o.name;
    if (!known) return Status::InvalidArgument("ensemble '" + name_ + "' has no output '" + o.name + "'");
  }
  return Status::Ok();
}

bool EnsembleModelVersion::Infer(serve::InferRequest&& request, serve::RequestContext&& context,
                                 serve::InferCallback&& done, serve::AdmissionTicket&& ticket) {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (draining_.load()) return false;
    ++shared_->inflight;
  }
  auto run = std::make_shared<Run>();
  run->plan = &plan_;
  run->name = name_;
  run->version = version_;
  run->config = &config_;
  run->models = models_;
  run->shared = shared_;
  run->keep = std::static_pointer_cast<const EnsembleModelVersion>(shared_from_this());
  run->start = context.received;
  run->done = std::move(done);
  run->ticket = std::move(ticket);
  if (Status st = CheckRequest(request); !st.ok()) {
    run->request = std::move(request);
    Finish(run, st);
    return true;
  }
  for (const auto& in : request.inputs) run->tensors[in.name] = in.tensor;
  run->request = std::move(request);
  run->context = std::move(context);
  run->remaining = static_cast<int>(plan_.steps.size());
  run->waiting_on.resize(plan_.steps.size());
  std::vector<int> roots;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    run->waiting_on[i] = static_cast<int>(plan_.steps[i].after.size());
    if (plan_.steps[i].after.empty()) roots.push_back(static_cast<int>(i));
  }
  for (int i : roots) StartStep(run, i);
  return true;
}

void EnsembleModelVersion::Drain() {
  std::unique_lock<std::mutex> lock(shared_->mu);
  draining_.store(true);
  shared_->idle.wait(lock, [&] { return shared_->inflight == 0; });
}

serve::ModelMetadata EnsembleModelVersion::Metadata() const {
  return serve::MetadataFromConfig(name_, version_, "ensemble", config_);
}

serve::ModelStatistics EnsembleModelVersion::Statistics() const { return shared_->stats.Snapshot(name_, version_, 0); }

}  // namespace inferloop::backends
