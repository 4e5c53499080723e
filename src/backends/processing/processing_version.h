// ProcessingModelVersion: a version of a processing step (image decoding and preprocessing,
// DICOM reading, post-processing, reports: the backends next to this folder). The config
// declares its inputs and outputs (name, data_type, dims) as for any model, its `parameters`
// configure a Processor, and its requests are scheduled as any model's are: admission against
// the per-model limits, validation against the config (serve/request_validation.h), the
// DynamicBatcher with the config's dynamic_batching queue policies and priority levels, one
// worker per instance of instance_group (so `count: 2` decodes two requests at once). Each request
// is processed on its own (a request of N rows is the Processor's to handle). Statistics and the
// server's per-version metrics are kept as for ONNX versions; Drain answers every queued request.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "serve/dynamic_batcher.h"
#include "serve/model_backend.h"

namespace inferloop::backends {

class Processor {
 public:
  virtual ~Processor() = default;
  // The outputs of one request (config outputs; the version returns those asked for). Errors:
  // InvalidArgument for bad data, naming the input (and row). Called concurrently by the instances.
  virtual Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) = 0;
  // Models it calls (see ModelVersion::Dependencies).
  virtual std::vector<std::string> Dependencies() const { return {}; }
};

class ProcessingModelVersion final : public serve::ModelVersion {
 public:
  // `config`: complete (ValidateCompleteModelConfig is run here). `platform`: what metadata says.
  static Result<std::shared_ptr<ProcessingModelVersion>> Create(const serve::VersionLoadRequest& request,
                                                                serve::ModelConfig config,
                                                                std::shared_ptr<Processor> processor,
                                                                std::string platform);
  ~ProcessingModelVersion() override;

  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const serve::ModelConfig& config() const override { return config_; }
  bool Infer(serve::InferRequest&& request, serve::RequestContext&& context, serve::InferCallback&& done,
             serve::AdmissionTicket&& server_ticket) override;
  void Drain() override;
  serve::ModelMetadata Metadata() const override;
  serve::ModelStatistics Statistics() const override;
  int64_t MemoryBytes() const override { return 0; }
  bool Ready() const override { return !draining_.load(); }
  std::string NotReadyReason() const override { return draining_.load() ? "draining" : ""; }
  std::chrono::steady_clock::duration StallTime() const override;
  int64_t QueueDepth() const override;
  std::vector<std::string> Dependencies() const override { return processor_->Dependencies(); }

  struct Stats;
  class Observer;
  ProcessingModelVersion(std::string name, int64_t version);  // internal: use Create()

 private:
  void ExecuteBatch(serve::Batch batch);
  void Answer(serve::PendingRequest& p, Result<std::vector<serve::InferOutput>> outputs);

  const std::string name_;
  const int64_t version_;
  std::string platform_;
  serve::ModelConfig config_;
  std::vector<std::string> input_names_, output_names_;
  std::shared_ptr<Processor> processor_;
  std::shared_ptr<serve::AdmissionGate> gate_;
  std::shared_ptr<serve::VersionMetricsSink> metrics_;
  std::unique_ptr<Stats> stats_;
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<serve::DynamicBatcher> batcher_;  // last: stopped first
  std::shared_mutex drain_mu_;
  std::atomic<bool> draining_{false};
};

}  // namespace inferloop::backends
