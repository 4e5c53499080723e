// A conditional step's condition (docs/PIPELINES.md): reduce(tensor) op value, over a numeric
// tensor of the ensemble. reduce: "max" (the default), "min", "mean" over every element, or
// "top1_min": each row's maximum over the last axis, then the lowest of those (so
// `top1_min < 0.9` holds when any row's top-1 confidence is below 0.9). op: ">", ">=", "<",
// "<=", "==", "!=". With `index` set, each row's element `index` along the last axis is what
// max/min/mean reduce (e.g. the defect class's probability of every row).
#pragma once

#include "inferloop/status.h"
#include "inferloop/tensor.h"
#include "serve/model_config.h"

namespace inferloop::backends {

using StepConditionConfig = serve::configpb::ModelEnsembleScheduling::Condition;

// InvalidArgument naming the bad reduce or op.
Status CheckCondition(const StepConditionConfig& c);
// Whether the condition holds for `t`. InvalidArgument for an empty or non-numeric tensor.
Result<bool> EvaluateCondition(const StepConditionConfig& c, const Tensor& t);

}  // namespace inferloop::backends
