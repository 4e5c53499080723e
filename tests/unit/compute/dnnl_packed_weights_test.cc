// PackedWeights: packing into oneDNN layouts, dropping the plain original after the first
// blocked packing, rebuilding the exact plain values from the packed copy, and Retain.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compute/kernels/dnnl_common.h"

namespace inferloop {
namespace {

using dnnl::memory;
using dnnl_kernels::PackedWeights;

TEST(DnnlPackedWeights, PlainValuesComeBackAfterTheOriginalIsDropped) {
  const int64_t K = 40, N = 72;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(K * N));
  for (auto& x : v) x = dist(rng);
  std::vector<float> expected = v;
  PackedWeights pw(nullptr);
  EXPECT_FALSE(pw.defined());
  {
    Tensor w = Tensor::FromVector(DataType::kFloat, {K, N}, v);
    PackedWeights tmp(&w);
    EXPECT_TRUE(tmp.defined());
    EXPECT_TRUE(tmp.Matches(w));
    EXPECT_TRUE(tmp.Matches(Tensor::View(DataType::kFloat, {K, N}, nullptr, nullptr)));  // passed without data
    EXPECT_FALSE(tmp.Matches(Tensor::View(DataType::kFloat, {N, K}, nullptr, nullptr)));
  }
  Tensor w = Tensor::FromVector(DataType::kFloat, {K, N}, v);
  PackedWeights packed(&w);
  {
    // Only `packed` and `w` hold the buffer; drop ours to see PackedWeights let go of it.
    Tensor probe = w;
    w = Tensor();
    const memory::desc plain({K, N}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc blocked({K, N}, memory::data_type::f32, memory::format_tag::BA16a16b);
    auto m = packed.Get(plain, blocked);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->get_desc(), blocked);
    EXPECT_EQ(packed.Get(plain, blocked).get(), m.get());  // cached
    // The plain layout itself, and the transposed one, come from the packed copy now.
    auto same = packed.Get(plain, plain);
    EXPECT_EQ(0, std::memcmp(same->get_data_handle(), expected.data(), expected.size() * sizeof(float)));
    auto rebuilt = packed.Plain();
    ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
    EXPECT_NE(rebuilt->raw_data(), probe.raw_data());  // rebuilt, not the original buffer
    EXPECT_EQ(0, std::memcmp(rebuilt->raw_data(), expected.data(), expected.size() * sizeof(float)));
    // A plan keeping the plain layout: those weights become the source, no rebuild any more.
    packed.Retain(same);
    auto kept = packed.Plain();
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->raw_data(), same->get_data_handle());
    // And a blocked layout made after that comes from them, with the same values.
    const memory::desc other({K, N}, memory::data_type::f32, memory::format_tag::ba);
    auto t = packed.Get(plain, other);
    std::vector<float> back(expected.size());
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) back[k * N + n] = static_cast<const float*>(t->get_data_handle())[n * K + k];
    EXPECT_EQ(back, expected);
  }
}

}  // namespace
}  // namespace inferloop
