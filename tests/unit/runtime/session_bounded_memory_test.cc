// Memory stays bounded when every request has new input shapes: plans are cached up to a
// limit, arenas are reused and grow only to the largest shape seen.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <random>

#include "unit/runtime/test_models.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define RT_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RT_SANITIZED 1
#endif

namespace inferloop {
namespace {

using testing::MakeSession;
using testing::RandomFloats;
using testing::SeqMlpModel;

size_t ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  size_t total = 0, resident = 0;
  f >> total >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST(RtBoundedMemory, ThousandRandomShapesStayWithinTenPercent) {
#ifdef RT_SANITIZED
  GTEST_SKIP() << "sanitizers keep freed memory in quarantine: resident size says nothing here";
#endif
  SessionOptions opts;
  opts.intra_op_threads = 1;
  auto s = MakeSession(SeqMlpModel(64), opts);
  ASSERT_TRUE(s);
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int64_t> batch(1, 16), seq(1, 64);
  size_t rss_at_100 = 0;
  for (int i = 1; i <= 1000; ++i) {
    Shape shape{batch(rng), seq(rng), 64};
    auto r = s->Run({{"x", Value(RandomFloats(shape, static_cast<uint32_t>(i)))}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ((*r)[0].second.tensor().shape(), shape);
    if (i == 100) rss_at_100 = ResidentBytes();
  }
  const size_t rss_at_1000 = ResidentBytes();
  EXPECT_LE(s->memory_stats().cached_shape_plans, opts.max_cached_shape_plans);
  EXPECT_LE(static_cast<double>(rss_at_1000), 1.10 * static_cast<double>(rss_at_100))
      << "resident memory after request 100: " << rss_at_100 << " bytes, after request 1000: " << rss_at_1000;
}

}  // namespace
}  // namespace inferloop
