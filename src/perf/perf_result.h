// PerfResult: what `inferloop perf` measured at one load point (one concurrency or one request
// rate), in plain data, so writers (table, CSV, JSON, the SVG plot in perf/svg_plot.h) need
// nothing but this header.
//
// Units: latencies in microseconds (double), throughput in inferences per second (one request
// counts batch_size inferences). A point with no successful request has latencies of 0 and
// completed == 0; writers must handle that.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace inferloop::perf {

enum class LoadMode {
  kConcurrency,  // closed loop: `load` requests always in flight
  kRequestRate,  // open loop: Poisson arrivals at `load` requests per second
};

// "concurrency" or "request_rate" (the CSV/JSON column name of `load`).
inline const char* LoadModeName(LoadMode m) {
  return m == LoadMode::kConcurrency ? "concurrency" : "request_rate";
}

struct PerfResult {
  LoadMode mode = LoadMode::kConcurrency;
  double load = 0;             // the concurrency (integer valued) or the target request rate (req/s)
  int batch_size = 1;          // inferences per request

  // Over the reported windows (the last three measured, merged).
  double throughput_infer_per_s = 0;  // successful inferences per second
  double throughput_req_per_s = 0;    // successful requests per second
  uint64_t completed = 0;             // successful requests
  uint64_t errors = 0;                // failed requests (sum of errors_by_kind)
  // Failure counts by kind: "http_503", "grpc_UNAVAILABLE", "connect", "timeout",
  // "overload" (open loop: the outstanding-request bound was hit, the request was not sent).
  std::map<std::string, uint64_t> errors_by_kind;

  // Client-side latency of successful requests, microseconds. Open loop: measured from the
  // scheduled send time (no coordinated omission).
  double latency_avg_us = 0;
  double latency_p50_us = 0;
  double latency_p90_us = 0;
  double latency_p95_us = 0;
  double latency_p99_us = 0;
  double latency_p999_us = 0;
  double latency_max_us = 0;

  // Server-side averages per request over the whole point, from the statistics extension
  // (difference of the model's stats before and after the point). has_server_stats is false
  // when the server did not answer the statistics request.
  bool has_server_stats = false;
  double server_queue_us = 0;
  double server_compute_us = 0;  // compute_input + compute_infer + compute_output
  uint64_t server_requests = 0;  // successful requests the server counted over the point

  // Successful requests per input sample (in the input set's order) over the whole point, from
  // its start until the load stopped (every window and the moments after the last one, as the
  // server-side split counts them): the mix the server answered. Sums to at least `completed`.
  std::vector<uint64_t> requests_per_sample;

  int windows_measured = 0;  // windows run at this point (3 .. cap)
  bool stable = false;       // the last three windows agreed within 10% (throughput and pP latency)
  double window_s = 0;       // length of one window, seconds
};

}  // namespace inferloop::perf
