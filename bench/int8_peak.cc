// The int8 multiply-add peak of this machine's cores, the bound for INT8 convolutions and matrix
// products: T threads each run a loop of 12 independent u8 x s8 -> s32 multiply-add chains and
// the result is the total multiply-adds per second (GMAC/s), best of 3 passes, as JSON:
//   avx512_vnni: vpdpbusd on 512-bit registers (64 multiply-adds each),
//   avx2: vpmaddubsw + vpmaddwd + vpaddd on 256-bit registers (32 multiply-adds; the sequence
//         oneDNN's and ONNX Runtime's AVX2 int8 kernels use; no VNNI).
// A path the CPU lacks prints null.
//
//   cmake --build build --target bench_int8_peak && build/bench_int8_peak [--threads 2]
// GCC 12 reports the intrinsics' own _mm512_undefined pass-through operands as uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr long kIters = 50'000'000;

__attribute__((target("avx512f,avx512bw,avx512vnni"))) int Vnni512() {
  __m512i a[12];
  __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(2);
  for (auto& v : a) v = _mm512_setzero_si512();
  for (long n = 0; n < kIters; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm512_dpbusd_epi32(a[i], x, y);
    __asm__ volatile("" : "+v"(x));  // keeps the loop from being folded
  }
  __m512i t = a[0];
  for (int i = 1; i < 12; ++i) t = _mm512_add_epi32(t, a[i]);
  return _mm512_reduce_add_epi32(t);
}

__attribute__((target("avx2"))) int Avx2() {
  __m256i a[12];
  __m256i x = _mm256_set1_epi8(1), y = _mm256_set1_epi8(2), ones = _mm256_set1_epi16(1);
  for (auto& v : a) v = _mm256_setzero_si256();
  for (long n = 0; n < kIters; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), ones));
    __asm__ volatile("" : "+v"(x));
  }
  __m256i t = a[0];
  for (int i = 1; i < 12; ++i) t = _mm256_add_epi32(t, a[i]);
  return _mm256_extract_epi32(t, 0);
}

// GMAC/s of `fn` (macs multiply-adds per inner step) on `threads` threads at once, best of 3.
double Measure(int (*fn)(), double macs, int threads) {
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<std::thread> ts;
    std::vector<int> sink(threads);
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { sink[t] = fn(); });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, threads * static_cast<double>(kIters) * 12 * macs / s / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::max(1, std::atoi(argv[i + 1]));
  __builtin_cpu_init();
  const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  const bool avx2 = __builtin_cpu_supports("avx2");
  std::printf("{\"threads\": %d, \"avx512_vnni_gmacs\": ", threads);
  if (vnni) std::printf("%.1f", Measure(&Vnni512, 64, threads));
  else std::printf("null");
  std::printf(", \"avx2_gmacs\": ");
  if (avx2) std::printf("%.1f", Measure(&Avx2, 32, threads));
  else std::printf("null");
  std::printf("}\n");
  return 0;
}
