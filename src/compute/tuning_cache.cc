#include "compute/tuning_cache.h"

#include <atomic>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/c_locale_number.h"

namespace inferloop {

namespace {

// Fields of one line; false when it is not "<cpu>\t<key>\t<winner>".
bool SplitLine(const std::string& line, std::string* cpu, std::string* key, std::string* winner) {
  const size_t a = line.find('\t');
  if (a == std::string::npos) return false;
  const size_t b = line.find('\t', a + 1);
  if (b == std::string::npos || line.find('\t', b + 1) != std::string::npos) return false;
  *cpu = line.substr(0, a);
  *key = line.substr(a + 1, b - a - 1);
  *winner = line.substr(b + 1);
  return !cpu->empty() && !key->empty() && !winner->empty();
}

// A field may not hold tabs or line breaks (they would break the file format).
std::string Clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

const std::string& CpuModelKey() {
  static const std::string key = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line)) {
      auto value = [&]() -> std::string {
        const size_t c = line.find(':');
        const size_t v = c == std::string::npos ? c : line.find_first_not_of(" \t", c + 1);
        return v == std::string::npos ? std::string() : line.substr(v);
      };
      if (model.empty() && line.rfind("model name", 0) == 0) model = value();
      if (flags.empty() && line.rfind("flags", 0) == 0) flags = " " + value() + " ";
      if (!model.empty() && !flags.empty()) break;
    }
    if (model.empty()) model = "unknown";
    std::string isa = flags.find(" avx512f ") != std::string::npos ? "avx512"
                      : flags.find(" avx2 ") != std::string::npos ? "avx2"
                                                                   : "sse";
    if (flags.find(" amx_tile ") != std::string::npos) isa += "|amx";
    return Clean(model + "|" + isa);
  }();
  return key;
}

namespace {
// Microseconds of candidate timing spent in this process (ChargeAutotune).
std::atomic<int64_t>& AutotuneSpentUs() {
  static std::atomic<int64_t> spent{0};
  return spent;
}

double AutotuneBudgetSeconds() {
  static const double budget = [] {
    const char* v = std::getenv("INFERLOOP_AUTOTUNE_BUDGET_S");
    if (v == nullptr || *v == '\0') return 20.0;
    char* end = nullptr;
    const double d = StrtodC(v, &end);
    return end != v && d >= 0 ? d : 20.0;
  }();
  return budget;
}
}  // namespace

bool AutotuneEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("INFERLOOP_AUTOTUNE");
    return !(v != nullptr && std::strcmp(v, "0") == 0);
  }();
  return on && static_cast<double>(AutotuneSpentUs().load(std::memory_order_relaxed)) < AutotuneBudgetSeconds() * 1e6;
}

void ChargeAutotune(double seconds) {
  if (seconds > 0) AutotuneSpentUs().fetch_add(static_cast<int64_t>(seconds * 1e6), std::memory_order_relaxed);
}

TuningCache& TuningCache::Global() {
  static TuningCache* cache = new TuningCache();  // never destroyed: used from static kernels
  return *cache;
}

TuningCache::TuningCache() : cpu_(CpuModelKey()) {
  const char* p = std::getenv("INFERLOOP_TUNING_CACHE");
  if (p != nullptr && p[0] != '\0') {
    path_ = p;
    LoadLocked();
  }
}

std::optional<std::string> TuningCache::Find(const std::string& key) {
  if (!AutotuneEnabled()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(Clean(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void TuningCache::Store(const std::string& key, const std::string& winner) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[Clean(key)] = Clean(winner);
  SaveLocked();
}

void TuningCache::SetPath(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  path_ = path;
  LoadLocked();
}

std::string TuningCache::path() {
  std::lock_guard<std::mutex> lock(mu_);
  return path_;
}

size_t TuningCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void TuningCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

void TuningCache::LoadLocked() {
  if (path_.empty()) return;
  std::ifstream in(path_);
  std::string line, cpu, key, winner;
  while (std::getline(in, line))
    if (SplitLine(line, &cpu, &key, &winner) && cpu == cpu_) entries_.emplace(key, winner);
}

void TuningCache::SaveLocked() {
  if (path_.empty()) return;
  // Keep what the file holds (other CPUs, entries other processes added); ours win.
  std::map<std::pair<std::string, std::string>, std::string> merged;
  {
    std::ifstream in(path_);
    std::string line, cpu, key, winner;
    while (std::getline(in, line))
      if (SplitLine(line, &cpu, &key, &winner)) merged[{cpu, key}] = winner;
  }
  for (const auto& [k, v] : entries_) merged[{cpu_, k}] = v;
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    for (const auto& [k, v] : merged) out << k.first << '\t' << k.second << '\t' << v << '\n';
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace inferloop
