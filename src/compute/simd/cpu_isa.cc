#include "compute/simd/cpu_isa.h"

#include <atomic>

#include "base/cpu_features.h"
#include "compute/simd/simd_table.h"

namespace inferloop {
namespace simd {
namespace {

Isa Detect() {
  const CpuFeatures& f = DetectedCpuFeatures();
  if (f.avx512) return Isa::kAvx512;
  if (f.avx2) return Isa::kAvx2;
  return Isa::kScalar;
}

// INFERLOOP_ISA as a level; `fallback` when it sets no cap.
Isa FromEnv(Isa fallback) {
  switch (IsaCapFromEnv()) {
    case IsaCap::kAvx512: return Isa::kAvx512;
    case IsaCap::kAvx2: return Isa::kAvx2;
    case IsaCap::kScalar: return Isa::kScalar;
    case IsaCap::kNone: break;
  }
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
