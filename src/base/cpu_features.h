// What this CPU and OS offer the vector kernels, and the cap INFERLOOP_ISA puts on them: the one
// place that reads CPUID and INFERLOOP_ISA. The tensor kernels (compute/simd/cpu_isa.h), the fp16
// weight widening and the LLM kernels (llm/llm_kernels.h) each choose their level from these.
//
// INFERLOOP_ISA=avx512|avx2|scalar lowers the kernels chosen (never past what the CPU has); unset,
// or any other value, means no cap: the best the CPU has (AMX included, for the LLM kernels).
// Both are read once, on first use; thread-safe. Non-x86 builds report no features.
#pragma once

namespace inferloop {

struct CpuFeatures {
  bool avx2 = false;         // AVX2 and FMA, with the OS saving the AVX state
  bool f16c = false;         // F16C half <-> float conversions (CPUID leaf 1, ECX bit 29)
  bool avx512 = false;       // AVX-512 F, BW, VL and DQ, with the OS saving their state
  bool avx512_vnni = false;  // AVX-512 VNNI (CPUID leaf 7, ECX bit 11)
  bool amx_int8 = false;     // AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24, 25); the OS state
                             // must be requested as well (RequestAmxTileState)
};

// Detected from CPUID on the first call.
const CpuFeatures& DetectedCpuFeatures();

// Asks the OS for the AMX tile register state, once (Linux hands out the 8 KiB tile data only on
// request: arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA; the permission then holds for
// every thread of the process). True when granted; false on other systems.
bool RequestAmxTileState();

// INFERLOOP_ISA, ordered from the lowest: kNone when unset or not one of the three names.
enum class IsaCap { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kNone = 3 };
IsaCap IsaCapFromEnv();

}  // namespace inferloop
