// inferloop perf --url http://HOST:PORT | grpc://HOST:PORT --model NAME [options]
// A load generator for KServe v2 servers (docs/PERF.md): closed-loop concurrency sweeps or
// open-loop Poisson request rates, measured in windows until stable, reported as a table on
// stdout and optionally CSV, JSON and an SVG plot. Ctrl-C prints what was measured and exits 130.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "perf/endpoint.h"
#include "perf/input_set.h"
#include "perf/load_generator.h"
#include "perf/model_client.h"
#include "perf/perf_math.h"
#include "perf/perf_runner.h"
#include "perf/report.h"
#include "perf/request_builder.h"
#ifdef INFERLOOP_HAVE_SVG_PLOT  // set by CMake when src/perf/svg_plot.cc is present
#include "perf/svg_plot.h"
#endif

namespace inferloop::cli {
namespace {

struct PerfArgs {
  std::string url = "http://127.0.0.1:8000";
  std::string model;
  std::string version;
  std::string concurrency_range;
  std::string request_rate_range;
  double duration_s = 2.0;
  int max_windows = 10;
  std::string input_data = "random";
  std::string input_distribution = "round-robin";
  std::vector<std::string> shapes;
  int batch_size = 1;
  std::optional<int64_t> priority;
  bool binary = false;
  double percentile = 99;
  std::optional<double> latency_bound_ms;
  std::optional<double> target_qps;
  int max_outstanding = 1024;
  int io_threads = 2;
  uint64_t seed = 1;
  std::string csv;
  std::string json;
  std::string plot;
};

// Ctrl-C: a thread waits for SIGINT (blocked everywhere else) and sets `interrupted`; a second
// Ctrl-C exits at once. Construct before any other thread starts.
class InterruptWatcher {
 public:
  InterruptWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] {
      for (;;) {
        int sig = 0;
        if (sigwait(&set_, &sig) != 0) continue;
        if (sig == SIGUSR1 && done_.load()) return;
        if (sig == SIGINT) {
          if (interrupted_.exchange(true)) _exit(130);
        }
      }
    });
  }
  ~InterruptWatcher() {
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
    pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
  }
  const std::atomic<bool>& interrupted() const { return interrupted_; }

 private:
  sigset_t set_;
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

std::string Fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, a);
  return buf;
}

// What the command line asks for, checked before anything connects.
struct PerfSetup {
  perf::Endpoint endpoint;
  perf::LoadMode mode = perf::LoadMode::kConcurrency;
  std::vector<double> loads;  // the sweep; empty when only --target-qps is given
  perf::InputOptions inputs;
  perf::SampleDistribution distribution;
};

