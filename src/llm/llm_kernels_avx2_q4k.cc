// The AVX2 table's Q4_K group product (LlmKernelTable::gemm_g16_q4_k), in a file of its own so
// that it alone is built with GCC's pressure-aware scheduling (-fschedule-insns -fsched-pressure,
// CMakeLists.txt). Without it GCC kept the tile's 8 int16 sub-block sums partly on the stack and
// copied them every step: `INFERLOOP_ISA=avx2 build/bench_llm_matmul 5632 2048 Q4_K 1,16,128`
// on an AMD EPYC Zen 4 core, 2 alternating runs, 55 -> 68 GMAC/s (1 token) and 83 -> 108-110
// (16 and 128 tokens); a 65536 x 2048 decode 4.0-4.3 -> 3.5 ms, as clang-14 compiles the same
// source. The flags made the Q6_K decode slower (4.7-4.9 -> 5.6-5.7 ms) and the Q4_0 / Q8_0
// tiles no better, so the rest of llm_kernels_avx2.cc keeps GCC's defaults.
#include "base/simd/vec_avx2.h"
#include "llm/llm_kernels_avx2_kops.h"

namespace inferloop::llm {

void Avx2GemmG16Q4K(const uint8_t* w, int64_t groups, int64_t rows, const Q8KRows& x, int64_t T, float* Y,
                    int64_t y_stride) {
  GemmG16K<G16Q4KSubBlocks<KOps>, KOps, 4>(w, groups, rows, x, T, Y, y_stride);
}

}  // namespace inferloop::llm
