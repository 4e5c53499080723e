// inferloop bench MODEL [--threads N] [--batch B] [--iterations N] [--warmup N] [--level L] [--concurrency C] [--inputs DIR]
//                       [--shape NAME=D1,D2,...] [--dim SYMBOL=N] [--save-outputs DIR] [--profile TRACE.json] [--profile-top N]
// Times Session::RunInto (outputs reused across runs) and prints one JSON line (latency percentiles, throughput, peak RSS,
// session-create time). bench/ort_bench.py measures ONNX Runtime the same way.
//
// Inputs come from DIR/<input name>.npy, or are made up from the declared shapes: dim 0 when
// symbolic or unknown is --batch, other symbolic dims come from --dim SYMBOL=N, --shape gives a
// whole shape. Made-up float inputs are uniform in [-1, 1) (fixed seed); integer inputs are all 1
// and bool inputs all true, which is a valid token id, table index and "attend" mask value.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "base/json_string.h"
#include "base/npy.h"
#include "base/status_macros.h"
#include "cli/commands.h"
#include "cli/precision_option.h"
#include "inferloop/session.h"
#include "tools/run_profile.h"

namespace inferloop::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// A field of /proc/self/status in MiB ("VmHWM", "VmRSS"); -1 when unavailable.
double ProcStatusMb(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, field.size() + 1, field + ":") != 0) continue;
    std::istringstream is(line.substr(field.size() + 1));
    double kb = -1;
    is >> kb;
    return kb < 0 ? -1 : kb / 1024.0;
  }
  return -1;
}


// Nearest-rank percentile of sorted samples (p in (0, 100]).
double Percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// "NAME=D1,D2" or "NAME:D1,D2" (split at the first '=', else at the last ':').
Status ParseShapeSpec(const std::string& spec, std::string* name, Shape* shape) {
  size_t sep = spec.find('=');
  if (sep == std::string::npos) sep = spec.rfind(':');
  if (sep == std::string::npos || sep == 0 || sep + 1 == spec.size())
    return Status::InvalidArgument("--shape expects NAME=D1,D2,..., got '" + spec + "'");
  *name = spec.substr(0, sep);
  shape->clear();
  std::stringstream ss(spec.substr(sep + 1));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    size_t used = 0;
    long long d = -1;
    try {
      d = std::stoll(tok, &used);
    } catch (...) {
      used = 0;
    }
    if (used != tok.size() || d < 0) return Status::InvalidArgument("bad dimension '" + tok + "' in --shape " + spec);
    shape->push_back(d);
  }
  return Status::Ok();
}

Result<Tensor> MakeRandomInput(const ValueInfo& vi, const Shape& shape, std::mt19937& rng) {
  IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(vi.dtype, shape));
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const int64_t n = t.size();
  switch (vi.dtype) {
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = uni(rng);
      break;
    case DataType::kDouble:
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = uni(rng);
      break;
    case DataType::kInt8: std::fill_n(t.data<int8_t>(), n, int8_t{1}); break;
    case DataType::kUInt8: std::fill_n(t.data<uint8_t>(), n, uint8_t{1}); break;
    case DataType::kInt16: std::fill_n(t.data<int16_t>(), n, int16_t{1}); break;
    case DataType::kUInt16: std::fill_n(t.data<uint16_t>(), n, uint16_t{1}); break;
    case DataType::kInt32: std::fill_n(t.data<int32_t>(), n, int32_t{1}); break;
    case DataType::kUInt32: std::fill_n(t.data<uint32_t>(), n, uint32_t{1}); break;
    case DataType::kInt64: std::fill_n(t.data<int64_t>(), n, int64_t{1}); break;
    case DataType::kUInt64: std::fill_n(t.data<uint64_t>(), n, uint64_t{1}); break;
    case DataType::kBool: std::fill_n(t.data<bool>(), n, true); break;
    default:
      return Status::InvalidArgument("input '" + vi.name + "' has type " + DataTypeName(vi.dtype) +
                                     ", which bench cannot make up; pass --inputs DIR with " + vi.name + ".npy");
  }
  return t;
}

std::string SafeFileName(std::string name) {
  for (char& c : name)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return name;
}

struct BenchArgs {
  std::string model;
  int threads = 0;
  int64_t batch = 1;
  int iterations = 20;
  int warmup = 3;
  int level = 2;
  int concurrency = 1;
  std::string inputs_dir;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  std::string save_outputs;
  std::string precision;
  std::string profile;   // --profile: Chrome trace path; the tables go to stderr
  int profile_top = 20;
};

int Fail(const Status& st, int code = 1) {
  std::cerr << "error: " << st.ToString() << "\n";
  return code;
}

