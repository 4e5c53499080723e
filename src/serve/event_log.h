// EventLog: one structured line per lifecycle event (server start, model loading/loaded/failed/
// unloaded, shutdown), as JSON on one line:
//   {"ts":"2026-11-30T06:30:00.123Z","level":"info","event":"model_ready","model":"resnet50","version":"1","ms":"812"}
// Lines from concurrent threads never interleave. Thread-safe.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferloop::serve {

class EventLog {
 public:
  // Writes to `out` (stderr by default); `out` must outlive this. Null: discards every line.
  explicit EventLog(std::FILE* out = stderr) : out_(out) {}

  using Fields = std::vector<std::pair<std::string, std::string>>;
  void Info(std::string_view event, const Fields& fields = {}) { Write("info", event, fields); }
  void Warn(std::string_view event, const Fields& fields = {}) { Write("warn", event, fields); }
  void Error(std::string_view event, const Fields& fields = {}) { Write("error", event, fields); }

  // The line Write would print (without the newline), for tests.
  static std::string Format(std::string_view level, std::string_view event, const Fields& fields);

 private:
  void Write(std::string_view level, std::string_view event, const Fields& fields);
  std::FILE* out_;
  std::mutex mu_;
};

}  // namespace inferloop::serve
