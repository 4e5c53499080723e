#include "serve/event_log.h"

#include <chrono>
#include <ctime>

#include "base/json_string.h"

namespace inferloop::serve {
namespace {

std::string UtcTimestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

std::string EventLog::Format(std::string_view level, std::string_view event, const Fields& fields) {
  std::string line = "{\"ts\":";
  AppendJsonString(line, UtcTimestamp());
  line += ",\"level\":";
  AppendJsonString(line, level);
  line += ",\"event\":";
  AppendJsonString(line, event);
  for (const auto& [k, v] : fields) {
    line += ',';
    AppendJsonString(line, k);
    line += ':';
    AppendJsonString(line, v);
  }
  line += '}';
  return line;
}

void EventLog::Write(std::string_view level, std::string_view event, const Fields& fields) {
  if (!out_) return;
  const std::string line = Format(level, event, fields) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace inferloop::serve
