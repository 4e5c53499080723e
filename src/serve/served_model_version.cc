#include "serve/served_model_version.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "serve/batch_assembly.h"
#include "serve/model_config_completion.h"
#include "serve/process_memory.h"

namespace inferloop::serve {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

struct ServedModelVersion::Stats {
  mutable std::mutex mu;
  ModelStatistics s;
  std::map<uint64_t, BatchStat> batches;
};

namespace {

uint64_t NowEpochMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

void Add(DurationStat& d, nanoseconds t, uint64_t n = 1) {
  d.count += n;
  d.ns += static_cast<uint64_t>(std::max<int64_t>(0, t.count())) * n;
}

std::string DimsString(const Shape& s) { return ShapeToString(s); }

std::string ConfigDimsString(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string s = "[";
  for (int i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// An unsigned integer request parameter, or an error naming it.
Result<std::optional<uint64_t>> UIntParam(const InferParameters& params, const char* name) {
  auto it = params.find(name);
  if (it == params.end()) return std::optional<uint64_t>();
  if (const auto* u = std::get_if<uint64_t>(&it->second)) return std::optional<uint64_t>(*u);
  if (const auto* i = std::get_if<int64_t>(&it->second)) {
    if (*i < 0) return Status::InvalidArgument(std::string("parameter '") + name + "' must not be negative");
    return std::optional<uint64_t>(static_cast<uint64_t>(*i));
  }
  return Status::InvalidArgument(std::string("parameter '") + name + "' must be an unsigned integer");
}

QueuePolicy ToQueuePolicy(const configpb::ModelQueuePolicy& p) {
  QueuePolicy q;
  q.max_queue_size = p.max_queue_size();
  q.default_timeout = std::chrono::microseconds(p.default_timeout_microseconds());
  q.allow_timeout_override = p.allow_timeout_override();
  q.timeout_action =
      p.timeout_action() == configpb::ModelQueuePolicy::DELAY ? TimeoutAction::kDelay : TimeoutAction::kReject;
  return q;
}

// Values for one warmup input: zeros, random values, or a file's raw bytes.
Result<Tensor> WarmupTensor(const std::string& model_dir, const std::string& input_name,
                            const configpb::ModelWarmup::Input& in, DataType dtype, Shape shape, uint32_t seed) {
  if (dtype == DataType::kUndefined || dtype == DataType::kString) {
    if (dtype == DataType::kString) {
      int64_t n = ShapeElementCount(shape);
      if (n < 0) return Status::InvalidArgument("warmup input '" + input_name + "': bad shape");
      return Tensor::FromStrings(shape, std::vector<std::string>(static_cast<size_t>(n)));
    }
    return Status::InvalidArgument("warmup input '" + input_name + "': no data type");
  }
  auto t = Tensor::Create(dtype, shape);
  if (!t.ok()) return t.status();
  Tensor tensor = std::move(t).value();
  if (in.input_data_type_case() == configpb::ModelWarmup::Input::kRandomData) {
    std::mt19937 rng(seed);
    auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
    if (dtype == DataType::kFloat) {
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (int64_t i = 0; i < tensor.size(); ++i) tensor.data<float>()[i] = dist(rng);
    } else if (dtype == DataType::kBool) {
      for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = rng() & 1;
    } else if (dtype == DataType::kInt64 || dtype == DataType::kInt32) {
      // Small non-negative integers: valid as indices for the embedding tables models take.
      for (int64_t i = 0; i < tensor.size(); ++i) {
        if (dtype == DataType::kInt64) tensor.data<int64_t>()[i] = rng() % 2;
        else tensor.data<int32_t>()[i] = rng() % 2;
      }
    } else {
      for (size_t i = 0; i < tensor.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(rng() & 0x3f);
    }
  } else if (in.input_data_type_case() == configpb::ModelWarmup::Input::kInputDataFile) {
    const std::string& file = in.input_data_file();
    if (file.empty() || file.find("..") != std::string::npos || file[0] == '/')
      return Status::InvalidArgument("warmup input '" + input_name + "': input_data_file must be a file name inside " +
                                     model_dir + "/warmup/");
    const std::string path = model_dir + "/warmup/" + file;
    std::ifstream f(path, std::ios::binary);
    if (!f) return Status::NotFound("warmup input '" + input_name + "': cannot read " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    const std::string data = ss.str();
    if (data.size() != tensor.nbytes())
      return Status::InvalidArgument("warmup input '" + input_name + "': " + path + " has " +
                                     std::to_string(data.size()) + " bytes, the input needs " +
                                     std::to_string(tensor.nbytes()));
    std::memcpy(tensor.raw_data(), data.data(), data.size());
  }
  return tensor;
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
    Add(stats_->s.fail, total);
  }
  if (metrics_) metrics_->OnRequestDone(why, queued, nanoseconds(0), total);
}

ServedModelVersion::ServedModelVersion(std::string name, int64_t version)
    : name_(std::move(name)), version_(version), stats_(std::make_unique<Stats>()) {}

ServedModelVersion::~ServedModelVersion() {
  // The batcher's workers call back into this object: stop them before the members go.
  batcher_.reset();
}

Result<std::shared_ptr<ServedModelVersion>> ServedModelVersion::Load(const std::string& model_name, int64_t version,
                                                                     const std::string& model_path,
                                                                     const std::string& model_dir,
                                                                     const ModelConfig& partial_config,
                                                                     VersionLoadOptions options) {
  auto progress = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  const int64_t rss_before = ResidentMemoryBytes();
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
  auto session = Session::CreateFromFile(model_path, options.session);
  if (!session.ok())
    return Status(session.status().code(), "loading " + model_path + ": " + session.status().message());
  v->session_ = std::move(session).value();
  auto config = CompleteConfigFromModel(partial_config, *v->session_);
  if (!config.ok()) return Status(config.status().code(), "config.pbtxt of '" + model_name + "': " + config.status().message());
  v->config_ = std::move(config).value();
  for (const auto& in : v->config_.input()) v->input_names_.push_back(in.name());
  for (const auto& out : v->config_.output()) v->output_names_.push_back(out.name());
  {
    std::vector<int> preferred;
    if (v->config_.has_dynamic_batching())
      preferred.assign(v->config_.dynamic_batching().preferred_batch_size().begin(),
                       v->config_.dynamic_batching().preferred_batch_size().end());
    v->buckets_ = BatchBuckets(v->config_.max_batch_size(), preferred);
  }
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

  progress("warming up");
  if (Status st = v->Warmup(); !st.ok()) return Status(st.code(), "warmup of '" + model_name + "': " + st.message());

  BatcherOptions bo;
  bo.name = model_name + ":" + std::to_string(version);
  const ModelConfig& c = v->config_;
  if (c.has_dynamic_batching()) {
    const auto& db = c.dynamic_batching();
    bo.max_batch_size = c.max_batch_size();
    for (int p : db.preferred_batch_size()) bo.preferred_batch_sizes.push_back(p);
    bo.max_queue_delay = std::chrono::microseconds(db.max_queue_delay_microseconds());
    bo.priority_levels = db.priority_levels() > 0 ? static_cast<uint32_t>(db.priority_levels()) : 1;
    bo.default_priority_level =
        db.default_priority_level() > 0 ? static_cast<uint32_t>(db.default_priority_level()) : bo.priority_levels;
    if (db.priority_levels() == 0) bo.default_priority_level = 1;
    bo.default_policy = ToQueuePolicy(db.default_queue_policy());
    for (const auto& [level, policy] : db.priority_queue_policy())
      bo.level_policies[static_cast<uint32_t>(level)] = ToQueuePolicy(policy);
  }
  int instances = 0;
  for (const auto& g : c.instance_group()) instances += std::max(1, g.count());
  bo.instance_count = std::max(1, instances);
  v->observer_ = std::make_unique<Observer>(v.get(), v->metrics_.get());
  std::weak_ptr<ServedModelVersion> weak = v;
  ServedModelVersion* self = v.get();
  v->batcher_ = std::make_unique<DynamicBatcher>(
      bo, [self](int instance, Batch batch) { self->ExecuteBatch(instance, std::move(batch)); }, v->observer_.get());
  v->load_rss_bytes_ = std::max<int64_t>(0, ResidentMemoryBytes() - rss_before);
  progress("ready");
  return v;
}

Status ServedModelVersion::Warmup() {
  const bool batching = config_.max_batch_size() > 0;
  std::vector<configpb::ModelWarmup> samples(config_.model_warmup().begin(), config_.model_warmup().end());
  if (samples.empty()) {
    // No warmup configured: one zero sample per batch bucket (batch 1 without batching) when
    // every input's size is known, so the first request does not pay for planning and tuning.
    bool known = true;
    for (const auto& in : config_.input())
      for (int64_t d : (in.has_reshape() ? in.dims() : in.dims())) known &= d >= 0;
    if (!known) return Status::Ok();
    // Every batch size requests will run at (the buckets), so none is planned on a request.
    std::vector<uint32_t> sizes = {1};
    if (batching) {
      sizes.clear();
      for (int64_t b : buckets_) sizes.push_back(static_cast<uint32_t>(b));
    }
    for (uint32_t b : sizes) {
      configpb::ModelWarmup w;
      w.set_name("zeros_b" + std::to_string(b));
      w.set_batch_size(b);
      for (const auto& in : config_.input()) {
        configpb::ModelWarmup::Input wi;
        wi.set_data_type(in.data_type());
        *wi.mutable_dims() = in.dims();
        wi.set_zero_data(true);
        (*w.mutable_inputs())[in.name()] = wi;
      }
      samples.push_back(std::move(w));
    }
  }
  uint32_t seed = 1;
  for (const auto& w : samples) {
    std::vector<NamedValue> inputs;
    for (const auto& [name, in] : w.inputs()) {
      Shape shape;
      if (batching) shape.push_back(w.batch_size());
      for (int64_t d : in.dims()) shape.push_back(d);
      // Feed the model's shape when the config reshapes the input.
      for (const auto& ci : config_.input()) {
        if (ci.name() == name && ci.has_reshape()) {
          Shape r;
          if (batching) r.push_back(w.batch_size());
          for (int64_t d : ci.reshape().shape()) r.push_back(d);
          shape = r;
        }
      }
      auto t = WarmupTensor(model_dir_, name, in, FromConfigDataType(in.data_type()), shape, seed++);
      if (!t.ok()) return t.status();
      inputs.emplace_back(name, std::move(t).value());
    }
    const uint32_t count = std::max<uint32_t>(1, w.count());
    for (uint32_t i = 0; i < count; ++i) {
      const auto t0 = Clock::now();
      auto r = session_->Run(inputs, RunOptions{output_names_});
      if (!r.ok()) return Status(r.status().code(), "sample '" + w.name() + "': " + r.status().message());
      // The first sample's last run seeds the execution-time average (the first run plans).
      if (mean_execution_ns_.load() == INT64_MAX && i + 1 == count)
        mean_execution_ns_.store(std::chrono::duration_cast<nanoseconds>(Clock::now() - t0).count());
    }
  }
  return Status::Ok();
}

Status ServedModelVersion::Validate(const InferRequest& request, PendingRequest& p) const {
  const bool batching = config_.max_batch_size() > 0;
  std::map<std::string, const InferInput*> by_name;
  for (const auto& in : request.inputs) {
    by_name[in.name] = &in;
    if (std::find(input_names_.begin(), input_names_.end(), in.name) == input_names_.end())
      return Status::InvalidArgument("unexpected input '" + in.name + "' for model '" + name_ + "'");
  }
  // Which optional inputs are present is part of the batch key: requests batch together only
  // with the same inputs.
  std::vector<std::string> present;
  std::string presence;
  for (const auto& ci : config_.input()) {
    auto it = by_name.find(ci.name());
    if (it == by_name.end()) {
      if (ci.optional()) {
        presence += '-';
        continue;
      }
      return Status::InvalidArgument("model '" + name_ + "' expects input '" + ci.name() + "', the request has no such input");
    }
    presence += '+';
    present.push_back(ci.name());
    const Tensor& t = it->second->tensor;
    const DataType want = FromConfigDataType(ci.data_type());
    if (t.dtype() != want)
      return Status::InvalidArgument("input '" + ci.name() + "': datatype " + KServeDataTypeName(ToConfigDataType(t.dtype())) +
                                     ", model '" + name_ + "' expects " + KServeDataTypeName(ci.data_type()));
    const int want_rank = ci.dims_size() + (batching ? 1 : 0);
    auto shape_error = [&] {
      return Status::InvalidArgument("input '" + ci.name() + "': shape " + DimsString(t.shape()) + ", model '" + name_ +
                                     "' expects " + (batching ? "[-1," + ConfigDimsString(ci.dims()).substr(1) : ConfigDimsString(ci.dims())) +
                                     (batching ? " (first dimension: batch, 1.." + std::to_string(config_.max_batch_size()) + ")" : ""));
    };
    if (t.rank() != want_rank) return shape_error();
    for (int i = 0; i < ci.dims_size(); ++i) {
      const int64_t d = ci.dims(i);
      if (d >= 0 && t.dim(i + (batching ? 1 : 0)) != d) return shape_error();
    }
    if (batching && (t.dim(0) < 1 || t.dim(0) > config_.max_batch_size()))
      return Status::InvalidArgument("input '" + ci.name() + "': batch size " + std::to_string(t.dim(0)) + " outside 1.." +
                                     std::to_string(config_.max_batch_size()) + " (max_batch_size of model '" + name_ + "')");
  }
  // Rows (the inputs must agree on dim 0) and the key of non-batch shapes.
  auto shape = ComputeBatchShape(request, present, batching);
  if (!shape.ok()) return shape.status();
  for (const auto& out : request.outputs) {
    if (std::find(output_names_.begin(), output_names_.end(), out.name) == output_names_.end())
      return Status::InvalidArgument("unknown output '" + out.name + "' requested from model '" + name_ + "'");
  }
  p.rows = shape->rows;
  p.batch_key = presence + shape->batch_key;
  auto prio = UIntParam(request.parameters, "priority");
  if (!prio.ok()) return prio.status();
  if (prio.value()) {
    const uint64_t levels = config_.has_dynamic_batching() ? config_.dynamic_batching().priority_levels() : 0;
    if (*prio.value() > std::max<uint64_t>(levels, 1))
      return Status::InvalidArgument("priority " + std::to_string(*prio.value()) + " outside 0.." +
                                     std::to_string(std::max<uint64_t>(levels, 1)) + " for model '" + name_ + "'");
    p.priority = levels > 0 ? static_cast<uint32_t>(*prio.value()) : 0;
  }
  auto timeout = UIntParam(request.parameters, "timeout");
  if (!timeout.ok()) return timeout.status();
  if (timeout.value()) p.timeout = std::chrono::microseconds(static_cast<int64_t>(std::min<uint64_t>(*timeout.value(), uint64_t{1} << 50)));
  return Status::Ok();
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
  if (Status st = Validate(request, *p); !st.ok()) {
    fail(st);
    return true;
  }
  // The tickets live as long as the request: they are released once `done` has run.
  auto tickets = std::make_shared<std::pair<AdmissionTicket, AdmissionTicket>>(std::move(server_ticket),
                                                                                 std::move(ticket).value());
  const auto received = context.received;
  auto answer = [shared_done = std::make_shared<InferCallback>(std::move(done)), tickets](Result<InferResponse> r) {
    (*shared_done)(std::move(r));
    tickets->first.Release();
    tickets->second.Release();
  };
  p->request = std::move(request);
  p->context = std::move(context);
  p->done = answer;
  if (inline_slots_ && mean_execution_ns_.load(std::memory_order_relaxed) < kInlineMaxExecution.count() * 1000) {
    // A fast model, nothing queued, an instance idle: run here instead of handing over to a
    // worker thread and back (bench/serve_bench.py measures the difference).
    bool ran = false;
    if (inline_slots_->fetch_sub(1) > 0) ran = batcher_->TryRunInline(p);
    inline_slots_->fetch_add(1);
    if (ran) return true;
  }
  Status st = batcher_->Enqueue(std::move(p));
  if (!st.ok()) {
    // Refused (queue full, bad priority): Enqueue does not call the callback; answer here.
    RecordUnanswered(st, received, nanoseconds(0));
    answer(std::move(st));
  }
  return true;
}

void ServedModelVersion::ExecuteBatch(int /*instance*/, Batch batch) {
  const auto dispatched = Clock::now();
  // A client that went away after dispatch: answer it now rather than compute for nobody.
  {
    std::vector<std::unique_ptr<PendingRequest>> live;
    for (auto& p : batch.requests) {
      if (p->context.cancelled && p->context.cancelled->load()) {
        Finish(*p, Status(StatusCode::kCancelled, "the client went away before the request was computed"), nanoseconds(0));
      } else {
        live.push_back(std::move(p));
      }
    }
    batch.requests = std::move(live);
    if (batch.requests.empty()) return;
  }
  std::vector<const InferRequest*> reqs;
  std::vector<int64_t> rows;
  for (const auto& p : batch.requests) {
    reqs.push_back(&p->request);
    rows.push_back(p->rows);
  }
  auto run_group = [&](const std::vector<size_t>& members) -> Status {
    std::vector<const InferRequest*> group;
    std::vector<int64_t> group_rows;
    int64_t total_rows = 0;
    for (size_t i : members) {
      group.push_back(reqs[i]);
      group_rows.push_back(rows[i]);
      total_rows += rows[i];
    }
    const auto t0 = Clock::now();
    const bool batching = config_.max_batch_size() > 0;
    std::vector<NamedValue> inputs;
    if (batching && group.size() > 1) {
      // Optional inputs: requests of one batch share a key, so they have the same inputs.
      std::vector<std::string> present;
      for (const auto& name : input_names_)
        for (const auto& in : group[0]->inputs)
          if (in.name == name) present.push_back(name);
      auto gathered = GatherBatchInputs(group, present);
      if (!gathered.ok()) return gathered.status();
      for (size_t i = 0; i < present.size(); ++i) inputs.emplace_back(present[i], std::move(gathered.value()[i]));
    } else {
      for (const auto& in : group[0]->inputs) inputs.emplace_back(in.name, in.tensor);
    }
    // Config reshape: feed the model's shape.
    for (auto& [name, value] : inputs) {
      for (const auto& ci : config_.input()) {
        if (ci.name() != name || !ci.has_reshape()) continue;
        Shape r;
        if (batching) r.push_back(value.tensor().dim(0));
        for (int64_t d : ci.reshape().shape()) r.push_back(d);
        auto reshaped = value.tensor().Reshaped(r);
        if (!reshaped.ok()) return reshaped.status();
        value = Value(std::move(reshaped).value());
      }
    }
    // Run at a bucketed batch size (padding with copies of the last row), so the model sees a
    // few shapes and keeps their kernels and plans cached.
    const int64_t run_rows = batching ? BucketRows(total_rows, buckets_) : total_rows;
    if (run_rows != total_rows) {
      for (auto& [name, value] : inputs) {
        auto padded = PadRows(value.tensor(), run_rows);
        if (!padded.ok()) return padded.status();
        value = Value(std::move(padded).value());
      }
    }
    const auto t1 = Clock::now();
    Result<std::vector<NamedValue>> outputs = Status::Internal("not run");
    try {
      outputs = session_->Run(inputs, RunOptions{output_names_});
    } catch (const std::exception& e) {
      outputs = Status::Internal(std::string("model run threw: ") + e.what());
    }
    const auto t2 = Clock::now();
    if (!outputs.ok()) return outputs.status();
    std::vector<Tensor> out_tensors;
    for (auto& [name, value] : outputs.value()) {
      if (!value.is_tensor()) return Status::Unimplemented("output '" + name + "' is not a tensor");
      out_tensors.push_back(value.tensor());
    }
    std::vector<std::vector<Tensor>> per_request;
    if (batching && (group.size() > 1 || run_rows != total_rows)) {
      if (run_rows != total_rows) group_rows.push_back(run_rows - total_rows);  // the padding's share
      auto split = SplitBatchOutputs(out_tensors, group_rows, output_names_);
      if (!split.ok()) return split.status();
      per_request = std::move(split).value();
    } else {
      per_request.push_back(out_tensors);
    }
    const auto t3 = Clock::now();
    {
      // Moving average (1/8 weight) of how long a batch takes, for the inline decision.
      const int64_t took = std::chrono::duration_cast<nanoseconds>(t3 - t0).count();
      const int64_t old = mean_execution_ns_.load(std::memory_order_relaxed);
      mean_execution_ns_.store(old == INT64_MAX ? took : old + (took - old) / 8, std::memory_order_relaxed);
    }
    {
      std::lock_guard<std::mutex> lock(stats_->mu);
      auto& s = stats_->s;
      s.execution_count += 1;
      s.inference_count += static_cast<uint64_t>(total_rows);
      BatchStat& bs = stats_->batches[static_cast<uint64_t>(total_rows)];
      bs.batch_size = static_cast<uint64_t>(total_rows);
      Add(bs.compute_input, t1 - t0);
      Add(bs.compute_infer, t2 - t1);
      Add(bs.compute_output, t3 - t2);
    }
    for (size_t k = 0; k < members.size(); ++k) {
      PendingRequest& p = *batch.requests[members[k]];
      InferResponse resp;
      resp.model_name = name_;
      resp.model_version = std::to_string(version_);
      resp.id = p.request.id;
      for (size_t o = 0; o < output_names_.size(); ++o) {
        bool wanted = p.request.outputs.empty();
        for (const auto& ro : p.request.outputs) wanted |= ro.name == output_names_[o];
        if (!wanted) continue;
        InferOutput out;
        out.name = output_names_[o];
        out.tensor = per_request[k][o];
        resp.outputs.push_back(std::move(out));
      }
      {
        std::lock_guard<std::mutex> lock(stats_->mu);
        auto& s = stats_->s;
        Add(s.queue, p.dispatched - p.enqueued);
        Add(s.compute_input, t1 - t0);
        Add(s.compute_infer, t2 - t1);
        Add(s.compute_output, Clock::now() - t2);
      }
      Finish(p, std::move(resp), t3 - t0);
    }
    return Status::Ok();
  };

  std::vector<size_t> all(batch.requests.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!breaker_.AllowRun()) {
    for (auto& p : batch.requests)
      Finish(*p, Status::Unavailable("model '" + name_ + "' is failing and temporarily not taking requests (" +
                                     NotReadyReason() + ")"),
             nanoseconds(0));
    return;
  }
  Status st = run_group(all);
  if (!st.ok() && all.size() > 1 && st.code() == StatusCode::kInvalidArgument) {
    // One request's data may have failed the whole batch (e.g. an index out of range): run each
    // alone so only the bad ones fail.
    bool any_model_failure = false;
    std::string model_failure;
    for (size_t i : all) {
      Status one = run_group({i});
      if (!one.ok()) {
        if (CountsAsModelFailure(one)) {
          any_model_failure = true;
          model_failure = one.message();
        }
        Finish(*batch.requests[i], one, Clock::now() - dispatched);
      }
    }
    breaker_.Record(any_model_failure, "requests of a batch failed: " + model_failure);
    return;
  }
  if (!st.ok()) {
    for (auto& p : batch.requests) Finish(*p, st, Clock::now() - dispatched);
  }
  breaker_.Record(CountsAsModelFailure(st), st.message());
}

void ServedModelVersion::Finish(PendingRequest& p, Result<InferResponse> result, nanoseconds compute) {
  const auto now = Clock::now();
  const nanoseconds queue = p.dispatched - p.enqueued;
  const nanoseconds total = now - p.context.received;
  const Status st = result.ok() ? Status::Ok() : result.status();
  {
    std::lock_guard<std::mutex> lock(stats_->mu);
    if (st.ok()) {
      Add(stats_->s.success, total);
      stats_->s.last_inference_ms = NowEpochMs();
    } else {
      Add(stats_->s.fail, total);
    }
  }
  if (metrics_) metrics_->OnRequestDone(st, queue, compute, total);
  if (p.done) {
    auto done = std::move(p.done);
    p.done = nullptr;
    done(std::move(result));
  }
}

void ServedModelVersion::Drain() {
  {
    std::unique_lock<std::shared_mutex> lock(drain_mu_);
    draining_.store(true);
  }
  if (batcher_) batcher_->Drain();
}

ModelMetadata ServedModelVersion::Metadata() const {
  ModelMetadata m;
  m.name = name_;
  m.versions = {std::to_string(version_)};
  m.platform = "onnxruntime_onnx";
  const bool batching = config_.max_batch_size() > 0;
  auto tensor_meta = [&](const std::string& name, configpb::DataType dt, const google::protobuf::RepeatedField<int64_t>& dims) {
    TensorMetadata t;
    t.name = name;
    t.datatype = KServeDataTypeName(dt);
    if (batching) t.shape.push_back(-1);
    for (int64_t d : dims) t.shape.push_back(d);
    return t;
  };
  for (const auto& in : config_.input()) m.inputs.push_back(tensor_meta(in.name(), in.data_type(), in.dims()));
  for (const auto& out : config_.output()) m.outputs.push_back(tensor_meta(out.name(), out.data_type(), out.dims()));
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
  int64_t bytes = load_rss_bytes_;
  if (session_) bytes += static_cast<int64_t>(session_->memory_stats().arena_bytes_held);
  return bytes;
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

}  // namespace inferloop::serve