// Builds the feeds for every declared input; fills `batch` with the actual batch (dim 0 of the
// first input of rank >= 1).
Result<std::vector<NamedValue>> MakeFeeds(const Session& session, const BenchArgs& args, bool batch_given,
                                          int64_t* batch) {
  std::map<std::string, Shape> overrides;
  std::set<std::string> names;
  for (const auto& vi : session.inputs()) names.insert(vi.name);
  for (const auto& spec : args.shapes) {
    std::string name;
    Shape shape;
    IL_RETURN_IF_ERROR(ParseShapeSpec(spec, &name, &shape));
    if (!names.count(name)) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return Status::InvalidArgument("--shape names '" + name + "', which is not an input of the model (inputs: " + known + ")");
    }
    overrides[name] = shape;
  }
  std::map<std::string, int64_t> symbols;
  for (const auto& spec : args.dims) {
    size_t eq = spec.find('=');
    long long v = -1;
    size_t used = 0;
    if (eq != std::string::npos && eq > 0) {
      try {
        v = std::stoll(spec.substr(eq + 1), &used);
      } catch (...) {
        used = 0;
      }
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != spec.size() - eq - 1 || v < 0)
      return Status::InvalidArgument("--dim expects SYMBOL=N, got '" + spec + "'");
    symbols[spec.substr(0, eq)] = v;
  }

  std::vector<NamedValue> feeds;
  std::mt19937 rng(1234);
  *batch = -1;
  for (const auto& vi : session.inputs()) {
    if (vi.kind != ValueInfo::Kind::kTensor)
      return Status::InvalidArgument("input '" + vi.name + "' is not a tensor; bench feeds tensors only");
    Tensor t;
    if (!args.inputs_dir.empty()) {
      std::string path = (std::filesystem::path(args.inputs_dir) / (SafeFileName(vi.name) + ".npy")).string();
      if (!std::filesystem::exists(path))
        return Status::NotFound("input '" + vi.name + "': no file " + path);
      auto r = ReadNpyFile(path);
      if (!r.ok()) return r.status().WithContext("input '" + vi.name + "'");
      t = std::move(r).value();
      if (auto it = overrides.find(vi.name); it != overrides.end() && it->second != t.shape())
        return Status::InvalidArgument("input '" + vi.name + "': --shape " + ShapeToString(it->second) + " but " + path +
                                       " has shape " + ShapeToString(t.shape()));
    } else {
      Shape shape;
      if (auto it = overrides.find(vi.name); it != overrides.end()) {
        shape = it->second;
      } else {
        if (!vi.has_shape)
          return Status::InvalidArgument("input '" + vi.name + "' has no declared shape; pass --shape " + vi.name + "=D1,D2,...");
        for (size_t d = 0; d < vi.shape.size(); ++d) {
          const Dim& dim = vi.shape[d];
          if (dim.value >= 0) {
            shape.push_back(dim.value);
          } else if (!dim.symbol.empty() && symbols.count(dim.symbol)) {
            shape.push_back(symbols[dim.symbol]);
          } else if (d == 0) {
            shape.push_back(args.batch);
          } else {
            return Status::InvalidArgument("input '" + vi.name + "' dim " + std::to_string(d) + " ('" +
                                           (dim.symbol.empty() ? "?" : dim.symbol) + "') is not fixed; pass --dim " +
                                           (dim.symbol.empty() ? "SYMBOL" : dim.symbol) + "=N or --shape " + vi.name + "=...");
          }
        }
      }
      IL_ASSIGN_OR_RETURN(t, MakeRandomInput(vi, shape, rng));
    }
    if (*batch < 0 && t.rank() >= 1) *batch = t.dim(0);
    feeds.emplace_back(vi.name, Value(std::move(t)));
  }
  if (*batch < 0) *batch = 1;
  if (batch_given && *batch != args.batch)
    return Status::InvalidArgument("--batch " + std::to_string(args.batch) + " but the inputs have batch " +
                                   std::to_string(*batch) + (args.inputs_dir.empty() ? " (fixed in the model)" : " (from --inputs)"));
  return feeds;
}

