#include "backends/onnx/onnx_backend.h"

#include "base/status_macros.h"
#include "serve/served_model_version.h"

namespace inferloop::backends {
namespace {

class OnnxBackend final : public serve::ModelBackend {
 public:
  explicit OnnxBackend(control::AdaptiveLoop* adaptive) : adaptive_(adaptive) {}
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
                                                        r.partial_config, o));
    if (adaptive_ && v->config().has_adaptive()) {
      control::VariantPreparation p;
      p.objectives = v->objectives();
      p.model_path = r.model_path;
      p.model_dir = r.model_dir;
      p.version_dir = r.version_dir;
      p.session = o.session;
      p.progress = r.progress;
      Status st = adaptive_->Attach(v, p);
      if (!st.ok()) return Status(st.code(), "adaptive variants of '" + r.model_name + "': " + st.message());
    }
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }

 private:
  control::AdaptiveLoop* adaptive_;
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeOnnxBackend(control::AdaptiveLoop* adaptive) {
  return std::make_shared<OnnxBackend>(adaptive);
}

}  // namespace inferloop::backends
