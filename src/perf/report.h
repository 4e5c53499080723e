// The reports of `inferloop perf`: the stdout table, the CSV file and the JSON file.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "perf/perf_result.h"

namespace inferloop::perf {

// What the run was, for the JSON header and the summary lines.
struct RunSummary {
  std::string url;
  std::string model;
  std::string version;
  std::string protocol;       // "rest-json", "rest-binary" or "grpc"
  double percentile = 99;
  std::optional<double> latency_bound_ms;
  // Filled when a latency bound was given: the index into the points of the best one (the
  // highest throughput whose percentile latency is under the bound), if any.
  std::optional<size_t> best_under_bound;
  // --target-qps: the target, the concurrency Little's law suggested, and the measured point.
  std::optional<double> target_qps;
  std::optional<int> suggested_concurrency;
  std::optional<bool> target_reached;
  bool interrupted = false;
  // The input set: the --input-data value, its samples' names (one for random, zero and a flat
  // directory) and the --input-distribution that picked a sample per request.
  std::string input_data = "random";
  std::vector<std::string> sample_names = {"random"};
  std::string input_distribution = "round-robin";
};

// The CSV columns, in order (the first is "concurrency" or "request_rate" by mode; the last two,
// input_samples and input_distribution, repeat the run's input set on every row).
std::vector<std::string> CsvColumns(LoadMode mode);

// The latency of `r` at percentile p (50, 90, 95, 99 or 99.9; others: the nearest of those).
double LatencyAtPercentile(const PerfResult& r, double p);

void WriteTable(std::ostream& os, const std::vector<PerfResult>& points, const RunSummary& summary);
// One header line, one line per point; errors_by_kind as "kind=n;kind=n".
void WriteCsv(std::ostream& os, const std::vector<PerfResult>& points, const RunSummary& summary);
void WriteJson(std::ostream& os, const std::vector<PerfResult>& points, const RunSummary& summary);
// To files; an error naming the path when it cannot be written.
Status WriteCsvFile(const std::string& path, const std::vector<PerfResult>& points, const RunSummary& summary);
Status WriteJsonFile(const std::string& path, const std::vector<PerfResult>& points, const RunSummary& summary);

}  // namespace inferloop::perf
