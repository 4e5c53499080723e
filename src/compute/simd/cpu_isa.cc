#include "compute/simd/cpu_isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "compute/simd/simd_table.h"

namespace inferloop {
namespace simd {
namespace {

Isa Detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kScalar;
}

// INFERLOOP_ISA as a level; `fallback` when unset or unrecognised.
Isa FromEnv(Isa fallback) {
  const char* v = std::getenv("INFERLOOP_ISA");
  if (v == nullptr) return fallback;
  if (std::strcmp(v, "avx512") == 0) return Isa::kAvx512;
  if (std::strcmp(v, "avx2") == 0) return Isa::kAvx2;
  if (std::strcmp(v, "scalar") == 0) return Isa::kScalar;
  return fallback;
}

Isa Clamp(Isa want) { return static_cast<int>(want) < static_cast<int>(DetectedIsa()) ? want : DetectedIsa(); }

const KernelTable* TableFor(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return Avx512Table();
    case Isa::kAvx2: return Avx2Table();
    case Isa::kScalar: break;
  }
  return ScalarTable();
}

struct State {
  std::atomic<int> isa;
  std::atomic<const KernelTable*> table;
  State() {
    const Isa i = Clamp(FromEnv(DetectedIsa()));
    isa.store(static_cast<int>(i));
    table.store(TableFor(i));
  }
};

State& GetState() {
  static State state;
  return state;
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kScalar: break;
  }
  return "scalar";
}

Isa DetectedIsa() {
  static const Isa detected = Detect();
  return detected;
}

Isa ActiveIsa() { return static_cast<Isa>(GetState().isa.load(std::memory_order_relaxed)); }

Isa SetActiveIsa(Isa isa) {
  const Isa i = Clamp(isa);
  State& s = GetState();
  s.isa.store(static_cast<int>(i));
  s.table.store(TableFor(i), std::memory_order_release);
  return i;
}

const KernelTable& ActiveTable() { return *GetState().table.load(std::memory_order_acquire); }

}  // namespace simd
}  // namespace inferloop
