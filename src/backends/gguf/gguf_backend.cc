#include "backends/gguf/gguf_backend.h"

#include <algorithm>

#include "backends/gguf/gguf_model_version.h"
#include "base/status_macros.h"

namespace inferloop::backends {
namespace {

bool Has(const std::vector<std::string>& files, const char* name) {
  return std::find(files.begin(), files.end(), name) != files.end();
}

class GgufBackend final : public serve::ModelBackend {
 public:
  GgufBackend(GgufBackendOptions options, serve::MetricsRegistry* registry)
      : options_(std::move(options)), metrics_(registry) {}
  std::string kind() const override { return "gguf"; }
  std::string default_model_filename() const override { return "model.gguf"; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>& files) const override {
    if (!c.platform().empty()) return false;
    if (c.backend() == "gguf" || c.backend() == "llama") return true;
    return c.backend().empty() && Has(files, "model.gguf") && !Has(files, "model.onnx");
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    IL_ASSIGN_OR_RETURN(std::shared_ptr<GgufModelVersion> v, GgufModelVersion::Load(r, options_, &metrics_));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }

 private:
  const GgufBackendOptions options_;
  LlmMetrics metrics_;
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeGgufBackend(GgufBackendOptions options, serve::MetricsRegistry* registry) {
  return std::make_shared<GgufBackend>(std::move(options), registry);
}

}  // namespace inferloop::backends
