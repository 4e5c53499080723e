#include "serve/served_model_version.h"

#include "base/status_macros.h"
#include "serve/adaptive_config.h"
#include "serve/batcher_config.h"
#include "serve/version_statistics.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "serve/model_config_completion.h"
#include "serve/model_warmup.h"
#include "base/process_memory.h"
#include "serve/request_validation.h"

namespace inferloop::serve {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

struct ServedModelVersion::Stats {
  mutable std::mutex mu;
  ModelStatistics s;
  std::map<uint64_t, BatchStat> batches;
};

namespace {

// How batches of the model are assembled (batch_assembly.h), from its completed config.
BatchInputLayout BatchInputLayoutOf(const ModelConfig& c) {
  BatchInputLayout layout;
  layout.model_batches = c.max_batch_size() > 0;
  for (const auto& in : c.input()) {
    layout.input_names.push_back(in.name());
    if (in.has_reshape()) layout.reshapes[in.name()] = Shape(std::vector<int64_t>(in.reshape().shape().begin(), in.reshape().shape().end()));
  }
  std::vector<int> preferred;
  if (c.has_dynamic_batching())
    preferred.assign(c.dynamic_batching().preferred_batch_size().begin(), c.dynamic_batching().preferred_batch_size().end());
  layout.buckets = BatchBuckets(c.max_batch_size(), preferred);
  return layout;
}

// Failures that say the model (or inferloop) is broken, as opposed to a bad request: only these
// count towards the circuit breaker, so no client can trip it for everyone with bad data.
bool CountsAsModelFailure(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInternal:
    case StatusCode::kUnimplemented:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kNotFound:
      return true;
    default:
      return false;
  }
}

}  // namespace

// Forwards the batcher's events to the metrics sink.
class ServedModelVersion::Observer : public BatcherObserver {
 public:
  Observer(ServedModelVersion* owner, VersionMetricsSink* sink) : owner_(owner), sink_(sink) {}
  // A request the batcher answered without computing it (timeout, cancelled, shutdown).
  void OnDropped(const PendingRequest& request, const Status& why) override {
    owner_->RecordUnanswered(why, request.context.received, Clock::now() - request.enqueued);
  }
  void OnQueueDepth(int64_t depth) override {
    if (sink_) sink_->OnQueueDepth(depth);
  }
  void OnDispatch(const Batch& batch) override {
    if (sink_) sink_->OnBatch(batch.rows, batch.reason);
  }

 private:
  ServedModelVersion* owner_;
  VersionMetricsSink* sink_;
};

void ServedModelVersion::RecordUnanswered(const Status& why, std::chrono::steady_clock::time_point received,
                                          std::chrono::nanoseconds queued) {
  const nanoseconds total = Clock::now() - received;
  {
    std::lock_guard<std::mutex> lock(stats_->mu);
    AddDuration(stats_->s.fail, total);
  }
  if (metrics_) metrics_->OnRequestDone(why, queued, nanoseconds(0), total);
  load_window_.RecordDone(false, 1, total);
}

ServedModelVersion::ServedModelVersion(std::string name, int64_t version)
    : name_(std::move(name)), version_(version), stats_(std::make_unique<Stats>()) {}

ServedModelVersion::~ServedModelVersion() {
  // The batcher's workers call back into this object: stop them before the members go.
  batcher_.reset();
  adaptive_.reset();
}

