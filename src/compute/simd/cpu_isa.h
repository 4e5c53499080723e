// Which vector instruction set the float32 kernels in src/compute/simd run with.
//
// Chosen from base/cpu_features.h (CPUID, with the OS's register-state support, read once there);
// INFERLOOP_ISA=avx512|avx2|scalar in the environment lowers it (never raises it past what the CPU
// has), so one binary runs on any x86-64 and tests can cover every path on a machine with
// AVX-512. Thread-safe.
#pragma once

namespace inferloop {
namespace simd {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2", "avx512".
const char* IsaName(Isa isa);

// The best level this CPU and OS support (AVX-512 needs F, BW, VL and DQ; AVX2 needs FMA too).
Isa DetectedIsa();

// The level kernels use now: DetectedIsa() lowered by INFERLOOP_ISA, or by SetActiveIsa.
Isa ActiveIsa();

// Selects `isa` for every later kernel call, clamped to DetectedIsa(); returns the level in
// force. Meant for tests and benchmarks; do not call while kernels run on other threads.
Isa SetActiveIsa(Isa isa);

}  // namespace simd
}  // namespace inferloop
