#include "base/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstdlib>
#include <cstring>

namespace inferloop {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID bits not every compiler's __builtin_cpu_supports knows (clang 14: no "f16c", no
// "avx512vnni"). reg: 0 EAX, 1 EBX, 2 ECX, 3 EDX.
bool CpuidBit(unsigned leaf, unsigned sub, int reg, int bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3])) return false;
  return (r[reg] >> bit) & 1u;
}
#endif

CpuFeatures Detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.f16c = CpuidBit(1, 0, 2, 29);
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = CpuidBit(7, 0, 2, 11);
  f.amx_int8 = CpuidBit(7, 0, 3, 24) && CpuidBit(7, 0, 3, 25);
#endif
  return f;
}

IsaCap ParseIsaCap() {
  const char* v = std::getenv("INFERLOOP_ISA");
  if (v == nullptr) return IsaCap::kNone;
  if (std::strcmp(v, "avx512") == 0) return IsaCap::kAvx512;
  if (std::strcmp(v, "avx2") == 0) return IsaCap::kAvx2;
  if (std::strcmp(v, "scalar") == 0) return IsaCap::kScalar;
  return IsaCap::kNone;
}

}  // namespace

const CpuFeatures& DetectedCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

bool RequestAmxTileState() {
#if defined(__x86_64__) && defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  static const bool granted = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return granted;
#else
  return false;
#endif
}

IsaCap IsaCapFromEnv() {
  static const IsaCap cap = ParseIsaCap();
  return cap;
}

}  // namespace inferloop