Result<std::shared_ptr<ServedModelVersion>> ServedModelVersion::Load(const std::string& model_name, int64_t version,
                                                                     const std::string& model_path,
                                                                     const std::string& model_dir,
                                                                     const ModelConfig& partial_config,
                                                                     VersionLoadOptions options) {
  auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  const int64_t heap_before = HeapBytesInUse();
  auto v = std::make_shared<ServedModelVersion>(model_name, version);
  v->model_dir_ = model_dir;
  progress("creating session");
  // One memory plan per distinct input shape: a batching model sees every batch size from 1 to
  // max_batch_size, so keep a plan for each (plus a few other shapes), else plans are rebuilt
  // on every batch (measured: DLRM at 64 clients spent most of its time re-planning).
  const int max_batch = partial_config.max_batch_size() > 0 ? partial_config.max_batch_size() : kDefaultMaxBatchSize;
  options.session.max_cached_shape_plans = std::max(options.session.max_cached_shape_plans, max_batch + 8);
  // The model's own precision overrides the server's (--precision):
  //   parameters { key: "precision" value: { string_value: "bf16" } }
  if (auto it = partial_config.parameters().find("precision"); it != partial_config.parameters().end()) {
    auto precision = ParsePrecision(it->second.string_value());
    if (!precision.ok())
      return Status::InvalidArgument("config.pbtxt of '" + model_name + "': parameter precision: " + precision.status().message());
    options.session.precision = *precision;
  }
  auto objectives = ReadAdaptiveObjectives(partial_config);
  if (!objectives.ok())
    return Status(objectives.status().code(), "config.pbtxt of '" + model_name + "': " + objectives.status().message());
  v->objectives_ = std::move(objectives).value();
  const AdaptiveObjectives& adaptive = v->objectives_;
  if (adaptive.wants_variants) {
    // The version's own session is the most precise variant the adaptive block allows.
    IL_ASSIGN_OR_RETURN(options.session.precision, ParsePrecision(adaptive.variants.front()));
  }
  auto session = Session::CreateFromFile(model_path, options.session);
  if (!session.ok())
    return Status(session.status().code(), "loading " + model_path + ": " + session.status().message());
  v->session_ = std::move(session).value();
  auto config = CompleteConfigFromModel(partial_config, *v->session_);
  if (!config.ok()) return Status(config.status().code(), "config.pbtxt of '" + model_name + "': " + config.status().message());
  v->config_ = std::move(config).value();
  v->layout_ = BatchInputLayoutOf(v->config_);
  for (const auto& out : v->config_.output()) v->output_names_.push_back(out.name());
  // Per-model limits in config.pbtxt override the server's per-model defaults:
  //   parameters { key: "max_inflight_requests" value: { string_value: "64" } }
  //   parameters { key: "max_inflight_bytes" value: { string_value: "67108864" } }
  for (const auto& [key, field] :
       {std::pair<const char*, int64_t AdmissionLimits::*>{"max_inflight_requests", &AdmissionLimits::max_inflight_requests},
        {"max_inflight_bytes", &AdmissionLimits::max_inflight_bytes}}) {
    auto it = v->config_.parameters().find(key);
    if (it == v->config_.parameters().end()) continue;
    const std::string& text = it->second.string_value();
    int64_t value = -1;
    auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || value < 0)
      return Status::InvalidArgument("config.pbtxt of '" + model_name + "': parameter " + key +
                                     " must be a non-negative integer, got \"" + text + "\"");
    options.limits.*field = value;
  }
  v->gate_ = AdmissionGate::Create("model '" + model_name + "' version " + std::to_string(version), options.limits);
  v->metrics_ = options.metrics;
  v->inline_slots_ = options.inline_slots;
  if (options.cpu_share) {
    auto flow = options.cpu_share->Register(model_name + ":" + std::to_string(version), adaptive.cpu_share);
    if (!flow.ok()) return Status(flow.status().code(), "config.pbtxt of '" + model_name + "': " + flow.status().message());
    v->cpu_flow_ = std::move(flow).value();
    v->cpu_share_on_ = true;
  }

  progress("warming up");
  auto warm = RunModelWarmup(*v->session_, v->config_, v->model_dir_, v->layout_.buckets, v->output_names_);
  if (!warm.ok()) return Status(warm.status().code(), "warmup of '" + model_name + "': " + warm.status().message());
  if (warm.value()) v->mean_execution_ns_.store(warm.value()->count());

  BatcherOptions bo = BatcherOptionsOf(model_name, version, v->config_);
  const int configured_instances = bo.instance_count;
  if (adaptive.has_slo) {
    // The controller may run more instances than configured (adaptive.max_instances): the
    // workers exist from the start, the extra ones idle until switched on.
    bo.instance_count = std::max<int>(bo.instance_count, static_cast<int>(adaptive.max_instances));
  }
  v->instance_capacity_ = bo.instance_count;
  v->run_outputs_.resize(static_cast<size_t>(bo.instance_count));
  v->run_scratch_.resize(static_cast<size_t>(bo.instance_count));
  v->run_variant_.assign(static_cast<size_t>(bo.instance_count), 0);
  v->variants_.push_back({PrecisionName(v->session_->precision()), nullptr, 0});
  v->observer_ = std::make_unique<Observer>(v.get(), v->metrics_.get());
  std::weak_ptr<ServedModelVersion> weak = v;
  ServedModelVersion* self = v.get();
  v->batcher_ = std::make_unique<DynamicBatcher>(
      bo, [self](int instance, Batch batch) { self->ExecuteQueuedBatch(instance, std::move(batch)); }, v->observer_.get());
  if (configured_instances < bo.instance_count)
    v->batcher_->SetTuning(bo.preferred_batch_sizes, bo.max_queue_delay, configured_instances);
  v->load_heap_bytes_ = std::max<int64_t>(0, HeapBytesInUse() - heap_before);
  progress("ready");
  return v;
}

