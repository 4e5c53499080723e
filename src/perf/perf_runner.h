// PerfRunner: measures one load point: starts the generator, takes measurement windows until the
// last three are stable (perf_math.h LastThreeStable) or the window cap is reached, merges the
// last three windows into a PerfResult, and adds the server-side queue/compute split from the
// statistics extension read before and after the point.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "perf/input_set.h"
#include "perf/load_generator.h"
#include "perf/model_client.h"
#include "perf/perf_result.h"
#include "perf/sample_recorder.h"

namespace inferloop::perf {

struct RunOptions {
  double window_s = 2.0;    // one measurement window
  int max_windows = 10;     // cap on windows per point
  double percentile = 99;   // the percentile the stability rule (and the latency bound) uses
  int batch_size = 1;
  int max_outstanding = 1024;
  uint64_t seed = 1;
  size_t samples = 1;                // the input set's size (successes are counted per sample)
  SampleDistribution distribution;  // how each request's sample is picked
};

// One window as it ends: for a progress line.
struct WindowProgress {
  LoadMode mode;
  double load;
  int window;                 // 1-based
  double throughput;          // infer/s
  double latency_pct_us;      // the chosen percentile
  uint64_t errors;
};

// Merges windows into a result (latencies pooled, exact nearest-rank percentiles).
PerfResult MergeWindows(LoadMode mode, double load, int batch_size, const std::vector<WindowSamples>& windows,
                        const std::vector<double>& elapsed_s);

class PerfRunner {
 public:
  // `stats` may be null (no server-side split). `interrupted` is polled every few milliseconds.
  PerfRunner(LoadGenerator& generator, ModelClient* stats, std::string model, std::string version,
             RunOptions options, const std::atomic<bool>* interrupted,
             std::function<void(const WindowProgress&)> on_window = {});

  // Measures one point. With `interrupted` set mid-point, returns what the completed windows
  // measured (windows_measured may be 0) and sets *was_interrupted. Errors: the generator could
  // not start, or every request of a window failed (the first error message is included); then
  // `partial`, when given, gets what the windows before the failure measured (windows_measured
  // 0 when none did).
  Result<PerfResult> MeasurePoint(LoadMode mode, double load, bool* was_interrupted,
                                  PerfResult* partial = nullptr);

 private:
  LoadGenerator& generator_;
  ModelClient* stats_;
  std::string model_, version_;
  RunOptions options_;
  const std::atomic<bool>* interrupted_;
  std::function<void(const WindowProgress&)> on_window_;
};

}  // namespace inferloop::perf
