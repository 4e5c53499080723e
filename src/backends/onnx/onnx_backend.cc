#include "backends/onnx/onnx_backend.h"

#include "serve/served_model_version.h"

namespace inferloop::backends {
namespace {

class OnnxBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "onnx"; }
  std::string default_model_filename() const override { return "model.onnx"; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    const bool platform_ok = c.platform().empty() || c.platform() == "onnxruntime_onnx";
    const bool backend_ok = c.backend().empty() || c.backend() == "onnxruntime" || c.backend() == "inferloop";
    return platform_ok && backend_ok;
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    serve::VersionLoadOptions o;
    o.session = r.session;
    o.limits = r.limits;
    o.progress = r.progress;
    o.metrics = r.metrics;
    o.inline_slots = r.inline_slots;
    o.cpu_share = r.cpu_share;
    IL_ASSIGN_OR_RETURN(std::shared_ptr<serve::ServedModelVersion> v,
                        serve::ServedModelVersion::Load(r.model_name, r.version, r.model_path, r.model_dir,
                                                        r.partial_config, std::move(o)));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeOnnxBackend() { return std::make_shared<OnnxBackend>(); }

}  // namespace inferloop::backends