bool ServedModelVersion::Infer(InferRequest&& request, RequestContext&& context, InferCallback&& done,
                               AdmissionTicket&& server_ticket) {
  auto fail = [&](Status s) {
    RecordUnanswered(s, context.received, nanoseconds(0));
    done(std::move(s));
  };
  // Held across the draining check and Enqueue: once Drain() has set draining_, no request gets
  // into the batcher, and every request that passed the check is queued before Drain waits.
  std::shared_lock<std::shared_mutex> drain_lock(drain_mu_);
  if (draining_) return false;
  if (!breaker_.Accepting()) {
    fail(Status::Unavailable("model '" + name_ + "' version " + std::to_string(version_) +
                             " is failing and temporarily not taking requests (" + NotReadyReason() + ")"));
    return true;
  }
  auto ticket = gate_->TryAdmit(context.request_bytes);
  if (!ticket.ok()) {
    fail(ticket.status());
    return true;
  }
  auto p = std::make_unique<PendingRequest>();
  if (Status st = ValidateRequest(request, name_, config_, layout_.input_names, output_names_, *p); !st.ok()) {
    fail(st);
    return true;
  }
  // The tickets live as long as the request (PendingRequest::Answer releases them just before
  // `done` runs).
  const auto received = context.received;
  p->request = std::move(request);
  p->context = std::move(context);
  p->done = std::move(done);
  p->server_ticket = std::move(server_ticket);
  p->model_ticket = std::move(ticket).value();
  load_window_.RecordArrival(p->rows);
  if (inline_slots_ && mean_execution_ns_.load(std::memory_order_relaxed) < kInlineMaxExecution.count() * 1000) {
    // A fast model, nothing queued, an instance idle: run here instead of handing over to a
    // worker thread and back (bench/serve_bench.py measures the difference).
    bool ran = false;
    if (inline_slots_->fetch_sub(1) > 0) ran = TryRunInline(p);
    inline_slots_->fetch_add(1);
    if (ran) return true;
  }
  Status st = batcher_->TryEnqueue(p);
  if (!st.ok()) {
    // Refused (queue full, bad priority): the request is still ours to answer.
    RecordUnanswered(st, received, nanoseconds(0));
    p->Answer(std::move(st));
  }
  return true;
}

// When a group's phases ended: assembly (gather, reshape, padding), the model run, the split.
struct ServedModelVersion::GroupTimes {
  Clock::time_point start, assembled, ran, split;
};

bool ServedModelVersion::TryRunInline(std::unique_ptr<PendingRequest>& p) {
  if (!cpu_share_on_) return batcher_->TryRunInline(p);
  // Only with a slot free now: the io thread never waits for one (else the request is queued).
  std::optional<CpuShareScheduler::Grant> grant = cpu_flow_.TryAcquire();
  if (!grant) return false;
  const auto start = Clock::now();
  const bool ran = batcher_->TryRunInline(p, [this](int instance, Batch batch) { ExecuteBatch(instance, std::move(batch)); });
  const nanoseconds took = ran ? std::chrono::duration_cast<nanoseconds>(Clock::now() - start) : nanoseconds(0);
  grant->Release(took);
  if (ran) ReportCpuShare(*grant, took);
  return ran;
}

void ServedModelVersion::ExecuteQueuedBatch(int instance, Batch batch) {
  if (!cpu_share_on_) return ExecuteBatch(instance, std::move(batch));
  // Cancelled only while this version is being destroyed (its batcher is gone by then): run
  // without a slot rather than fail requests.
  auto grant = cpu_flow_.Acquire();
  const auto start = Clock::now();
  for (auto& p : batch.requests) p->dispatched = start;  // the wait for a slot counts as queueing
  ExecuteBatch(instance, std::move(batch));
  if (!grant.ok()) return;
  const auto took = std::chrono::duration_cast<nanoseconds>(Clock::now() - start);
  grant->Release(took);
  ReportCpuShare(*grant, took);
}

