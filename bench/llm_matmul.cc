// Times one weight product of the LLM engine (weight_matrix.h MatMul) on a TinyLlama-sized
// random Q8_0 / Q4_0 matrix for several token counts, with the kernels the process chooses
// (INFERLOOP_ISA=avx512 / avx2 select the non-AMX ones), single-threaded: a kernel-tuning aid.
// Each product is timed on the weights as the file stores them ("file": the row kernels) and
// repacked in 16-row groups as the engine holds them ("packed": PackForGemm), when this CPU packs.
//   build/bench_llm_matmul [rows cols]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "llm/amx_matmul.h"
#include "llm/llm_kernels.h"
#include "llm/weight_matrix.h"

using namespace inferloop::llm;

int main(int argc, char** argv) {
  const int64_t rows = argc > 2 ? std::atoll(argv[1]) : 5632, cols = argc > 2 ? std::atoll(argv[2]) : 2048;
  std::mt19937 g(1);
  std::printf("kernel: %s, table %s, weight %lld x %lld\n", AmxAvailable() ? "amx" : "non-amx", ActiveLlmKernels().name,
              static_cast<long long>(rows), static_cast<long long>(cols));
  std::printf("| type | layout | tokens | ms | GMAC/s |\n|---|---|---:|---:|---:|\n");
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const int block = type == GgmlType::kQ8_0 ? 34 : 18;
    std::vector<uint8_t> bytes(rows * cols / 32 * block);
    for (auto& b : bytes) b = static_cast<uint8_t>(g() & 0x7F);
    for (size_t b = 0; b < bytes.size(); b += block) { bytes[b] = 0x00; bytes[b + 1] = 0x20; }  // scale ~0.008
    WeightMatrix file;
    file.name = "w";
    file.type = type;
    file.rows = rows;
    file.cols = cols;
    file.row_bytes = cols / 32 * block;
    file.data = bytes;
    WeightMatrix packed = file;
    const bool has_packed = PackForGemm(packed);
    for (int64_t T : {1, 4, 16, 64, 256}) {
      std::vector<float> x(T * cols), y(T * rows);
      std::normal_distribution<float> nd;
      for (float& v : x) v = nd(g);
      for (const WeightMatrix* w : {&file, &packed}) {
        if (w == &packed && !has_packed) continue;
        double best = 1e30;
        for (int rep = 0; rep < 5; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          MatMul(*w, x.data(), T, y.data(), nullptr);
          best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::printf("| %s | %s | %lld | %.3f | %.1f |\n", type == GgmlType::kQ8_0 ? "Q8_0" : "Q4_0",
                    w == &file ? "file" : "packed", static_cast<long long>(T), best * 1e3, rows * cols * T / best / 1e9);
      }
    }
  }
  return 0;
}
