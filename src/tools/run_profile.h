// Per-op profiles of a session's runs, from the timings RunOptions::profile records: where the
// time of a run goes, by op type and by node, as tables for a terminal, and as a Chrome trace JSON
// in ONNX Runtime's profiling format (open it in chrome://tracing or https://ui.perfetto.dev, or
// diff it against ONNX Runtime's own file for the same model). `inferloop bench --profile` uses it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"

namespace inferloop {

class RunProfile {
 public:
  // Adds one run: its node timings (in execution order, as the run recorded them) and the thread
  // that ran it (the trace's tid). Keeps at most max_events trace events in all (later runs still
  // count in the tables).
  void AddRun(const std::vector<NodeTiming>& timings, int thread = 0);

  int runs() const { return runs_; }

  // Two markdown tables: mean ms per run by op type (main-graph nodes only, so that a body's
  // nodes are not counted twice; share of the kernel time; node count), and the `top` slowest
  // nodes by mean ms per run (every depth). Empty when no run was added.
  std::string FormatTables(int top) const;

  // Writes every kept event as ONNX Runtime's profile does: a JSON array of complete events
  // {"cat":"Node","name":"<node>_kernel_time","ph":"X","pid":..,"tid":..,"ts":us,"dur":us,
  //  "args":{"op_name":..,"depth":..}} plus one {"cat":"Session","name":"model_run"} per run,
  // times in microseconds from the first run's start.
  Status WriteChromeTrace(const std::string& path) const;

  size_t max_events = 1'000'000;

 private:
  struct Event {
    std::string name, op_type;
    int64_t start_ns, duration_ns;
    int depth, thread;
    bool is_run;  // a whole run (cat Session)
  };
  struct Total {
    std::string key, op_type;
    int64_t ns = 0;
    int64_t count = 0;  // node executions
    int depth = 0;
  };
  static Total& Find(std::vector<Total>& totals, std::unordered_map<std::string, size_t>& index, const std::string& key);

  int runs_ = 0;
  int64_t origin_ns_ = -1;
  std::vector<Event> events_;
  std::vector<Total> by_op_;    // depth 0 only
  std::vector<Total> by_node_;  // every depth, keyed by node name (or op_type#index when unnamed)
  std::unordered_map<std::string, size_t> op_index_, node_index_;  // key -> position above
};

}  // namespace inferloop
