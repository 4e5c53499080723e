#include "backends/processing/processing_version.h"

#include <algorithm>
#include <chrono>

#include "base/status_macros.h"
#include "serve/batcher_config.h"
#include "serve/request_validation.h"
#include "serve/version_statistics.h"

namespace inferloop::backends {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

struct ProcessingModelVersion::Stats : serve::VersionStatistics {};

class ProcessingModelVersion::Observer : public serve::BatcherObserver {
 public:
  Observer(Stats* stats, serve::VersionMetricsSink* sink) : stats_(stats), sink_(sink) {}
  void OnDropped(const serve::PendingRequest& request, const Status& why) override {
    const nanoseconds total = Clock::now() - request.context.received;
    stats_->RecordFailure(total);
    if (sink_) sink_->OnRequestDone(why, Clock::now() - request.enqueued, nanoseconds(0), total);
  }
  void OnQueueDepth(int64_t depth) override {
    if (sink_) sink_->OnQueueDepth(depth);
  }
  void OnDispatch(const serve::Batch& batch) override {
    if (sink_) sink_->OnBatch(batch.rows, batch.reason);
  }

 private:
  Stats* stats_;
  serve::VersionMetricsSink* sink_;
};

ProcessingModelVersion::ProcessingModelVersion(std::string name, int64_t version)
    : name_(std::move(name)), version_(version), stats_(std::make_unique<Stats>()) {}

ProcessingModelVersion::~ProcessingModelVersion() {
  batcher_.reset();  // answers what is queued, joins the workers (they use the members above)
}

Result<std::shared_ptr<ProcessingModelVersion>> ProcessingModelVersion::Create(const serve::VersionLoadRequest& r,
                                                                               serve::ModelConfig config,
                                                                               std::shared_ptr<Processor> processor,
                                                                               std::string platform) {
  IL_RETURN_IF_ERROR(serve::ValidateCompleteModelConfig(config));
  auto v = std::make_shared<ProcessingModelVersion>(r.model_name, r.version);
  v->platform_ = std::move(platform);
  v->config_ = std::move(config);
  for (const auto& in : v->config_.input()) v->input_names_.push_back(in.name());
  for (const auto& out : v->config_.output()) v->output_names_.push_back(out.name());
  v->processor_ = std::move(processor);
  v->gate_ = serve::AdmissionGate::Create("model '" + r.model_name + "'", r.limits);
  v->metrics_ = r.metrics;
  v->observer_ = std::make_unique<Observer>(v->stats_.get(), v->metrics_.get());
  ProcessingModelVersion* self = v.get();
  v->batcher_ = std::make_unique<serve::DynamicBatcher>(
      serve::BatcherOptionsOf(r.model_name, r.version, v->config_),
      [self](int, serve::Batch batch) { self->ExecuteBatch(std::move(batch)); }, v->observer_.get());
  return v;
}

bool ProcessingModelVersion::Infer(serve::InferRequest&& request, serve::RequestContext&& context,
                                   serve::InferCallback&& done, serve::AdmissionTicket&& server_ticket) {
  std::shared_lock<std::shared_mutex> drain_lock(drain_mu_);
  if (draining_) return false;
  auto fail = [&](Status st) {
    stats_->RecordFailure(Clock::now() - context.received);
    if (metrics_) metrics_->OnRequestDone(st, nanoseconds(0), nanoseconds(0), Clock::now() - context.received);
    done(std::move(st));
  };
  auto ticket = gate_->TryAdmit(context.request_bytes);
  if (!ticket.ok()) {
    fail(ticket.status());
    return true;
  }
  auto p = std::make_unique<serve::PendingRequest>();
  if (Status st = serve::ValidateRequest(request, name_, config_, input_names_, output_names_, *p); !st.ok()) {
    fail(st);
    return true;
  }
  // The tickets are released just before the answer is handed over (PendingRequest::Answer,
  // ModelVersion::Infer's contract).
  p->request = std::move(request);
  p->context = std::move(context);
  p->done = std::move(done);
  p->server_ticket = std::move(server_ticket);
  p->model_ticket = std::move(ticket).value();
  if (Status st = batcher_->TryEnqueue(p); !st.ok()) {
    stats_->RecordFailure(nanoseconds(0));
    p->Answer(std::move(st));
  }
  return true;
}

void ProcessingModelVersion::ExecuteBatch(serve::Batch batch) {
  for (auto& p : batch.requests) {
    if (p->context.IsCancelled()) {
      Answer(*p, Status(StatusCode::kCancelled, "the request was cancelled"));
      continue;
    }
    Answer(*p, processor_->Process(p->request));
  }
}

void ProcessingModelVersion::Answer(serve::PendingRequest& p, Result<std::vector<serve::InferOutput>> outputs) {
  const auto now = Clock::now();
  const nanoseconds queue = p.dispatched - p.enqueued;
  const nanoseconds compute = now - p.dispatched;
  const nanoseconds total = now - p.context.received;
  Result<serve::InferResponse> result = outputs.status();
  if (outputs.ok()) {
    serve::InferResponse resp;
    resp.model_name = name_;
    resp.model_version = std::to_string(version_);
    resp.id = p.request.id;
    for (auto& o : outputs.value()) {
      bool wanted = p.request.outputs.empty();
      for (const auto& w : p.request.outputs) wanted |= w.name == o.name;
      if (wanted) resp.outputs.push_back(std::move(o));
    }
    result = std::move(resp);
  }
  if (result.ok()) {
    stats_->RecordSuccess(static_cast<uint64_t>(p.rows), queue, compute, total);
  } else {
    stats_->RecordFailure(total);
  }
  if (metrics_) metrics_->OnRequestDone(result.ok() ? Status::Ok() : result.status(), queue, compute, total);
  p.Answer(std::move(result));
}

void ProcessingModelVersion::Drain() {
  {
    std::unique_lock<std::shared_mutex> lock(drain_mu_);
    draining_.store(true);
  }
  batcher_->Drain();
}

serve::ModelMetadata ProcessingModelVersion::Metadata() const {
  return serve::MetadataFromConfig(name_, version_, platform_, config_);
}

serve::ModelStatistics ProcessingModelVersion::Statistics() const { return stats_->Snapshot(name_, version_, 0); }

std::chrono::steady_clock::duration ProcessingModelVersion::StallTime() const { return batcher_->StallTime(); }

int64_t ProcessingModelVersion::QueueDepth() const { return batcher_->QueueDepth(); }

}  // namespace inferloop::backends