// Prints the error and returns nullopt (exit status 2) for options that do not combine or do
// not parse.
std::optional<PerfSetup> CheckPerfArgs(const PerfArgs& a) {
  if (!a.concurrency_range.empty() && !a.request_rate_range.empty()) {
    std::cerr << "error: give --concurrency-range or --request-rate-range, not both\n";
    return std::nullopt;
  }
  if (a.target_qps && !a.request_rate_range.empty()) {
    std::cerr << "error: --target-qps sizes a concurrency; it does not combine with --request-rate-range\n";
    return std::nullopt;
  }
  auto endpoint = perf::ParseEndpoint(a.url);
  if (!endpoint.ok()) {
    std::cerr << "error: " << endpoint.status().message() << "\n";
    return std::nullopt;
  }
  PerfSetup setup;
  setup.endpoint = endpoint.value();
  setup.mode = a.request_rate_range.empty() ? perf::LoadMode::kConcurrency : perf::LoadMode::kRequestRate;
  if (setup.mode == perf::LoadMode::kRequestRate || !a.concurrency_range.empty() || !a.target_qps) {
    auto r = setup.mode == perf::LoadMode::kConcurrency
                 ? perf::ParseRange(a.concurrency_range.empty() ? "1" : a.concurrency_range, true)
                 : perf::ParseRange(a.request_rate_range, false);
    if (!r.ok()) {
      std::cerr << "error: "
                << (setup.mode == perf::LoadMode::kConcurrency ? "--concurrency-range " : "--request-rate-range ")
                << r.status().message() << "\n";
      return std::nullopt;
    }
    setup.loads = r.value();
  }
  constexpr double kMaxConcurrency = 16384;
  if (setup.mode == perf::LoadMode::kConcurrency && !setup.loads.empty() && setup.loads.back() > kMaxConcurrency) {
    std::cerr << "error: --concurrency-range: at most " << kMaxConcurrency << " requests in flight\n";
    return std::nullopt;
  }
  auto distribution = perf::ParseSampleDistribution(a.input_distribution);
  if (!distribution.ok()) {
    std::cerr << "error: " << distribution.status().message() << "\n";
    return std::nullopt;
  }
  setup.distribution = distribution.value();
  setup.inputs.data = a.input_data;
  setup.inputs.batch_size = a.batch_size;
  setup.inputs.priority = a.priority;
  setup.inputs.binary = a.binary;
  setup.inputs.seed = a.seed;
  for (const auto& s : a.shapes) {
    Status st = perf::ParseShapeOption(s, &setup.inputs.shapes);
    if (!st.ok()) {
      std::cerr << "error: " << st.message() << "\n";
      return std::nullopt;
    }
  }
#ifndef INFERLOOP_HAVE_SVG_PLOT
  if (!a.plot.empty()) {
    std::cerr << "error: --plot: this build has no SVG plot writer (src/perf/svg_plot.cc)\n";
    return std::nullopt;
  }
#endif
  return setup;
}

