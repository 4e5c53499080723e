#include "perf/perf_runner.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "perf/perf_math.h"

namespace inferloop::perf {

using Clock = std::chrono::steady_clock;

PerfResult MergeWindows(LoadMode mode, double load, int batch_size, const std::vector<WindowSamples>& windows,
                        const std::vector<double>& elapsed_s) {
  PerfResult r;
  r.mode = mode;
  r.load = load;
  r.batch_size = batch_size;
  std::vector<double> lat;
  double seconds = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    lat.insert(lat.end(), windows[i].latencies_us.begin(), windows[i].latencies_us.end());
    for (const auto& [k, v] : windows[i].errors) {
      r.errors_by_kind[k] += v;
      r.errors += v;
    }
    seconds += elapsed_s[i];
  }
  std::sort(lat.begin(), lat.end());
  r.completed = lat.size();
  if (seconds > 0) {
    r.throughput_req_per_s = static_cast<double>(lat.size()) / seconds;
    r.throughput_infer_per_s = r.throughput_req_per_s * batch_size;
  }
  if (!lat.empty()) {
    double sum = 0;
    for (double x : lat) sum += x;
    r.latency_avg_us = sum / static_cast<double>(lat.size());
    r.latency_p50_us = PercentileOfSorted(lat, 50);
    r.latency_p90_us = PercentileOfSorted(lat, 90);
    r.latency_p95_us = PercentileOfSorted(lat, 95);
    r.latency_p99_us = PercentileOfSorted(lat, 99);
    r.latency_p999_us = PercentileOfSorted(lat, 99.9);
    r.latency_max_us = lat.back();
  }
  return r;
}

PerfRunner::PerfRunner(LoadGenerator& generator, ModelClient* stats, std::string model, std::string version,
                       RunOptions options, const std::atomic<bool>* interrupted,
                       std::function<void(const WindowProgress&)> on_window)
    : generator_(generator),
      stats_(stats),
      model_(std::move(model)),
      version_(std::move(version)),
      options_(options),
      interrupted_(interrupted),
      on_window_(std::move(on_window)) {}

Result<PerfResult> PerfRunner::MeasurePoint(LoadMode mode, double load, bool* was_interrupted, PerfResult* partial) {
  *was_interrupted = false;
  std::optional<ModelStatsSnapshot> before;
  if (stats_) {
    auto s = stats_->FetchStats(model_, version_);
    if (s.ok()) before = s.value();
  }
  SampleRecorder recorder(options_.samples);
  LoadSpec spec;
  spec.distribution = options_.distribution;
  spec.mode = mode;
  spec.load = load;
  spec.max_outstanding = options_.max_outstanding;
  spec.seed = options_.seed;
  Status st = generator_.Start(spec, &recorder);
  if (!st.ok()) return st;

  std::vector<WindowSamples> windows;
  std::vector<double> elapsed;
  std::vector<WindowSummary> summaries;
  Status failure;
  auto window = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.window_s));
  auto start = Clock::now();
  for (int w = 1; w <= options_.max_windows; ++w) {
    auto end = start + window;
    while (Clock::now() < end && !interrupted_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (interrupted_->load()) {
      *was_interrupted = true;
      break;
    }
    WindowSamples samples = recorder.Take();
    auto now = Clock::now();
    double secs = std::chrono::duration<double>(now - start).count();
    start = now;
    std::sort(samples.latencies_us.begin(), samples.latencies_us.end());
    WindowSummary sum;
    sum.completed = samples.latencies_us.size();
    sum.throughput = secs > 0 ? static_cast<double>(sum.completed) * options_.batch_size / secs : 0;
    sum.latency_us = PercentileOfSorted(samples.latencies_us, options_.percentile);
    if (on_window_) on_window_({mode, load, w, sum.throughput, sum.latency_us, samples.error_count()});
    if (sum.completed == 0 && samples.error_count() > 0) {
      failure = Status::FailedPrecondition("every request failed at " + std::string(LoadModeName(mode)) + " " +
                                           (mode == LoadMode::kConcurrency ? std::to_string(static_cast<int64_t>(load)) : std::to_string(load)) + "; first error: " + recorder.first_error());
      break;
    }
    windows.push_back(std::move(samples));
    elapsed.push_back(secs);
    summaries.push_back(sum);
    if (LastThreeStable(summaries)) break;
  }
  generator_.Stop();

  size_t keep = std::min<size_t>(3, windows.size());
  std::vector<WindowSamples> last(std::make_move_iterator(windows.end() - keep), std::make_move_iterator(windows.end()));
  std::vector<double> last_elapsed(elapsed.end() - keep, elapsed.end());
  PerfResult r = MergeWindows(mode, load, options_.batch_size, last, last_elapsed);
  r.windows_measured = static_cast<int>(windows.size());
  r.stable = LastThreeStable(summaries);
  r.window_s = options_.window_s;
  r.requests_per_sample = recorder.per_sample();
  if (!failure.ok()) {
    if (partial) *partial = r;
    return failure;
  }
  if (stats_ && before) {
    auto after = stats_->FetchStats(model_, version_);
    if (after.ok() && after.value().success_count > before->success_count) {
      uint64_t n = after.value().success_count - before->success_count;
      r.has_server_stats = true;
      r.server_requests = n;
      r.server_queue_us = static_cast<double>(after.value().queue_ns - before->queue_ns) / n / 1000.0;
      r.server_compute_us = static_cast<double>(after.value().compute_ns - before->compute_ns) / n / 1000.0;
    }
  }
  return r;
}

}  // namespace inferloop::perf