// The bench subcommand's options; returns --batch (whether it was given matters).
CLI::Option* AddBenchOptions(CLI::App* cmd, BenchArgs* args) {
  cmd->add_option("model", args->model, "Path to an ONNX model file")->required();
  CLI::Option* batch_opt =
      cmd->add_option("-b,--batch", args->batch, "Batch size for made-up inputs (symbolic/unknown dim 0); default 1")
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  cmd->add_option("-t,--threads", args->threads, "Intra-op threads; 0 (default) = the CPUs this process may use")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("-n,--iterations", args->iterations, "Timed runs (default 20)")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("-w,--warmup", args->warmup, "Untimed runs first (default 3)")->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--level", args->level, "Graph optimization level: 0 none, 1 basic, 2 (default) fusions too")
      ->check(CLI::Range(0, 2));
  cmd->add_option("-c,--concurrency", args->concurrency,
                  "Runs in flight at once on the one session (threads calling RunInto; default 1); latencies are "
                  "per run, throughput over the wall time")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--inputs", args->inputs_dir, "Folder with one <input name>.npy per model input");
  cmd->add_option("-s,--shape", args->shapes, "NAME=D1,D2,... (or NAME:D1,D2,...): whole shape of a made-up input (repeatable)");
  cmd->add_option("--dim", args->dims, "SYMBOL=N: value of a symbolic dim in made-up inputs, e.g. sequence=128 (repeatable)");
  cmd->add_option("--save-outputs", args->save_outputs, "Write the last run's outputs as DIR/<name>.npy");
  cmd->add_option("--profile", args->profile,
                  "Profile the timed runs: time per op type and the slowest nodes as tables on stderr, and every node's "
                  "run as a Chrome trace JSON (ONNX Runtime's profile format) in this file");
  cmd->add_option("--profile-top", args->profile_top, "Nodes in the --profile table of slowest nodes (default 20)")
      ->check(CLI::Range(0, 1 << 20));
  AddPrecisionOption(cmd, &args->precision);
  return batch_opt;
}

}  // namespace