void ServedModelVersion::ReportCpuShare(const CpuShareScheduler::Grant& grant, nanoseconds charged) {
  if (metrics_) metrics_->OnCpuShare(grant.waited(), charged);
}

void ServedModelVersion::ExecuteBatch(int instance, Batch batch) {
  // Every request of a batch is dispatched at once (the batcher, or the wait for a CPU-share slot,
  // stamped them just now): no clock read of its own.
  const auto dispatched = batch.requests.empty() ? Clock::now() : batch.requests.front()->dispatched;
  AnswerCancelled(batch);
  if (batch.requests.empty()) return;
  std::vector<size_t>& all = run_scratch_[static_cast<size_t>(instance)].members;
  all.resize(batch.requests.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!breaker_.AllowRun()) {
    for (auto& p : batch.requests)
      Finish(*p, Status::Unavailable("model '" + name_ + "' is failing and temporarily not taking requests (" +
                                     NotReadyReason() + ")"),
             nanoseconds(0));
    return;
  }
  Status st = RunGroup(instance, batch, all, dispatched);
  if (!st.ok() && all.size() > 1 && st.code() == StatusCode::kInvalidArgument) {
    // One request's data may have failed the whole batch (e.g. an index out of range): run each
    // alone so only the bad ones fail.
    RunEachAlone(instance, batch, dispatched);
    return;
  }
  if (!st.ok()) {
    for (auto& p : batch.requests) Finish(*p, st, Clock::now() - dispatched);
  }
  breaker_.Record(CountsAsModelFailure(st), st.message());
}

void ServedModelVersion::AnswerCancelled(Batch& batch) {
  // A client that went away after dispatch: answer it now rather than compute for nobody.
  const bool any_cancelled = std::any_of(batch.requests.begin(), batch.requests.end(),
                                         [](const auto& p) { return p->context.IsCancelled(); });
  if (!any_cancelled) return;  // the batch as it is (no vector built)
  std::vector<std::unique_ptr<PendingRequest>> live;
  for (auto& p : batch.requests) {
    if (p->context.IsCancelled()) {
      Finish(*p, Status(StatusCode::kCancelled, "the client went away before the request was computed"), nanoseconds(0));
    } else {
      live.push_back(std::move(p));
    }
  }
  batch.requests = std::move(live);
}

void ServedModelVersion::RunEachAlone(int instance, Batch& batch, std::chrono::steady_clock::time_point dispatched) {
  bool any_model_failure = false;
  std::string model_failure;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    Status one = RunGroup(instance, batch, {i}, Clock::now());
    if (!one.ok()) {
      if (CountsAsModelFailure(one)) {
        any_model_failure = true;
        model_failure = one.message();
      }
      Finish(*batch.requests[i], one, Clock::now() - dispatched);
    }
  }
  breaker_.Record(any_model_failure, "requests of a batch failed: " + model_failure);
}

Session& ServedModelVersion::ActiveSession(int instance) {
  const int v = std::clamp(active_variant_.load(std::memory_order_relaxed), 0, variant_count() - 1);
  int& last = run_variant_[static_cast<size_t>(instance)];
  if (last != v) {
    // Another variant's outputs: let the new session allocate its own.
    run_outputs_[static_cast<size_t>(instance)].clear();
    last = v;
  }
  return variant_session(v);
}

Status ServedModelVersion::RunModel(int instance, const std::vector<NamedValue>& inputs) {
  // The instance's outputs are kept across runs: RunInto computes into their buffers where
  // nothing else holds them any more (a response still being sent keeps its own).
  Session& session = ActiveSession(instance);
  std::vector<NamedValue>& outputs = run_outputs_[static_cast<size_t>(instance)];
  Status st;
  try {
    st = session.RunInto(inputs, outputs, RunOptions{output_names_});
  } catch (const std::exception& e) {
    st = Status::Internal(std::string("model run threw: ") + e.what());
  }
  if (!st.ok()) outputs.clear();  // may hold partial results: the next run starts afresh
  return st;
}

