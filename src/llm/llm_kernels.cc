#include "llm/llm_kernels.h"

#include <cstdlib>
#include <cstring>

namespace inferloop::llm {
namespace {

bool HasAvx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

bool HasAvx512Vnni() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return HasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

const LlmKernelTable* Choose() {
  const char* env = std::getenv("INFERLOOP_ISA");
  int cap = 2;
  if (env != nullptr && std::strcmp(env, "avx2") == 0) cap = 1;
  if (env != nullptr && std::strcmp(env, "scalar") == 0) cap = 0;
  if (cap >= 2 && HasAvx512Vnni() && Avx512VnniLlmKernels() != nullptr) return Avx512VnniLlmKernels();
  if (cap >= 1 && HasAvx2() && Avx2LlmKernels() != nullptr) return Avx2LlmKernels();
  return ScalarLlmKernels();
}

}  // namespace

void Q8Rows::Resize(int64_t rows, int64_t n) {
  n_ = n;
  q_.resize(rows * n + 64);
  d_.resize(rows * n / 32);
  sum_.resize(rows * n / 32);
}

void Q8Rows::Quantize(int64_t r, const float* x) {
  ActiveLlmKernels().quantize_q8(x, n_, q_.data() + r * n_, d_.data() + r * n_ / 32, sum_.data() + r * n_ / 32);
}

Q8Row Q8Rows::Row(int64_t r) const {
  return {q_.data() + r * n_, d_.data() + r * n_ / 32, sum_.data() + r * n_ / 32};
}

const LlmKernelTable& ActiveLlmKernels() {
  static const LlmKernelTable* table = Choose();
  return *table;
}

std::vector<const LlmKernelTable*> AvailableLlmKernels() {
  std::vector<const LlmKernelTable*> v;
  if (HasAvx512Vnni() && Avx512VnniLlmKernels() != nullptr) v.push_back(Avx512VnniLlmKernels());
  if (HasAvx2() && Avx2LlmKernels() != nullptr) v.push_back(Avx2LlmKernels());
  v.push_back(ScalarLlmKernels());
  return v;
}

}  // namespace inferloop::llm
