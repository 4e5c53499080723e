// Skeleton: the decision logic is being written (issue 16); this keeps the knobs where they start.
#include "control/adaptive_controller.h"

namespace inferloop::control {

AdaptiveController::AdaptiveController(ControllerConfig config) : config_(std::move(config)) {}

Decision AdaptiveController::Observe(const Observation&) {
  Decision d;
  d.knobs = knobs_;
  d.reason = "steady";
  return d;
}

Decision AdaptiveController::Pin(int v) {
  pinned_ = v;
  knobs_.variant = v;
  Decision d;
  d.knobs = knobs_;
  d.reason = "pinned";
  return d;
}

Decision AdaptiveController::Free() {
  pinned_ = -1;
  Decision d;
  d.knobs = knobs_;
  d.reason = "freed";
  return d;
}

}  // namespace inferloop::control
