// EnsemblePlan: an ensemble config (Triton's `platform: "ensemble"` with ensemble_scheduling, plus
// inferloop's conditional steps) checked against the models serving now, as a DAG of steps.
//
// Checks, each a load error naming the step ("step 2 (classifier)"): model_namespace is empty;
// the step's model is served (and the version, when given); every input_map key is an input of
// that model and every output_map key one of its outputs; every tensor a step reads (inputs and
// conditions) is an ensemble input or the output of another step; no tensor is produced twice,
// and no step output reuses an ensemble input's name; the steps form no cycle; every ensemble
// output is produced by a step; a tensor's data type where it is produced equals the data type
// where it is read (ensemble input/output configs and the step models' configs), and so do the
// dims where both are fixed; conditions use a known reduce and op.
//
// One tensor is built in: kTraceTensor ("inferloop.trace"), which any step may read (a report
// step): a BYTES [1] (for a batching step model [rows, 1], the same in every row) JSON document of the steps that ended before it started, in the order they
// ended: {"ensemble", "version", "steps": [{"step", "model", "version", "outcome" (ran,
// skipped), "ms"}]}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "serve/model_backend.h"

namespace inferloop::backends {

inline constexpr const char kTraceTensor[] = "inferloop.trace";

struct EnsembleStep {
  std::string label;  // "step N (model)", for messages and metrics
  std::string model;
  int64_t version = -1;  // <= 0: the highest serving version
  std::map<std::string, std::string> input_map;   // the model's input -> ensemble tensor
  std::map<std::string, std::string> output_map;  // the model's output -> ensemble tensor
  std::vector<serve::configpb::ModelEnsembleScheduling::Condition> conditions;
  std::map<std::string, double> skipped_value;    // ensemble tensor -> value when skipped
  std::vector<int> after;  // the steps producing what this step reads (inputs and conditions)
  std::vector<std::string> optional_inputs;
  bool model_batches = false;  // the model's max_batch_size > 0 (the trace gets one row per request row)  // the model's inputs marked optional: left out when absent
};

struct EnsemblePlan {
  std::vector<EnsembleStep> steps;  // in config order
  std::map<std::string, int> producer;  // ensemble tensor -> step index (-1: an ensemble input)
};

Result<EnsemblePlan> PlanEnsemble(const serve::ModelConfig& config, serve::ModelResolver& models);

}  // namespace inferloop::backends