Status ServedModelVersion::RunGroup(int instance, Batch& batch, const std::vector<size_t>& members,
                                    Clock::time_point start) {
  RunScratch& scratch = run_scratch_[static_cast<size_t>(instance)];
  // Whatever way this returns, the scratch lets go of the requests' and the run's tensors.
  struct ClearTensors {
    RunScratch& s;
    ~ClearTensors() {
      s.assembled.Clear();
      for (auto& [name, value] : s.inputs) value = Value();
      s.out_tensors.clear();
      for (auto& v : s.per_request) v.clear();
      s.group.clear();
    }
  } clear{scratch};
  scratch.group.clear();
  scratch.group_rows.clear();
  for (size_t i : members) {
    scratch.group.push_back(&batch.requests[i]->request);
    scratch.group_rows.push_back(batch.requests[i]->rows);
  }
  GroupTimes t;
  t.start = start;
  AssembledBatch& assembled = scratch.assembled;
  IL_RETURN_IF_ERROR(AssembleBatchInputsInto(scratch.group, scratch.group_rows, layout_, assembled));
  std::vector<NamedValue>& inputs = scratch.inputs;
  inputs.resize(assembled.names.size());
  for (size_t i = 0; i < assembled.names.size(); ++i) {
    inputs[i].first.assign(assembled.names[i]);
    inputs[i].second = Value(assembled.inputs[i]);
  }
  t.assembled = Clock::now();
  Status run = RunModel(instance, inputs);
  t.ran = Clock::now();
  if (!run.ok()) return run;
  scratch.out_tensors.clear();
  for (auto& [name, value] : run_outputs_[static_cast<size_t>(instance)]) {
    if (!value.is_tensor()) return Status::Unimplemented("output '" + name + "' is not a tensor");
    scratch.out_tensors.push_back(value.tensor());
  }
  IL_RETURN_IF_ERROR(SplitAssembledOutputsInto(scratch.out_tensors, assembled, output_names_, scratch.per_request));
  t.split = Clock::now();
  RecordBatch(assembled.rows, t);
  for (size_t k = 0; k < members.size(); ++k) Respond(*batch.requests[members[k]], scratch.per_request[k], t);
  return Status::Ok();
}

void ServedModelVersion::RecordBatch(int64_t rows, const GroupTimes& t) {
  {
    // Moving average (1/8 weight) of how long a batch takes, for the inline decision.
    const int64_t took = std::chrono::duration_cast<nanoseconds>(t.split - t.start).count();
    const int64_t old = mean_execution_ns_.load(std::memory_order_relaxed);
    mean_execution_ns_.store(old == INT64_MAX ? took : old + (took - old) / 8, std::memory_order_relaxed);
    load_window_.RecordBatch(nanoseconds(took));
  }
  std::lock_guard<std::mutex> lock(stats_->mu);
  auto& s = stats_->s;
  s.execution_count += 1;
  s.inference_count += static_cast<uint64_t>(rows);
  BatchStat& bs = stats_->batches[static_cast<uint64_t>(rows)];
  bs.batch_size = static_cast<uint64_t>(rows);
  AddDuration(bs.compute_input, t.assembled - t.start);
  AddDuration(bs.compute_infer, t.ran - t.assembled);
  AddDuration(bs.compute_output, t.split - t.ran);
}

void ServedModelVersion::Respond(PendingRequest& p, const std::vector<Tensor>& outputs, const GroupTimes& t) {
  InferResponse resp;
  resp.model_name = name_;
  resp.model_version = std::to_string(version_);
  resp.id = p.request.id;
  resp.outputs.reserve(output_names_.size());
  for (size_t o = 0; o < output_names_.size(); ++o) {
    bool wanted = p.request.outputs.empty();
    for (const auto& ro : p.request.outputs) wanted |= ro.name == output_names_[o];
    if (!wanted) continue;
    InferOutput out;
    out.name = output_names_[o];
    out.tensor = outputs[o];
    resp.outputs.push_back(std::move(out));
  }
  {
    std::lock_guard<std::mutex> lock(stats_->mu);
    auto& s = stats_->s;
    AddDuration(s.queue, p.dispatched - p.enqueued);
    AddDuration(s.compute_input, t.assembled - t.start);
    AddDuration(s.compute_infer, t.ran - t.assembled);
    AddDuration(s.compute_output, t.split - t.ran);
  }
  Finish(p, std::move(resp), t.split - t.start, t.split);
}

