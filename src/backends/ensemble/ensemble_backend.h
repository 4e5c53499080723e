// The ensemble backend: `platform: "ensemble"` models with Triton's ensemble_scheduling { step [
// { model_name, model_version, input_map, output_map } ] }, read exactly as Triton reads it, and
// inferloop's conditional steps (condition, skipped_value: docs/PIPELINES.md). A version folder
// holds no file (Triton's layout: an empty <model>/1/). Its steps' models load first at start
// (ModelBackend::Dependencies); a step's model not being served is a load error naming the step.
//
// Metrics (in the registry given): inferloop_ensemble_step_total{model,step,outcome=ran|skipped|
// failed}, inferloop_ensemble_step_seconds{model,step} (time from the step's start to its answer:
// its model's queue and compute), inferloop_ensemble_request_seconds{model}.
#pragma once

#include <memory>

#include "serve/metrics_registry.h"
#include "serve/model_backend.h"

namespace inferloop::backends {

// `registry` may be null (no metrics); it must outlive the backend and its versions.
std::shared_ptr<serve::ModelBackend> MakeEnsembleBackend(serve::MetricsRegistry* registry);

}  // namespace inferloop::backends
