// The K-quant kernels against llama.cpp's own CPU code, bit for bit: llama.cpp's ggml CPU library
// (libggml-cpu.so of the PyPI llama-cpp-python in the project's .venv, loaded with dlopen) quantizes
// the same activations to Q8_K and computes the same Q4_K / Q6_K dots through its public
// ggml_get_type_traits_cpu() table. Skipped (with a message) when that library is not installed
// (scripts/setup_llama_cpp.sh installs it).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "llm/ggml_types.h"
#include "llm/llm_kernels.h"

namespace inferloop::llm {
namespace {

// ggml-cpu.h's public CPU type traits (function pointer table), as that header declares them.
using FromFloatFn = void (*)(const float* x, void* y, int64_t k);
using VecDotFn = void (*)(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by, int nrc);
struct GgmlTypeTraitsCpu {
  FromFloatFn from_float;
  VecDotFn vec_dot;
  int vec_dot_type;
  int64_t nrows;
};
using GetTraitsFn = const GgmlTypeTraitsCpu* (*)(int type);
using CpuInitFn = void (*)();

constexpr int kQ4K = 12, kQ6K = 14, kQ8K = 15;

// libggml-cpu.so under .venv/lib/python*/site-packages/llama_cpp/lib, or "".
std::string FindGgmlCpu() {
  namespace fs = std::filesystem;
  const fs::path lib = fs::path(INFERLOOP_SOURCE_DIR) / ".venv" / "lib";
  std::error_code ec;
  if (!fs::is_directory(lib, ec)) return "";
  for (const auto& e : fs::directory_iterator(lib, ec)) {
    const fs::path p = e.path() / "site-packages" / "llama_cpp" / "lib" / "libggml-cpu.so";
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

class LlamaCppKQuant : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = FindGgmlCpu();
    if (path.empty()) GTEST_SKIP() << "llama.cpp's libggml-cpu.so not found under .venv (scripts/setup_llama_cpp.sh)";
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    auto init = reinterpret_cast<CpuInitFn>(dlsym(handle_, "ggml_cpu_init"));
    get_ = reinterpret_cast<GetTraitsFn>(dlsym(handle_, "ggml_get_type_traits_cpu"));
    ASSERT_NE(init, nullptr);
    ASSERT_NE(get_, nullptr);
    init();
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* handle_ = nullptr;
  GetTraitsFn get_ = nullptr;
};

std::vector<uint8_t> RandomK(int type, int64_t n, std::mt19937& g) {
  const int bytes = type == kQ4K ? 144 : 210;
  std::vector<uint8_t> w(n / 256 * bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.005f);
  for (int64_t b = 0; b < n / 256; ++b) {
    uint8_t* blk = w.data() + b * bytes;
    for (int i = 0; i < bytes; ++i) blk[i] = static_cast<uint8_t>(byte(g));
    const uint16_t d = FloatToHalf(scale(g)), dmin = FloatToHalf(scale(g));
    std::memcpy(blk + (type == kQ4K ? 0 : 208), &d, 2);
    if (type == kQ4K) std::memcpy(blk + 2, &dmin, 2);
  }
  return w;
}

TEST_F(LlamaCppKQuant, Q8KAndDotsEqualLlamaCppBitForBit) {
  ASSERT_EQ(get_(kQ4K)->vec_dot_type, kQ8K);
  ASSERT_EQ(get_(kQ6K)->vec_dot_type, kQ8K);
  std::mt19937 g(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int dots = 0;
  for (int64_t n : {256, 2048, 5632}) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<float> x(n);
      const float scale = std::exp2(static_cast<float>(rep % 7) - 3);  // magnitudes 1/8 .. 8
      for (float& v : x) v = nd(g) * scale;
      // llama.cpp's Q8_K blocks: float d, 256 int8, 16 int16 sums (292 bytes).
      std::vector<uint8_t> yq(n / 256 * 292);
      get_(kQ8K)->from_float(x.data(), yq.data(), n);
      Q8KRows xk;
      xk.Resize(1, n);
      xk.Quantize(0, x.data());
      const Q8KRow row = xk.Row(0);
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = yq.data() + b * 292;
        float d;
        std::memcpy(&d, blk, 4);
        ASSERT_EQ(row.d[b], d) << "n=" << n << " block " << b;
        ASSERT_EQ(std::memcmp(row.q + b * 256, blk + 4, 256), 0) << "n=" << n << " block " << b;
        ASSERT_EQ(std::memcmp(row.bsum + b * 16, blk + 260, 32), 0) << "n=" << n << " block " << b;
      }
      for (int type : {kQ4K, kQ6K}) {
        const auto w = RandomK(type, n, g);
        float want = 0;
        get_(type)->vec_dot(static_cast<int>(n), &want, 0, w.data(), 0, yq.data(), 0, 1);
        for (const LlmKernelTable* t : AvailableLlmKernels()) {
          const float got = type == kQ4K ? t->dot_q4_k(w.data(), row, n) : t->dot_q6_k(w.data(), row, n);
          ASSERT_EQ(got, want) << t->name << (type == kQ4K ? " Q4_K" : " Q6_K") << " n=" << n << " rep " << rep;
          ++dots;
        }
      }
    }
  }
  EXPECT_GT(dots, 0);
}

}  // namespace
}  // namespace inferloop::llm
