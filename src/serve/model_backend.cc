#include "serve/model_backend.h"

#include <thread>

#include "base/status_macros.h"

namespace inferloop::serve {

void BackendRegistry::Add(std::shared_ptr<ModelBackend> backend) { backends_.push_back(std::move(backend)); }

Result<ModelBackend*> BackendRegistry::ForModel(const ModelConfig& config,
                                                const std::vector<std::string>& version_files) const {
  for (const auto& b : backends_)
    if (b->Serves(config, version_files)) return b.get();
  std::string kinds;
  for (const auto& b : backends_) kinds += (kinds.empty() ? "" : ", ") + b->kind();
  std::string what;
  if (!config.platform().empty()) what += "platform '" + config.platform() + "'";
  if (!config.backend().empty()) what += std::string(what.empty() ? "" : " and ") + "backend '" + config.backend() + "'";
  if (what.empty()) {
    std::string files;
    for (const auto& f : version_files) files += (files.empty() ? "" : ", ") + f;
    what = "a version folder holding [" + files + "]";
  }
  return Status::NotFound(what + " is not served by inferloop (its backends: " + kinds +
                          "; see docs/MODEL_REPOSITORY.md for the platform and backend names)");
}

Status InferOnServingVersion(ModelResolver& models, const std::string& model, int64_t version, InferRequest&& request,
                             RequestContext&& context, InferCallback&& done) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ModelVersion> v, models.Find(model, version));
    if (v->Infer(std::move(request), std::move(context), std::move(done), AdmissionTicket{})) return Status::Ok();
    std::this_thread::yield();  // the replacement is serving by the time Infer refused
  }
  return Status::Unavailable("model '" + model + "' is being replaced; retry");
}

}  // namespace inferloop::serve
