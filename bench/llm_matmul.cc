// Times one weight product of the LLM engine (weight_matrix.h MatMul) on a TinyLlama-sized
// random Q8_0 / Q4_0 / Q4_K / Q6_K matrix for several token counts, with the kernels the process chooses
// (INFERLOOP_ISA=avx512 / avx2 select the non-AMX ones), single-threaded unless a thread count
// is given (the engine's ThreadPool, as a decode step splits a product): a kernel-tuning aid.
// Each product is timed on the weights as the file stores them ("file": the row kernels) and
// repacked in 16-row groups as the engine holds them ("packed": PackForGemm), when this CPU packs.
//   build/bench_llm_matmul [rows cols [types [tokens [threads]]]]   (types: a comma list, e.g. Q4_K,Q6_K;
//   default all; tokens: a comma list of token counts in [1, 4096], default 1,4,16,64,256; threads:
//   default 1)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "llm/amx_matmul.h"
#include "llm/llm_kernels.h"
#include "llm/weight_matrix.h"

using namespace inferloop::llm;

int main(int argc, char** argv) {
  const int64_t rows = argc > 2 ? std::atoll(argv[1]) : 5632, cols = argc > 2 ? std::atoll(argv[2]) : 2048;
  std::vector<int64_t> token_counts = {1, 4, 16, 64, 256};
  if (argc > 4) {  // e.g. 1,6,16,96
    token_counts.clear();
    for (const char* p = argv[4]; *p != '\0';) {
      char* end = nullptr;
      const long long t = std::strtoll(p, &end, 10);
      if (end == p || t < 1 || t > 4096) {
        std::fprintf(stderr, "bad token count list '%s' (want counts in [1, 4096], e.g. 1,6,16)\n", argv[4]);
        return 2;
      }
      token_counts.push_back(t);
      p = *end == ',' ? end + 1 : end;
    }
  }
  const int threads = argc > 5 ? std::atoi(argv[5]) : 1;
  if (threads < 1 || threads > 1024) {
    std::fprintf(stderr, "bad thread count '%s' (want 1..1024)\n", argv[5]);
    return 2;
  }
  inferloop::ThreadPool pool(threads);
  inferloop::ThreadPool* on = threads > 1 ? &pool : nullptr;
  std::mt19937 g(1);
  std::printf("kernel: %s, table %s, weight %lld x %lld, %d thread%s\n", AmxAvailable() ? "amx" : "non-amx",
              ActiveLlmKernels().name, static_cast<long long>(rows), static_cast<long long>(cols), threads,
              threads > 1 ? "s" : "");
  std::printf("| type | layout | tokens | ms | GMAC/s | weight GB/s |\n|---|---|---:|---:|---:|---:|\n");
  const std::string only = argc > 3 ? argv[3] : "";
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    if (!only.empty() && only.find(GgmlTypeName(type)) == std::string::npos) continue;
    const bool k_quant = type == GgmlType::kQ4_K || type == GgmlType::kQ6_K;
    const int block = type == GgmlType::kQ8_0 ? 34 : type == GgmlType::kQ4_0 ? 18 : type == GgmlType::kQ4_K ? 144 : 210;
    const int values = k_quant ? 256 : 32;
    std::vector<uint8_t> bytes(rows * cols / values * block);
    for (auto& b : bytes) b = static_cast<uint8_t>(g() & 0x7F);
    for (size_t b = 0; b < bytes.size(); b += block) {
      // Super-block / block scales ~0.008 (Q4_K: d and dmin; Q6_K: d at the end).
      const size_t at = type == GgmlType::kQ6_K ? b + 208 : b;
      bytes[at] = 0x00;
      bytes[at + 1] = 0x20;
      if (type == GgmlType::kQ4_K) { bytes[b + 2] = 0x00; bytes[b + 3] = 0x20; }
    }
    WeightMatrix file;
    file.name = "w";
    file.type = type;
    file.rows = rows;
    file.cols = cols;
    file.row_bytes = cols / values * block;
    file.data = bytes;
    WeightMatrix packed = file;
    const bool has_packed = PackForGemm(packed);
    for (int64_t T : token_counts) {
      std::vector<float> x(T * cols), y(T * rows);
      std::normal_distribution<float> nd;
      for (float& v : x) v = nd(g);
      for (const WeightMatrix* w : {&file, &packed}) {
        if (w == &packed && !has_packed) continue;
        double best = 1e30;
        MatMulScratch scratch;  // kept between calls, as the engine keeps it
        // The best of at least 5 calls and of about 2e9 multiply-adds (short calls vary most).
        const int64_t reps = std::max<int64_t>(5, 2000000000 / (rows * cols * T));
        for (int64_t rep = 0; rep < reps; ++rep) {
          const auto t0 = std::chrono::steady_clock::now();
          MatMul(*w, x.data(), T, y.data(), on, &scratch);
          best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::printf("| %s | %s | %lld | %.3f | %.1f | %.1f |\n", GgmlTypeName(type).c_str(),
                    w == &file ? "file" : "packed", static_cast<long long>(T), best * 1e3, rows * cols * T / best / 1e9,
                    static_cast<double>(w->data.size()) / best / 1e9);
      }
    }
  }
  return 0;
}
