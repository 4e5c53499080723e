#include "tools/run_profile.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "base/c_locale_number.h"
#include "base/json_string.h"

namespace inferloop {

RunProfile::Total& RunProfile::Find(std::vector<Total>& totals, std::unordered_map<std::string, size_t>& index,
                                    const std::string& key) {
  auto [it, added] = index.emplace(key, totals.size());
  if (added) totals.push_back(Total{key, "", 0, 0, 0});
  return totals[it->second];
}

void RunProfile::AddRun(const std::vector<NodeTiming>& timings, int thread) {
  ++runs_;
  if (timings.empty()) return;
  int64_t begin = timings.front().start_ns, end = begin;
  for (const NodeTiming& t : timings) {
    begin = std::min(begin, t.start_ns);
    end = std::max(end, t.start_ns + t.duration_ns);
  }
  if (origin_ns_ < 0 || begin < origin_ns_) origin_ns_ = begin;
  if (events_.size() < max_events) events_.push_back({"model_run", "", begin, end - begin, 0, thread, true});
  int unnamed = 0;
  for (const NodeTiming& t : timings) {
    const std::string name = t.node.empty() ? t.op_type + "#" + std::to_string(unnamed++) : t.node;
    if (events_.size() < max_events) events_.push_back({name, t.op_type, t.start_ns, t.duration_ns, t.depth, thread, false});
    if (t.depth == 0) {
      Total& op = Find(by_op_, op_index_, t.op_type);
      op.ns += t.duration_ns;
      ++op.count;
    }
    Total& node = Find(by_node_, node_index_, name);
    node.op_type = t.op_type;
    node.depth = t.depth;
    node.ns += t.duration_ns;
    ++node.count;
  }
}

std::string RunProfile::FormatTables(int top) const {
  if (runs_ == 0) return "";
  auto ms = [&](int64_t ns) { return static_cast<double>(ns) / 1e6 / runs_; };
  int64_t kernel_ns = 0;
  for (const Total& t : by_op_) kernel_ns += t.ns;
  std::vector<Total> ops = by_op_, nodes = by_node_;
  auto slower = [](const Total& a, const Total& b) { return a.ns > b.ns; };
  std::stable_sort(ops.begin(), ops.end(), slower);
  std::stable_sort(nodes.begin(), nodes.end(), slower);
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "## Time per op type (mean of %d runs; main graph; kernel total %.3f ms per run)\n\n",
                runs_, ms(kernel_ns));
  os << line << "| op type | nodes | ms per run | share |\n|---|---:|---:|---:|\n";
  for (const Total& t : ops) {
    std::snprintf(line, sizeof line, "| %s | %lld | %.3f | %.1f%% |\n", t.key.c_str(),
                  static_cast<long long>(t.count / runs_), ms(t.ns),
                  kernel_ns > 0 ? 100.0 * static_cast<double>(t.ns) / static_cast<double>(kernel_ns) : 0.0);
    os << line;
  }
  const size_t shown = std::min(nodes.size(), static_cast<size_t>(std::max(top, 0)));
  std::snprintf(line, sizeof line, "\n## The %zu slowest nodes (of %zu)\n\n", shown, nodes.size());
  os << line << "| node | op type | depth | ms per run | runs per model run |\n|---|---|---:|---:|---:|\n";
  for (size_t i = 0; i < shown; ++i) {
    const Total& t = nodes[i];
    std::snprintf(line, sizeof line, "| %s | %s | %d | %.3f | %.2f |\n", t.key.c_str(), t.op_type.c_str(), t.depth, ms(t.ns),
                  static_cast<double>(t.count) / runs_);
    os << line;
  }
  return os.str();
}

Status RunProfile::WriteChromeTrace(const std::string& path) const {
  std::string out = "[\n";
  const long pid = static_cast<long>(getpid());
  char num[96];
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    out += "{\"cat\":";
    out += e.is_run ? "\"Session\"" : "\"Node\"";
    out += ",\"name\":";
    AppendJsonString(out, e.is_run ? e.name : e.name + "_kernel_time");
    std::snprintf(num, sizeof num, ",\"ph\":\"X\",\"pid\":%ld,\"tid\":%d,\"ts\":", pid, e.thread);
    out += num;
    out += FormatFixedC(static_cast<double>(e.start_ns - origin_ns_) / 1e3, 3);  // '.' whatever the locale
    out += ",\"dur\":";
    out += FormatFixedC(static_cast<double>(e.duration_ns) / 1e3, 3);
    if (!e.is_run) {
      out += ",\"args\":{\"op_name\":";
      AppendJsonString(out, e.op_type);
      out += ",\"depth\":" + std::to_string(e.depth) + "}";
    }
    out += i + 1 < events_.size() ? "},\n" : "}\n";
  }
  out += "]\n";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::InvalidArgument("cannot write the profile to '" + path + "'");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) return Status::Internal("writing the profile to '" + path + "' failed");
  return Status::Ok();
}

}  // namespace inferloop
