// Memory read bandwidth of this machine, the bound for LLM decoding (every weight is read once
// per generated token). Reads a buffer much larger than the caches with T threads, each summing
// its share with 256-bit loads; prints the best of several passes as JSON.
//
//   cmake --build build --target bench_membw && build/bench_membw [--threads 2] [--mib 1024]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

__attribute__((target("avx2"))) double SumRange(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  double s = 0;
  for (float v : out) s += v;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  size_t mib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--mib") == 0) mib = std::max<size_t>(64, std::strtoull(argv[i + 1], nullptr, 10));
  }
  const size_t n = mib * (1 << 20) / sizeof(float);
  float* buf = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  if (buf == nullptr) return 1;
  // First touch by the thread that reads each part (the pages land where they are read).
  std::vector<std::thread> ts;
  const size_t per = (n / threads) & ~size_t{31};
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([=] { std::fill(buf + t * per, buf + (t + 1) * per, 1.0f); });
  }
  for (auto& t : ts) t.join();
  double best = 0, sink = 0;
  for (int pass = 0; pass < 7; ++pass) {
    std::vector<double> sums(threads);
    ts.clear();
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { sums[t] = SumRange(buf + t * per, per); });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (double v : sums) sink += v;
    best = std::max(best, per * threads * sizeof(float) / s / 1e9);
  }
  std::printf("{\"threads\": %d, \"mib\": %zu, \"read_gb_per_s\": %.2f, \"check\": %.0f}\n", threads, mib, best, sink);
  std::free(buf);
  return 0;
}
