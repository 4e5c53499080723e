#include "perf/report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "base/json_string.h"

namespace inferloop::perf {
namespace {

std::string Num(double v, int precision = 1) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, v);
  return buf;
}

std::string LoadText(const PerfResult& r) {
  return r.mode == LoadMode::kConcurrency ? std::to_string(static_cast<int64_t>(r.load)) : Num(r.load, 1);
}

std::string ErrorKinds(const PerfResult& r) {
  std::string s;
  for (const auto& [k, v] : r.errors_by_kind) s += (s.empty() ? "" : ";") + k + "=" + std::to_string(v);
  return s;
}


std::string JsonNum(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os << std::setprecision(10) << v;
  return os.str();
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::vector<std::string> CsvColumns(LoadMode mode) {
  return {LoadModeName(mode), "batch_size", "throughput_infer_per_s", "throughput_req_per_s", "completed",
          "errors", "latency_avg_us", "latency_p50_us", "latency_p90_us", "latency_p95_us", "latency_p99_us",
          "latency_p999_us", "latency_max_us", "server_queue_us", "server_compute_us", "windows", "stable",
          "errors_by_kind", "input_samples", "input_distribution"};
}

double LatencyAtPercentile(const PerfResult& r, double p) {
  if (p <= 50) return r.latency_p50_us;
  if (p <= 90) return r.latency_p90_us;
  if (p <= 95) return r.latency_p95_us;
  if (p <= 99) return r.latency_p99_us;
  return r.latency_p999_us;
}

void WriteTable(std::ostream& os, const std::vector<PerfResult>& points, const RunSummary& summary) {
  os << "model " << summary.model << (summary.version.empty() ? "" : " version " + summary.version) << " at "
     << summary.url << " (" << summary.protocol << ")\n";
  os << "inputs: " << summary.input_data << ", " << summary.sample_names.size()
     << (summary.sample_names.size() == 1 ? " sample" : " samples") << ", distribution "
     << summary.input_distribution << "\n";
  const char* load_name = points.empty() || points[0].mode == LoadMode::kConcurrency ? "concurrency" : "rate/s";
  char line[512];
  std::snprintf(line, sizeof(line), "%11s %11s %9s %9s %9s %9s %9s %9s %8s %10s %10s %7s %6s\n", load_name,
                "infer/s", "avg ms", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "p99.9 ms", "errors", "queue us",
                "compute us", "windows", "stable");
  os << line;
  for (const auto& r : points) {
    std::snprintf(line, sizeof(line), "%11s %11.1f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %10s %10s %7d %6s\n",
                  LoadText(r).c_str(), r.throughput_infer_per_s, r.latency_avg_us / 1000, r.latency_p50_us / 1000,
                  r.latency_p90_us / 1000, r.latency_p95_us / 1000, r.latency_p99_us / 1000,
                  r.latency_p999_us / 1000, static_cast<unsigned long long>(r.errors),
                  r.has_server_stats ? Num(r.server_queue_us).c_str() : "-",
                  r.has_server_stats ? Num(r.server_compute_us).c_str() : "-", r.windows_measured,
                  r.stable ? "yes" : "no");
    os << line;
    if (r.errors) os << "            errors: " << ErrorKinds(r) << "\n";
  }
  if (summary.latency_bound_ms) {
    os << "latency bound: p" << Num(summary.percentile, summary.percentile == std::floor(summary.percentile) ? 0 : 1)
       << " < " << Num(*summary.latency_bound_ms, 3) << " ms: ";
    if (summary.best_under_bound) {
      const auto& b = points[*summary.best_under_bound];
      os << "best " << Num(b.throughput_infer_per_s) << " infer/s at " << LoadModeName(b.mode) << " "
         << LoadText(b) << " (p" << Num(summary.percentile, summary.percentile == std::floor(summary.percentile) ? 0 : 1)
         << " " << Num(LatencyAtPercentile(b, summary.percentile) / 1000, 3) << " ms)\n";
    } else {
      os << "no measured point is under the bound\n";
    }
  }
  if (summary.target_qps) {
    os << "target " << Num(*summary.target_qps) << " infer/s: Little's law suggests concurrency "
       << (summary.suggested_concurrency ? std::to_string(*summary.suggested_concurrency) : "?");
    if (summary.target_reached) os << "; measured there: " << (*summary.target_reached ? "reached" : "NOT reached");
    os << "\n";
  }
  if (summary.interrupted) os << "interrupted: the table holds what was measured before Ctrl-C\n";
}

void WriteCsv(std::ostream& os, const std::vector<PerfResult>& points, const RunSummary& summary) {
  LoadMode mode = points.empty() ? LoadMode::kConcurrency : points[0].mode;
  auto cols = CsvColumns(mode);
  for (size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << cols[i];
  os << "\n";
  for (const auto& r : points) {
    os << LoadText(r) << "," << r.batch_size << "," << Num(r.throughput_infer_per_s, 2) << ","
       << Num(r.throughput_req_per_s, 2) << "," << r.completed << "," << r.errors << "," << Num(r.latency_avg_us, 1)
       << "," << Num(r.latency_p50_us, 1) << "," << Num(r.latency_p90_us, 1) << "," << Num(r.latency_p95_us, 1)
       << "," << Num(r.latency_p99_us, 1) << "," << Num(r.latency_p999_us, 1) << "," << Num(r.latency_max_us, 1)
       << "," << (r.has_server_stats ? Num(r.server_queue_us, 1) : "") << ","
       << (r.has_server_stats ? Num(r.server_compute_us, 1) : "") << "," << r.windows_measured << ","
       << (r.stable ? "yes" : "no") << "," << CsvField(ErrorKinds(r)) << "," << summary.sample_names.size() << ","
       << CsvField(summary.input_distribution) << "\n";
  }
}

void WriteJson(std::ostream& os, const std::vector<PerfResult>& points, const RunSummary& s) {
  os << "{\n  \"url\": " << JsonString(s.url) << ",\n  \"model\": " << JsonString(s.model)
     << ",\n  \"version\": " << JsonString(s.version) << ",\n  \"protocol\": " << JsonString(s.protocol)
     << ",\n  \"percentile\": " << JsonNum(s.percentile)
     << ",\n  \"latency_bound_ms\": " << (s.latency_bound_ms ? JsonNum(*s.latency_bound_ms) : "null")
     << ",\n  \"best_under_bound\": " << (s.best_under_bound ? std::to_string(*s.best_under_bound) : "null")
     << ",\n  \"target_qps\": " << (s.target_qps ? JsonNum(*s.target_qps) : "null")
     << ",\n  \"suggested_concurrency\": "
     << (s.suggested_concurrency ? std::to_string(*s.suggested_concurrency) : "null")
     << ",\n  \"target_reached\": " << (s.target_reached ? (*s.target_reached ? "true" : "false") : "null")
     << ",\n  \"interrupted\": " << (s.interrupted ? "true" : "false")
     << ",\n  \"input_data\": " << JsonString(s.input_data) << ",\n  \"input_samples\": " << s.sample_names.size()
     << ",\n  \"input_distribution\": " << JsonString(s.input_distribution) << ",\n  \"input_sample_names\": [";
  for (size_t i = 0; i < s.sample_names.size(); ++i) os << (i ? ", " : "") << JsonString(s.sample_names[i]);
  os << "],\n  \"points\": [";
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& r = points[i];
    os << (i ? "," : "") << "\n    {\"mode\": " << JsonString(LoadModeName(r.mode)) << ", \"load\": " << JsonNum(r.load)
       << ", \"batch_size\": " << r.batch_size << ", \"throughput_infer_per_s\": " << JsonNum(r.throughput_infer_per_s)
       << ", \"throughput_req_per_s\": " << JsonNum(r.throughput_req_per_s) << ", \"completed\": " << r.completed
       << ", \"errors\": " << r.errors << ", \"errors_by_kind\": {";
    bool first = true;
    for (const auto& [k, v] : r.errors_by_kind) {
      os << (first ? "" : ", ") << JsonString(k) << ": " << v;
      first = false;
    }
    os << "}, \"latency_avg_us\": " << JsonNum(r.latency_avg_us) << ", \"latency_p50_us\": " << JsonNum(r.latency_p50_us)
       << ", \"latency_p90_us\": " << JsonNum(r.latency_p90_us) << ", \"latency_p95_us\": " << JsonNum(r.latency_p95_us)
       << ", \"latency_p99_us\": " << JsonNum(r.latency_p99_us) << ", \"latency_p999_us\": " << JsonNum(r.latency_p999_us)
       << ", \"latency_max_us\": " << JsonNum(r.latency_max_us)
       << ", \"server_queue_us\": " << (r.has_server_stats ? JsonNum(r.server_queue_us) : "null")
       << ", \"server_compute_us\": " << (r.has_server_stats ? JsonNum(r.server_compute_us) : "null")
       << ", \"windows\": " << r.windows_measured << ", \"window_s\": " << JsonNum(r.window_s)
       << ", \"stable\": " << (r.stable ? "true" : "false") << ", \"requests_per_sample\": [";
    for (size_t k = 0; k < r.requests_per_sample.size(); ++k) os << (k ? ", " : "") << r.requests_per_sample[k];
    os << "]}";
  }
  os << "\n  ]\n}\n";
}

Status WriteCsvFile(const std::string& path, const std::vector<PerfResult>& points, const RunSummary& summary) {
  std::ofstream f(path);
  if (!f) return Status::InvalidArgument("--csv: cannot write " + path);
  WriteCsv(f, points, summary);
  f.close();
  if (!f) return Status::InvalidArgument("--csv: cannot write " + path);
  return Status::Ok();
}

Status WriteJsonFile(const std::string& path, const std::vector<PerfResult>& points, const RunSummary& summary) {
  std::ofstream f(path);
  if (!f) return Status::InvalidArgument("--json: cannot write " + path);
  WriteJson(f, points, summary);
  f.close();
  if (!f) return Status::InvalidArgument("--json: cannot write " + path);
  return Status::Ok();
}

}  // namespace inferloop::perf
