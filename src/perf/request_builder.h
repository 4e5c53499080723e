// Building the one inference request `inferloop perf` sends: input tensors from the model's
// metadata and the user's options, encoded once for REST (JSON or binary) and gRPC.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontends/request_types.h"
#include "inferloop/status.h"
#include "perf/load_generator.h"
#include "perf/model_client.h"

namespace inferloop::perf {

struct InputOptions {
  // "random" (the default), "zero", a directory holding <input>.npy for every input, or a
  // directory of sample folders each holding them (BuildInputSet).
  std::string data = "random";
  // Per input: the dims without the batch dim (for batching models), replacing the metadata's.
  std::map<std::string, std::vector<int64_t>> shapes;
  int batch_size = 1;
  std::optional<int64_t> priority;
  bool binary = false;
  uint64_t seed = 1;
};

// Parses a --shape value "NAME:D1,D2,..." (dims >= 0). InvalidArgument otherwise.
Status ParseShapeOption(const std::string& text, std::map<std::string, std::vector<int64_t>>* shapes);

// The request for `model` from one sample: random, zero, or options.data a directory holding
// <input>.npy for every input (its full shape, or for batching models one sample without the
// batch dim, repeated to the batch; a variable dim without --shape takes the file's size).
// Errors (InvalidArgument): a --shape naming no input (the inputs are listed), a variable dim
// left without --shape (generated data), --batch-size > 1 for a model that does not batch or
// above its max_batch_size, a datatype the protocol lacks, a missing or mismatched .npy file.
Result<frontends::InferRequest> BuildInferRequest(const ModelInfo& model, const InputOptions& options);

// Every sample's request, in sample order.
struct InputSet {
  // The sample folders' names, or {options.data} for one sample (random, zero, a flat DIR).
  std::vector<std::string> sample_names;
  std::vector<frontends::InferRequest> requests;  // one per sample
};

// The input set of options.data: a directory of sample folders DIR/<sample>/<input>.npy (sorted
// by name; perf/input_set.h ListSampleFolders) gives one request per folder, anything else one
// request (BuildInferRequest). A sample's error names it: "sample 'NAME': ..." (a missing input,
// a shape that does not fit the model: samples may differ only in variable dims).
Result<InputSet> BuildInputSet(const ModelInfo& model, const InputOptions& options);

// Encodes `request` for both transports (REST: binary tensor data when options.binary, and
// binary outputs asked for; gRPC: raw_input_contents).
Result<EncodedRequest> EncodeRequest(const frontends::InferRequest& request, bool binary);

}  // namespace inferloop::perf
