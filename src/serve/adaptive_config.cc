#include "serve/adaptive_config.h"

#include <algorithm>

#include "base/status_macros.h"

namespace inferloop::serve {
namespace {

Status CheckFolderName(const std::string& field, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
    return Status::InvalidArgument("adaptive: " + field + " must be a folder name inside the model folder (got '" +
                                   name.substr(0, 64) + "')");
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& AdaptiveVariantNames() {
  static const std::vector<std::string> names = {"fp32", "bf16", "int8"};
  return names;
}

double CpuShareWeight(const ModelConfig& config) {
  const auto& a = config.adaptive();
  return a.has_cpu_share() && a.cpu_share() > 0 ? a.cpu_share() : 1.0;
}

Result<AdaptiveObjectives> ReadAdaptiveObjectives(const ModelConfig& config) {
  AdaptiveObjectives o;
  if (!config.has_adaptive()) return o;
  const auto& a = config.adaptive();
  if (a.has_latency_slo()) {
    const auto& slo = a.latency_slo();
    if (!(slo.percentile() > 0 && slo.percentile() < 100))
      return Status::InvalidArgument("adaptive: latency_slo percentile " + std::to_string(slo.percentile()) +
                                     " is not in (0, 100) (e.g. 99 for p99)");
    if (!(slo.milliseconds() > 0))
      return Status::InvalidArgument("adaptive: latency_slo milliseconds must be > 0 (got " +
                                     std::to_string(slo.milliseconds()) + ")");
    o.has_slo = true;
    o.slo_percentile = slo.percentile();
    o.slo_ms = slo.milliseconds();
    auto p = config.parameters().find("precision");
    if (p != config.parameters().end())
      return Status::InvalidArgument("adaptive: latency_slo lets the controller choose the precision, but "
                                     "parameters { key: \"precision\" } fixes it to '" +
                                     p->second.string_value().substr(0, 32) +
                                     "': remove one (to fix a precision with an SLO, list only it in adaptive.variants)");
  }
  if (a.has_max_accuracy_drop()) {
    if (!(a.max_accuracy_drop() >= 0 && a.max_accuracy_drop() <= 100))
      return Status::InvalidArgument("adaptive: max_accuracy_drop " + std::to_string(a.max_accuracy_drop()) +
                                     " is not in [0, 100] (percentage points)");
    o.max_accuracy_drop = a.max_accuracy_drop();
  }
  if (a.has_cpu_share()) {
    if (!(a.cpu_share() > 0 && a.cpu_share() <= 1000))
      return Status::InvalidArgument("adaptive: cpu_share " + std::to_string(a.cpu_share()) +
                                     " is not in (0, 1000] (a weight relative to other models; default 1)");
  }
  o.cpu_share = CpuShareWeight(config);
  const auto& known = AdaptiveVariantNames();
  for (const auto& v : a.variants()) {
    if (std::find(known.begin(), known.end(), v) == known.end())
      return Status::InvalidArgument("adaptive: unknown variant '" + v.substr(0, 32) + "' (expected fp32, bf16 or int8)");
    if (std::find(o.variants.begin(), o.variants.end(), v) != o.variants.end())
      return Status::InvalidArgument("adaptive: variant '" + v + "' is listed twice");
    o.variants.push_back(v);
  }
  o.wants_variants = o.has_slo || !o.variants.empty();
  if (o.variants.empty()) o.variants = known;
  // Most precise first, whatever order they were listed in.
  std::sort(o.variants.begin(), o.variants.end(), [&](const std::string& x, const std::string& y) {
    return std::find(known.begin(), known.end(), x) < std::find(known.begin(), known.end(), y);
  });
  o.hot = a.hot();
  o.max_instances = a.max_instances();
  o.max_queue_delay = std::chrono::microseconds(a.max_queue_delay_microseconds());
  if (!a.calibration().empty()) {
    IL_RETURN_IF_ERROR(CheckFolderName("calibration", a.calibration()));
    o.calibration_dir = a.calibration();
  }
  if (!a.evaluation().empty()) {
    IL_RETURN_IF_ERROR(CheckFolderName("evaluation", a.evaluation()));
    o.evaluation_dir = a.evaluation();
  }
  if (a.window_ms() != 0) {
    if (a.window_ms() < 100)
      return Status::InvalidArgument("adaptive: window_ms " + std::to_string(a.window_ms()) + " is under 100");
    o.window = std::chrono::milliseconds(a.window_ms());
  }
  return o;
}

}  // namespace inferloop::serve