Runner AddBenchCommand(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Time a model's Run and print one JSON line: p50/p90/p99/mean latency (ms), throughput (samples/s), peak RSS, "
      "session-create time.\nInputs come from --inputs DIR/<name>.npy or are made up from the declared shapes (floats "
      "uniform in [-1,1), integers 1, bools true).");
  CLI::Option* batch_opt = AddBenchOptions(cmd, args.get());
  return [args, batch_opt]() {
    if (!args->inputs_dir.empty() && !std::filesystem::is_directory(args->inputs_dir))
      return Fail(Status::NotFound("--inputs " + args->inputs_dir + ": no such folder"), 2);

    if (!args->profile.empty() && !std::ofstream(args->profile, std::ios::app))
      return Fail(Status::InvalidArgument("--profile " + args->profile + ": cannot write this file"), 2);

    const double rss_base = ProcStatusMb("VmRSS");
    SessionOptions opts;
    opts.intra_op_threads = args->threads;
    opts.optimization_level = args->level;
    auto precision = ParsePrecision(args->precision);
    if (!precision.ok()) return Fail(precision.status().WithContext("--precision"), 2);
    opts.precision = *precision;
    auto t0 = Clock::now();
    auto session = Session::CreateFromFile(args->model, opts);
    auto t1 = Clock::now();
    if (!session.ok()) return Fail(session.status());
    const double rss_after_create = ProcStatusMb("VmRSS");

    int64_t batch = 1;
    auto feeds = MakeFeeds(**session, *args, batch_opt->count() > 0, &batch);
    if (!feeds.ok()) return Fail(feeds.status(), 2);

    double first_run_ms = 0;
    std::vector<double> times;
    times.reserve(args->iterations);
    // RunInto with the same output vector every time, as a serving loop does: outputs are
    // written into the previous run's buffers instead of fresh (page-faulting) allocations.
    std::vector<NamedValue> outputs;
    // --profile: the timed runs record their nodes' timings (one vector per thread).
    const bool profiling = !args->profile.empty();
    std::vector<std::vector<NodeTiming>> timings(args->concurrency);
    RunProfile profile;
    const int timed_inline = args->concurrency == 1 ? args->iterations : 0;
    for (int i = 0; i < args->warmup + timed_inline; ++i) {
      RunOptions ro;
      if (profiling && i >= args->warmup) ro.profile = &timings[0];
      timings[0].clear();
      auto a = Clock::now();
      Status st = (*session)->RunInto(*feeds, outputs, ro);
      auto b = Clock::now();
      if (!st.ok()) return Fail(st);
      if (i == 0) first_run_ms = Ms(a, b);
      if (i >= args->warmup) times.push_back(Ms(a, b));
      if (ro.profile) profile.AddRun(timings[0]);
    }
    double wall_ms = 0;
    for (double t : times) wall_ms += t;
    if (args->concurrency > 1) {
      // --concurrency C: C threads each run --iterations times on the one session at once.
      std::vector<std::vector<double>> per_thread(args->concurrency);
      std::vector<Status> errors(args->concurrency);
      std::vector<std::vector<size_t>> run_ends(args->concurrency);  // --profile: where each run's timings end
      std::vector<std::thread> threads;
      const auto w0 = Clock::now();
      for (int c = 0; c < args->concurrency; ++c)
        threads.emplace_back([&, c] {
          std::vector<NamedValue> outs;
          RunOptions ro;
          if (profiling) ro.profile = &timings[c];  // every run's timings, split into runs below
          for (int i = 0; i < args->iterations && errors[c].ok(); ++i) {
            auto a = Clock::now();
            errors[c] = (*session)->RunInto(*feeds, c == 0 ? outputs : outs, ro);
            per_thread[c].push_back(Ms(a, Clock::now()));
            run_ends[c].push_back(timings[c].size());
          }
        });
      for (auto& t : threads) t.join();
      for (int c = 0; c < args->concurrency && profiling; ++c) {
        size_t begin = 0;
        for (size_t end : run_ends[c]) {
          profile.AddRun(std::vector<NodeTiming>(timings[c].begin() + begin, timings[c].begin() + end), c);
          begin = end;
        }
      }
      wall_ms = Ms(w0, Clock::now());
      for (int c = 0; c < args->concurrency; ++c) {
        if (!errors[c].ok()) return Fail(errors[c]);
        times.insert(times.end(), per_thread[c].begin(), per_thread[c].end());
      }
    }
    const double peak_rss = ProcStatusMb("VmHWM");

    if (!args->save_outputs.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(args->save_outputs, ec);
      for (const auto& [name, v] : outputs) {
        if (!v.is_tensor()) continue;
        Status st = WriteNpyFile((std::filesystem::path(args->save_outputs) / (SafeFileName(name) + ".npy")).string(), v.tensor());
        if (!st.ok()) return Fail(st.WithContext("--save-outputs"));
      }
    }

    std::map<std::string, Shape> shapes;
    for (const auto& [name, v] : *feeds) shapes[name] = v.tensor().shape();
    auto plan = (*session)->PlanMemory(shapes);

    if (profiling) {
      std::cerr << profile.FormatTables(args->profile_top);
      Status st = profile.WriteChromeTrace(args->profile);
      if (!st.ok()) return Fail(st.WithContext("--profile"));
      std::cerr << "\nChrome trace (ONNX Runtime's profile format): " << args->profile << "\n";
    }

    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double total = 0;
    for (double t : times) total += t;
    const double mean = total / static_cast<double>(times.size());
    const int threads = (*session)->intra_op_threads();
    const SessionCreateTimings& ct = (*session)->create_timings();
    const RuntimeMemoryStats mem = (*session)->memory_stats();

    std::ostringstream js;
    js << std::fixed << std::setprecision(3);
    js << "{\"model\": " << JsonString(args->model) << ", \"engine\": \"inferloop\", \"batch\": " << batch
       << ", \"threads\": " << threads << ", \"iterations\": " << args->iterations << ", \"warmup\": " << args->warmup << ", \"level\": " << args->level
       << ", \"inputs\": " << (args->inputs_dir.empty() ? std::string("\"random\"") : JsonString(args->inputs_dir))
       << ", \"p50_ms\": " << Percentile(sorted, 50) << ", \"p90_ms\": " << Percentile(sorted, 90)
       << ", \"p99_ms\": " << Percentile(sorted, 99) << ", \"mean_ms\": " << mean << ", \"min_ms\": " << sorted.front()
       << ", \"max_ms\": " << sorted.back() << ", \"first_run_ms\": " << first_run_ms
       << ", \"concurrency\": " << args->concurrency
       << ", \"throughput\": " << static_cast<double>(batch) * 1000.0 * static_cast<double>(times.size()) / wall_ms
       << ", \"peak_rss_mb\": " << peak_rss << ", \"rss_base_mb\": " << rss_base
       << ", \"rss_after_create_mb\": " << rss_after_create
       << ", \"session_create_ms\": " << Ms(t0, t1) << ", \"create_load_ms\": " << ct.load_ms
       << ", \"create_optimize_ms\": " << ct.optimize_ms << ", \"create_plan_ms\": " << ct.plan_ms
       << ", \"run_arena_bytes\": " << mem.last_arena_bytes << ", \"precision\": \"" << PrecisionName((*session)->precision())
       << "\", \"weight_bytes\": " << mem.weight_bytes;
    if (profiling) js << ", \"profile\": " << JsonString(args->profile);
    if (plan.ok())
      js << ", \"planned_arena_bytes\": " << plan->arena_bytes << ", \"planned_peak_bytes\": " << plan->peak_bytes;
    js << "}";
    std::cout << js.str() << std::endl;
    return 0;
  };
}

}  // namespace inferloop::cli