// One socket per connection: lift the soft open-file limit to the hard one.
void RaiseOpenFileLimit() {
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

// The requests every point sends: one per sample of the input set, encoded once (for the
// transport in use only: a large set is held once).
struct PreparedRequests {
  std::vector<std::string> sample_names;
  std::vector<perf::EncodedRequest> encoded;
};

// Asks the server for the model and builds and encodes the input set's requests. On failure
// prints the error and sets `exit_code` (1: the server or encoding failed, 2: the inputs do not
// fit the model).
std::optional<PreparedRequests> PrepareRequests(perf::ModelClient& client, const PerfArgs& a,
                                                const perf::InputOptions& inputs, bool grpc, int* exit_code) {
  auto model = client.FetchModel(a.model, a.version);
  if (!model.ok()) {
    std::cerr << "error: " << model.status().message() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
  auto set = perf::BuildInputSet(model.value(), inputs);
  if (!set.ok()) {
    std::cerr << "error: " << set.status().message() << "\n";
    *exit_code = 2;
    return std::nullopt;
  }
  PreparedRequests out;
  out.sample_names = std::move(set.value().sample_names);
  for (auto& request : set.value().requests) {
    auto encoded = perf::EncodeRequest(request, a.binary);
    if (!encoded.ok()) {
      std::cerr << "error: encoding the request: " << encoded.status().message() << "\n";
      *exit_code = 1;
      return std::nullopt;
    }
    (grpc ? encoded.value().rest_body : encoded.value().grpc_message).clear();
    out.encoded.push_back(std::move(encoded).value());
    request = frontends::InferRequest{};  // its tensors are no longer needed
  }
  return out;
}

perf::RunOptions MakeRunOptions(const PerfArgs& a, size_t samples, const perf::SampleDistribution& distribution) {
  perf::RunOptions opts;
  opts.window_s = a.duration_s;
  opts.max_windows = a.max_windows;
  opts.percentile = a.percentile;
  opts.batch_size = a.batch_size;
  opts.max_outstanding = a.max_outstanding;
  opts.seed = a.seed;
  opts.samples = samples;
  opts.distribution = distribution;
  return opts;
}

// A one-line progress display on a terminal's stderr, redrawn every window (nothing otherwise).
std::function<void(const perf::WindowProgress&)> MakeProgressLine(bool tty, double pct) {
  return [tty, pct](const perf::WindowProgress& p) {
    if (!tty) return;
    std::string load = p.mode == perf::LoadMode::kConcurrency ? "concurrency " + std::to_string(static_cast<int>(p.load))
                                                              : "rate " + Fmt("%.1f", p.load) + "/s";
    std::fprintf(stderr, "\r\033[K%s: window %d, %.0f infer/s, p%g %.3f ms%s", load.c_str(), p.window, p.throughput,
                 pct, p.latency_pct_us / 1000,
                 p.errors ? (", " + std::to_string(p.errors) + " errors").c_str() : "");
    std::fflush(stderr);
  };
}

perf::RunSummary StartSummary(const PerfArgs& a, const perf::Endpoint& endpoint) {
  perf::RunSummary summary;
  summary.url = endpoint.ToString();
  summary.model = a.model;
  summary.version = a.version;
  summary.protocol = endpoint.protocol == perf::Endpoint::Protocol::kGrpc ? "grpc" : (a.binary ? "rest-binary" : "rest-json");
  summary.percentile = a.percentile;
  summary.latency_bound_ms = a.latency_bound_ms;
  summary.target_qps = a.target_qps;
  return summary;
}

// The measured points of one run, in order. A failed point (its windows before the failure kept)
// sets exit code 1 and Ctrl-C sets 130; either stops the run.
class PerfSweep {
 public:
  PerfSweep(perf::PerfRunner& runner, const PerfArgs& a, bool tty, perf::RunSummary& summary)
      : runner_(runner), a_(a), tty_(tty), summary_(summary) {}

  // The --concurrency-range / --request-rate-range points, stopped past --latency-bound-ms;
  // false when a failure or Ctrl-C stopped it.
  bool SweepLoads(perf::LoadMode mode, const std::vector<double>& loads);
  // --target-qps: sizes a concurrency by Little's law and measures it.
  void MeasureTargetQps();
  // --latency-bound-ms: the highest-throughput point under the bound.
  void PickBestUnderBound();

  const std::vector<perf::PerfResult>& points() const { return points_; }
  int exit_code() const { return exit_code_; }

 private:
  bool Measure(perf::LoadMode m, double load);
  double PercentileMs(const perf::PerfResult& r) const { return perf::LatencyAtPercentile(r, a_.percentile) / 1000; }

  perf::PerfRunner& runner_;
  const PerfArgs& a_;
  const bool tty_;
  perf::RunSummary& summary_;
  std::vector<perf::PerfResult> points_;
  int exit_code_ = 0;
};

bool PerfSweep::Measure(perf::LoadMode m, double load) {
  bool interrupted = false;
  perf::PerfResult partial;
  auto r = runner_.MeasurePoint(m, load, &interrupted, &partial);
  if (tty_) std::fprintf(stderr, "\r\033[K");
  if (!r.ok()) {
    if (partial.windows_measured > 0) points_.push_back(partial);  // the windows before the failure
    std::cerr << "error: " << r.status().message() << "\n";
    exit_code_ = 1;
    return false;
  }
  if (r.value().windows_measured > 0) points_.push_back(r.value());
  if (interrupted) {
    summary_.interrupted = true;
    exit_code_ = 130;
    return false;
  }
  return true;
}

bool PerfSweep::SweepLoads(perf::LoadMode mode, const std::vector<double>& loads) {
  for (double load : loads) {
    if (!Measure(mode, load)) return false;
    if (a_.latency_bound_ms && PercentileMs(points_.back()) > *a_.latency_bound_ms) {
      std::cerr << "p" << a_.percentile << " " << Fmt("%.3f", PercentileMs(points_.back()))
                << " ms is over the bound of " << *a_.latency_bound_ms << " ms: sweep stopped\n";
      break;
    }
  }
  return true;
}

void PerfSweep::MeasureTargetQps() {
  // Little's law from the latency at low load (concurrency 1): measured unless the sweep began there.
  const perf::PerfResult* low = nullptr;
  if (!points_.empty() && points_[0].mode == perf::LoadMode::kConcurrency && points_[0].load == 1) low = &points_[0];
  if (!low && Measure(perf::LoadMode::kConcurrency, 1)) low = &points_.back();
  if (!low) return;
  int c = perf::LittlesLawConcurrency(low->latency_avg_us, *a_.target_qps / a_.batch_size);
  summary_.suggested_concurrency = c;
  std::cerr << "target " << *a_.target_qps << " infer/s: avg latency " << Fmt("%.3f", low->latency_avg_us / 1000)
            << " ms at concurrency 1, Little's law x " << perf::kLittleHeadroom << " headroom suggests concurrency "
            << c << "\n";
  if (Measure(perf::LoadMode::kConcurrency, c)) {
    const auto& p = points_.back();
    bool within = !a_.latency_bound_ms || PercentileMs(p) <= *a_.latency_bound_ms;
    summary_.target_reached = p.throughput_infer_per_s >= 0.95 * *a_.target_qps && within;
  }
}

void PerfSweep::PickBestUnderBound() {
  for (size_t i = 0; i < points_.size(); ++i)
    if (PercentileMs(points_[i]) <= *a_.latency_bound_ms && points_[i].completed > 0 &&
        (!summary_.best_under_bound ||
         points_[i].throughput_infer_per_s > points_[*summary_.best_under_bound].throughput_infer_per_s))
      summary_.best_under_bound = i;
}

// The table on stdout, then the --csv, --json and --plot files. Returns `exit_code`, or 1 when it
// was 0 and a file could not be written.
int WriteReports(const PerfArgs& a, const std::vector<perf::PerfResult>& points, const perf::RunSummary& summary,
                 int exit_code) {
  perf::WriteTable(std::cout, points, summary);
  std::cout.flush();
  if (!a.csv.empty()) {
    Status st = perf::WriteCsvFile(a.csv, points, summary);
    if (!st.ok()) { std::cerr << "error: " << st.message() << "\n"; if (!exit_code) exit_code = 1; }
  }
  if (!a.json.empty()) {
    Status st = perf::WriteJsonFile(a.json, points, summary);
    if (!st.ok()) { std::cerr << "error: " << st.message() << "\n"; if (!exit_code) exit_code = 1; }
  }
#ifdef INFERLOOP_HAVE_SVG_PLOT
  if (!a.plot.empty()) {
    Status st = perf::WritePerfPlotSvg(points, a.model + " (" + summary.protocol + ")", a.plot,
                                        a.latency_bound_ms.value_or(0));
    if (!st.ok()) { std::cerr << "error: " << st.message() << "\n"; if (!exit_code) exit_code = 1; }
  }
#endif
  return exit_code;
}

int RunPerf(const PerfArgs& a) {
  const std::optional<PerfSetup> setup = CheckPerfArgs(a);
  if (!setup) return 2;
  RaiseOpenFileLimit();

  InterruptWatcher watcher;  // before any thread (gRPC's included) starts
  auto client = perf::MakeModelClient(setup->endpoint);
  int exit_code = 0;
  const bool grpc = setup->endpoint.protocol == perf::Endpoint::Protocol::kGrpc;
  std::optional<PreparedRequests> prepared = PrepareRequests(*client, a, setup->inputs, grpc, &exit_code);
  if (!prepared) return exit_code;
  auto generator = grpc ? perf::MakeGrpcLoadGenerator(setup->endpoint, prepared->encoded)
                        : perf::MakeRestLoadGenerator(setup->endpoint, a.model, a.version, prepared->encoded,
                                                      a.io_threads);
  prepared->encoded.clear();  // the generator holds its own copy
  const bool tty = isatty(STDERR_FILENO);
  perf::PerfRunner runner(*generator, client.get(), a.model, a.version,
                          MakeRunOptions(a, prepared->sample_names.size(), setup->distribution),
                          &watcher.interrupted(), MakeProgressLine(tty, a.percentile));

  perf::RunSummary summary = StartSummary(a, setup->endpoint);
  summary.input_data = a.input_data;
  summary.sample_names = std::move(prepared->sample_names);
  summary.input_distribution = setup->distribution.ToString();
  PerfSweep sweep(runner, a, tty, summary);
  if (sweep.SweepLoads(setup->mode, setup->loads) && a.target_qps) sweep.MeasureTargetQps();
  if (a.latency_bound_ms) sweep.PickBestUnderBound();
  generator.reset();
  return WriteReports(a, sweep.points(), summary, sweep.exit_code());
}

}  // namespace

Runner AddPerfCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("perf", "Load-test a KServe v2 server: throughput and latency percentiles (docs/PERF.md)");
  auto a = std::make_shared<PerfArgs>();
  cmd->add_option("--url", a->url, "http://HOST:PORT (REST) or grpc://HOST:PORT")->capture_default_str();
  cmd->add_option("--model,-m", a->model, "Model name")->required();
  cmd->add_option("--version", a->version, "Model version (default: the server's choice)");
  cmd->add_option("--concurrency-range", a->concurrency_range,
                  "Closed loop: START[:END[:STEP]] requests in flight (default 1)");
  cmd->add_option("--request-rate-range", a->request_rate_range, "Open loop: START[:END[:STEP]] requests/s, Poisson arrivals");
  cmd->add_option("--duration", a->duration_s, "Seconds per measurement window")->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  cmd->add_option("--max-windows", a->max_windows, "Most windows per point before giving up on stability")
      ->capture_default_str()->check(CLI::Range(3, 1000));
  cmd->add_option("--input-data", a->input_data,
                  "random | zero | DIR holding <input>.npy | DIR of sample folders DIR/<sample>/<input>.npy")
      ->capture_default_str();
  cmd->add_option("--input-distribution", a->input_distribution,
                  "How each request picks a sample of the input set: round-robin | uniform | zipf[:S] (S > 0, default 1)")
      ->capture_default_str();
  cmd->add_option("--shape", a->shapes, "NAME:D1,D2,... dims of a variable-shape input (without the batch dim); repeatable");
  cmd->add_option("--batch-size,-b", a->batch_size, "Batch size (batching models)")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--priority", a->priority, "Request 'priority' parameter");
  cmd->add_flag("--binary", a->binary, "REST: binary tensor data extension instead of JSON data");
  cmd->add_option("--percentile", a->percentile, "Percentile for stability and the latency bound: 50, 90, 95, 99 or 99.9")
      ->capture_default_str()->check(CLI::IsMember({50.0, 90.0, 95.0, 99.0, 99.9}));
  cmd->add_option("--latency-bound-ms", a->latency_bound_ms, "Stop the sweep once the percentile latency exceeds this; report the best point under it")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--target-qps", a->target_qps, "Size a concurrency for this many infer/s by Little's law and measure it")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-outstanding", a->max_outstanding, "Open loop: most requests in flight (over it: 'overload' errors)")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--io-threads", a->io_threads, "REST: I/O threads")->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--seed", a->seed, "Seed for random inputs, Poisson arrivals and the sample draws")->capture_default_str();
  cmd->add_option("--csv", a->csv, "Write the points as CSV to this file");
  cmd->add_option("--json", a->json, "Write the points and run summary as JSON to this file");
  cmd->add_option("--plot", a->plot, "Write an SVG latency-vs-throughput plot to this file");
  return [a] { return RunPerf(*a); };
}

}  // namespace inferloop::cli