void ServedModelVersion::Finish(PendingRequest& p, Result<InferResponse> result, nanoseconds compute,
                                std::optional<Clock::time_point> answered) {
  const auto now = answered ? *answered : Clock::now();
  const nanoseconds queue = p.dispatched - p.enqueued;
  const nanoseconds total = now - p.context.received;
  const Status st = result.ok() ? Status::Ok() : result.status();
  {
    std::lock_guard<std::mutex> lock(stats_->mu);
    if (st.ok()) {
      AddDuration(stats_->s.success, total);
      stats_->s.last_inference_ms = NowEpochMs();
    } else {
      AddDuration(stats_->s.fail, total);
    }
  }
  if (metrics_) metrics_->OnRequestDone(st, queue, compute, total);
  load_window_.RecordDone(st.ok(), p.rows, total);
  p.Answer(std::move(result));
}

void ServedModelVersion::Drain() {
  {
    std::unique_lock<std::shared_mutex> lock(drain_mu_);
    draining_.store(true);
  }
  if (batcher_) batcher_->Drain();
}

ModelMetadata ServedModelVersion::Metadata() const {
  ModelMetadata m = MetadataFromConfig(name_, version_, "onnxruntime_onnx", config_);
  m.memory_bytes = MemoryBytes();
  return m;
}

ModelStatistics ServedModelVersion::Statistics() const {
  std::lock_guard<std::mutex> lock(stats_->mu);
  ModelStatistics s = stats_->s;
  s.name = name_;
  s.version = std::to_string(version_);
  for (const auto& [size, b] : stats_->batches) s.batch_stats.push_back(b);
  s.memory_bytes = MemoryBytes();
  return s;
}

int64_t ServedModelVersion::MemoryBytes() const {
  int64_t bytes = load_heap_bytes_;
  if (session_) bytes += static_cast<int64_t>(session_->memory_stats().arena_bytes_held);
  for (size_t i = 1; i < variants_.size(); ++i)
    bytes += variants_[i].memory_bytes + static_cast<int64_t>(variants_[i].session->memory_stats().arena_bytes_held);
  return bytes;
}

Status ServedModelVersion::AddVariant(std::string name, std::unique_ptr<Session> session, int64_t memory_bytes) {
  if (!session) return Status::InvalidArgument("variant '" + name + "' has no session");
  const auto& base_in = session_->inputs();
  const auto& base_out = session_->outputs();
  const auto& in = session->inputs();
  const auto& out = session->outputs();
  bool same = in.size() == base_in.size() && out.size() == base_out.size();
  for (size_t i = 0; same && i < in.size(); ++i) same = in[i].name == base_in[i].name && in[i].dtype == base_in[i].dtype;
  for (size_t i = 0; same && i < out.size(); ++i) same = out[i].name == base_out[i].name && out[i].dtype == base_out[i].dtype;
  if (!same)
    return Status::InvalidArgument("variant '" + name + "' of model '" + name_ +
                                   "' does not have the model's inputs and outputs (names and data types)");
  variants_.push_back({std::move(name), std::move(session), std::max<int64_t>(0, memory_bytes)});
  return Status::Ok();
}

void ServedModelVersion::SetVariant(int i) {
  active_variant_.store(std::clamp(i, 0, variant_count() - 1), std::memory_order_relaxed);
}

void ServedModelVersion::SetBatching(std::vector<int> preferred_batch_sizes, std::chrono::microseconds max_queue_delay,
                                     int instances) {
  if (batcher_) batcher_->SetTuning(std::move(preferred_batch_sizes), max_queue_delay, instances);
}

bool ServedModelVersion::Ready() const { return !draining_.load() && !breaker_.open(); }

std::string ServedModelVersion::NotReadyReason() const {
  if (draining_.load()) return "unloading";
  return breaker_.Describe();
}

std::chrono::steady_clock::duration ServedModelVersion::StallTime() const {
  return batcher_ ? batcher_->StallTime() : std::chrono::steady_clock::duration::zero();
}

int64_t ServedModelVersion::QueueDepth() const { return batcher_ ? batcher_->QueueDepth() : 0; }

void ServedModelVersion::ReleaseIdleMemory() {
  if (!session_) return;
  for (int i = 0; i < variant_count(); ++i) variant_session(i).Trim();
}

}  // namespace inferloop::serve
