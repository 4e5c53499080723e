// LoadGenerator: sends encoded inference requests over and over at a load point, each one a
// sample of the input set picked by the distribution, recording every outcome (and the sample
// of each success) in a SampleRecorder. Implementations: REST over Boost.Beast (rest_load.cc) and
// gRPC async (grpc_load.cc); both non-blocking, with a small fixed number of I/O threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontends/request_types.h"
#include "inferloop/status.h"
#include "perf/endpoint.h"
#include "perf/input_set.h"
#include "perf/perf_result.h"
#include "perf/sample_recorder.h"

namespace inferloop::perf {

struct LoadSpec {
  LoadMode mode = LoadMode::kConcurrency;
  // Closed loop: requests kept in flight (each on its own connection / call slot).
  // Open loop: mean requests per second (Poisson arrivals).
  double load = 1;
  // Open loop: most requests in flight at once; an arrival over it is not sent and is counted
  // as an "overload" error.
  int max_outstanding = 1024;
  uint64_t seed = 1;
  // Picks the sample of each request (perf/input_set.h); each I/O thread draws from its own
  // chooser seeded by SampleChooserSeed(seed, thread).
  SampleDistribution distribution;
};

class LoadGenerator {
 public:
  virtual ~LoadGenerator() = default;
  // Starts sending; returns at once. Outcomes go to `recorder` (which must outlive Stop).
  // Latency: closed loop from the send, open loop from the scheduled arrival time.
  virtual Status Start(const LoadSpec& spec, SampleRecorder* recorder) = 0;
  // Stops sending, waits (a few seconds at most) for requests in flight, closes connections.
  // Safe to call when not started; Start may be called again afterwards.
  virtual void Stop() = 0;
};

// One sample's request, encoded once for each transport.
struct EncodedRequest {
  std::string rest_body;        // REST body (JSON, or JSON + binary data)
  size_t rest_json_length = 0;  // Inference-Header-Content-Length when rest_has_binary
  bool rest_has_binary = false;
  std::string grpc_message;     // serialized inference::ModelInferRequest
};

// REST: POST /v2/models/M[/versions/V]/infer on keep-alive connections, `io_threads` threads.
// `requests`: one per sample (at least one), each sent as prebuilt bytes.
std::unique_ptr<LoadGenerator> MakeRestLoadGenerator(const Endpoint& endpoint, const std::string& model,
                                                     const std::string& version,
                                                     const std::vector<EncodedRequest>& requests, int io_threads);
// gRPC: ModelInfer calls on an async completion queue; `requests` as above.
std::unique_ptr<LoadGenerator> MakeGrpcLoadGenerator(const Endpoint& endpoint,
                                                     const std::vector<EncodedRequest>& requests);

}  // namespace inferloop::perf
