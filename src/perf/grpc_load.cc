// The gRPC load generator: ModelInfer calls on grpc's async API. One completion-queue thread
// collects results; in a closed loop it issues the next call at once, in an open loop a
// scheduler thread issues calls at Poisson arrival times from a bounded pool of call slots.
// Each call sends the request of the sample the chooser picks (under the lock that issues it).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "perf/grpc_channel.h"
#include "perf/load_generator.h"
#include "perf/perf_math.h"

namespace inferloop::perf {
namespace {

using Clock = std::chrono::steady_clock;

struct Call {
  std::unique_ptr<grpc::ClientContext> context;
  inference::ModelInferResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ModelInferResponse>> reader;
  Clock::time_point t0;
  size_t sample = 0;
};

class GrpcLoad final : public LoadGenerator {
 public:
  GrpcLoad(const Endpoint& endpoint, std::vector<inference::ModelInferRequest> requests)
      : channel_(MakeGrpcChannel(endpoint)),
        stub_(inference::GRPCInferenceService::NewStub(channel_)),
        requests_(std::move(requests)) {}
  ~GrpcLoad() override { Stop(); }

  Status Start(const LoadSpec& spec, SampleRecorder* recorder) override {
    Stop();
    spec_ = spec;
    recorder_ = recorder;
    chooser_.emplace(spec.distribution, requests_.size(), SampleChooserSeed(spec.seed, 0));
    stopping_.store(false);
    outstanding_.store(0);
    cq_ = std::make_unique<grpc::CompletionQueue>();
    int slots = spec.mode == LoadMode::kConcurrency ? static_cast<int>(spec.load) : std::max(1, spec.max_outstanding);
    calls_.clear();
    free_.clear();
    for (int i = 0; i < slots; ++i) {
      calls_.push_back(std::make_unique<Call>());
      free_.push_back(calls_.back().get());
    }
    cq_thread_ = std::thread([this] { Drain(); });
    if (spec.mode == LoadMode::kConcurrency) {
      auto now = Clock::now();
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& c : calls_) Issue(c.get(), now);
      free_.clear();
    } else {
      scheduler_ = std::thread([this] { Schedule(); });
    }
    return Status::Ok();
  }

  void Stop() override {
    if (!cq_) return;
    stopping_.store(true);
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake_.notify_all();
    }
    if (scheduler_.joinable()) scheduler_.join();
    // Let calls in flight finish (a few seconds at most), then cancel the rest.
    auto deadline = Clock::now() + std::chrono::seconds(3);
    while (outstanding_.load() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (outstanding_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& c : calls_)
        if (c->context) c->context->TryCancel();
    }
    while (outstanding_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cq_->Shutdown();
    if (cq_thread_.joinable()) cq_thread_.join();
    cq_.reset();
    calls_.clear();
    free_.clear();
  }

 private:
  // Called with mu_ held (or before the CQ thread can see `call`).
  void Issue(Call* call, Clock::time_point t0) {
    call->t0 = t0;
    call->sample = chooser_->Next();
    call->context = std::make_unique<grpc::ClientContext>();
    call->response.Clear();
    outstanding_.fetch_add(1);
    call->reader = stub_->PrepareAsyncModelInfer(call->context.get(), requests_[call->sample], cq_.get());
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call);
  }

  void Drain() {
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) {
      auto* call = static_cast<Call*>(tag);
      bool stopping = stopping_.load(std::memory_order_relaxed);
      if (!stopping) {
        if (call->status.ok()) {
          recorder_->RecordSuccess(std::chrono::duration<double, std::micro>(Clock::now() - call->t0).count(), call->sample);
        } else {
          recorder_->RecordError("grpc_" + CodeName(call->status.error_code()), call->status.error_message());
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      outstanding_.fetch_sub(1);
      if (stopping) continue;
      if (spec_.mode == LoadMode::kConcurrency) {
        if (!call->status.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        Issue(call, Clock::now());
      } else {
        free_.push_back(call);
      }
    }
  }

  void Schedule() {
    PoissonSchedule schedule(spec_.load, spec_.seed);
    auto next = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_.load()) {
      next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(schedule.NextGapSeconds()));
      wake_.wait_until(lock, next, [this] { return stopping_.load(); });
      if (stopping_.load()) break;
      if (free_.empty()) {
        lock.unlock();
        recorder_->RecordError("overload", "more than --max-outstanding requests in flight; arrival dropped");
        lock.lock();
        continue;
      }
      Call* call = free_.back();
      free_.pop_back();
      Issue(call, next);
    }
  }

  static std::string CodeName(grpc::StatusCode code) {
    switch (code) {
      case grpc::StatusCode::CANCELLED: return "CANCELLED";
      case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
      case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
      case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
      case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
      case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
      case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
      case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
      case grpc::StatusCode::INTERNAL: return "INTERNAL";
      case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
      default: return std::to_string(static_cast<int>(code));
    }
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::vector<inference::ModelInferRequest> requests_;  // per sample
  std::optional<SampleChooser> chooser_;                 // guarded by mu_
  LoadSpec spec_;
  SampleRecorder* recorder_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::atomic<int> outstanding_{0};
  std::unique_ptr<grpc::CompletionQueue> cq_;
  std::thread cq_thread_;
  std::thread scheduler_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Call>> calls_;
  std::vector<Call*> free_;
};

}  // namespace

std::unique_ptr<LoadGenerator> MakeGrpcLoadGenerator(const Endpoint& endpoint,
                                                     const std::vector<EncodedRequest>& requests) {
  std::vector<inference::ModelInferRequest> messages(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) messages[i].ParseFromString(requests[i].grpc_message);
  return std::make_unique<GrpcLoad>(endpoint, std::move(messages));
}

}  // namespace inferloop::perf
