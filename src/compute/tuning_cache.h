// TuningCache: which implementation of a kernel won, per CPU model and problem shape.
//
// Kernels with several candidate implementations (oneDNN conv direct vs Winograd, plain vs
// blocked layouts, matmul vs inner product, ...) time them the first time a shape is seen and
// record the winner here; later kernels, sessions and (through the file) processes reuse it.
//
// File: the path in env INFERLOOP_TUNING_CACHE (or SetPath). Plain text, one entry per line:
//   <cpu model>\t<key>\t<winner>
// Lines of other CPU models are kept when saving (one file can serve several machines).
// Loaded once, when the cache is first used; saved (merged with what the file holds then,
// written to a temporary file and renamed) after every new entry. Unreadable or malformed
// files are ignored; a failed save only loses the persistence.
//
// Autotuning can be switched off with env INFERLOOP_AUTOTUNE=0, and stops for the rest of the
// process after INFERLOOP_AUTOTUNE_BUDGET_S seconds of timing: kernels then use their built-in
// heuristic for new shapes (AutotuneEnabled() false). Entries already in the cache still apply.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace inferloop {

class TuningCache {
 public:
  // The process-wide cache.
  static TuningCache& Global();

  // The winner recorded for `key` on this CPU.
  std::optional<std::string> Find(const std::string& key);
  // Records `winner` for `key` and saves the file (when a path is set).
  void Store(const std::string& key, const std::string& winner);

  // Replaces the file path (empty: memory only) and loads entries from the new file.
  void SetPath(const std::string& path);
  std::string path();
  // Entries for this CPU (tests and reports).
  size_t size();
  // Forgets every in-memory entry (tests).
  void Clear();

 private:
  TuningCache();
  void LoadLocked();
  void SaveLocked();

  std::mutex mu_;
  std::string path_;
  std::string cpu_;
  std::map<std::string, std::string> entries_;  // this CPU only
};

// "model name" from /proc/cpuinfo plus the vector ISA level the kernels can use
// (e.g. "Intel(R) Xeon(R) Processor|avx512|amx"); "unknown" when unreadable.
const std::string& CpuModelKey();

// False when env INFERLOOP_AUTOTUNE is "0", or once this process has spent its autotuning budget
// (env INFERLOOP_AUTOTUNE_BUDGET_S, default 20 s of candidate timing, so that a cold start stays
// bounded); kernels then use their heuristic for shapes the cache does not know.
bool AutotuneEnabled();
// Adds time spent timing candidates to the process's autotuning total.
void ChargeAutotune(double seconds);

// Charges the time from its construction to its destruction (building and timing candidates).
class AutotuneTimer {
 public:
  AutotuneTimer() : start_(std::chrono::steady_clock::now()) {}
  ~AutotuneTimer() { ChargeAutotune(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()); }
  AutotuneTimer(const AutotuneTimer&) = delete;
  AutotuneTimer& operator=(const AutotuneTimer&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace inferloop
