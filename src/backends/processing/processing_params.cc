#include "backends/processing/processing_params.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/c_locale_number.h"

namespace inferloop::backends {
namespace {

bool ToNumber(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = StrtodC(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

std::string ParamString(const serve::ModelConfig& c, const std::string& key, const std::string& fallback) {
  auto it = c.parameters().find(key);
  return it == c.parameters().end() ? fallback : it->second.string_value();
}

Result<double> ParamNumber(const serve::ModelConfig& c, const std::string& key, double fallback) {
  auto it = c.parameters().find(key);
  if (it == c.parameters().end()) return fallback;
  double v = 0;
  if (!ToNumber(Trim(it->second.string_value()), &v))
    return Status::InvalidArgument("parameter '" + key + "' is '" + it->second.string_value() + "', not a number");
  return v;
}

Result<std::vector<double>> ParamNumbers(const serve::ModelConfig& c, const std::string& key,
                                         const std::vector<double>& fallback) {
  auto it = c.parameters().find(key);
  if (it == c.parameters().end()) return fallback;
  std::vector<double> out;
  const std::string& s = it->second.string_value();
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    const std::string item = Trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    double v = 0;
    if (!ToNumber(item, &v))
      return Status::InvalidArgument("parameter '" + key + "' is '" + s + "', not a comma-separated list of numbers");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<std::string> ParamChoice(const serve::ModelConfig& c, const std::string& key,
                                const std::vector<std::string>& choices, const std::string& fallback) {
  auto it = c.parameters().find(key);
  if (it == c.parameters().end()) return fallback;
  for (const auto& ch : choices)
    if (ch == it->second.string_value()) return ch;
  std::string list;
  for (const auto& ch : choices) list += (list.empty() ? "" : ", ") + ch;
  return Status::InvalidArgument("parameter '" + key + "' is '" + it->second.string_value() + "' (expected one of " +
                                 list + ")");
}

}  // namespace inferloop::backends
