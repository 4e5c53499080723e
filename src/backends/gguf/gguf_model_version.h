// GgufModelVersion: one version of a GGUF language model: its LlmEngine, text generation for the
// OpenAI-compatible API, statistics, and drain (the engine finishes every accepted request).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/gguf/gguf_backend.h"
#include "backends/gguf/llm_metrics.h"
#include "llm/chat_template.h"
#include "llm/llama_model.h"
#include "llm/llm_engine.h"
#include "llm/token_mask.h"

namespace inferloop::backends {

class GgufModelVersion final : public serve::ModelVersion, public serve::TextGenerationService {
 public:
  // `metrics` must outlive the version.
  static Result<std::shared_ptr<GgufModelVersion>> Load(const serve::VersionLoadRequest& request,
                                                        const GgufBackendOptions& options, LlmMetrics* metrics);
  ~GgufModelVersion() override;

  const std::string& name() const override { return name_; }
  int64_t version() const override { return version_; }
  const serve::ModelConfig& config() const override { return config_; }
  // KServe v2 inference: refused (InvalidArgument naming the /v1 endpoints).
  bool Infer(serve::InferRequest&& request, serve::RequestContext&& context, serve::InferCallback&& done,
             serve::AdmissionTicket&& server_ticket) override;
  void Drain() override;
  serve::ModelMetadata Metadata() const override;
  serve::ModelStatistics Statistics() const override;
  // The model file's bytes (mapped weights) plus the KV cache pool.
  int64_t MemoryBytes() const override;
  bool Ready() const override { return !draining_.load(); }
  std::string NotReadyReason() const override { return draining_.load() ? "draining" : ""; }
  int64_t QueueDepth() const override;
  TextGenerationService* TextGeneration() override { return this; }
  std::vector<std::pair<std::string, std::string>> LoadDetails() const override;

  // TextGenerationService, for this version only.
  std::vector<ModelInfo> ListModels() const override;
  Status Generate(serve::TextGenerationRequest request, std::function<void(const serve::TextPiece&)> on_piece,
                  std::function<void(const serve::TextGenerationResult&)> on_done) override;
  // Embeddings (gguf_embeddings.cc): pooled as the file's <arch>.pooling_type says (mean without
  // the key); InvalidArgument for pooling none or rank.
  Status Embed(serve::EmbeddingRequest request, std::function<void(const serve::EmbeddingResult&)> on_done) override;

  struct Stats;  // request statistics (mutex inside)
  GgufModelVersion(std::string name, int64_t version);  // internal: use Load()

 private:
  // The grammar constraint of a request's response_format (null for text): compiled once per
  // distinct format and kept (up to 16, with their token mask caches). InvalidArgument naming
  // 'response_format.json_schema.schema' for a schema that cannot be compiled.
  Result<std::shared_ptr<llm::GrammarConstraint>> Constraint(const serve::TextGenerationRequest& req);

  const std::string name_;
  const int64_t version_;
  std::string path_;
  serve::ModelConfig config_;
  int64_t created_ = 0;
  int64_t file_bytes_ = 0;
  int64_t kv_bytes_ = 0;
  GgufBackendOptions options_;
  LlmMetrics* metrics_ = nullptr;
  LlmModelSeries series_;
  std::shared_ptr<const llm::LlamaModel> model_;
  llm::ChatTemplate chat_;  // the model's prompt format (its Jinja chat template, or a fallback)
  int64_t pooling_type_ = -1;  // <arch>.pooling_type of the file, -1 when it has none
  std::shared_ptr<Stats> stats_;
  std::atomic<bool> draining_{false};
  std::mutex grammar_mu_;
  std::shared_ptr<const llm::TokenVocabulary> vocab_;  // made at the first constrained request
  std::map<std::string, std::shared_ptr<llm::GrammarConstraint>> grammars_;
  std::unique_ptr<llm::LlmEngine> engine_;  // last: stopped first, its callbacks use the members above
};

}  // namespace inferloop::backends
