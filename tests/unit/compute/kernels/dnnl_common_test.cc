// PackedWeights: packing into oneDNN layouts, dropping the plain original after the first
// blocked packing, rebuilding the exact plain values from the packed copy, and Retain; float16
// copies (GetHalf) and bf16 packings (Precision modes). INFERLOOP_ISA capping oneDNN's ISA.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "base/float_types.h"
#include "base/thread_pool.h"
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


// MatMul's plans read constant B [K, N] as it is stored (matmul: {K, N} "ab") and transposed
// (inner product: W = {N, K} "ba" of the same bytes). With K == N both may ask for the layout
// {N, K} "ab": for the inner product that is the transpose, not the stored bytes. (Both were
// once served one copy, and a square MatMul on oneDNN's AVX2 inner product read B untransposed.)
TEST(DnnlPackedWeights, ASquareMatrixAndItsTransposeAreDifferentCopies) {
  const int64_t K = 16;
  std::vector<float> v(static_cast<size_t>(K * K));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);  // v[k * K + n]
  const memory::desc stored({K, K}, memory::data_type::f32, memory::format_tag::ab);    // B[k][n]
  const memory::desc as_w({K, K}, memory::data_type::f32, memory::format_tag::ba);      // W[n][k] = B[k][n]
  const memory::desc blocked({K, K}, memory::data_type::f32, memory::format_tag::BA16a16b);
  auto transposed_at = [&](const float* w, int64_t n, int64_t k) { return w[n * K + k]; };  // W plain "ab"
  for (bool blocked_first : {false, true}) {
    SCOPED_TRACE(blocked_first ? "a blocked packing first (the source)" : "the stored layout first");
    Tensor w = Tensor::FromVector(DataType::kFloat, {K, K}, v);
    PackedWeights packed(&w);
    w = Tensor();
    auto first = packed.Get(stored, blocked_first ? blocked : stored);
    ASSERT_TRUE(first);
    auto t = packed.Get(as_w, stored);  // {N, K} "ab": the same desc as `stored`, other values
    ASSERT_TRUE(t);
    EXPECT_NE(t.get(), first.get());
    const float* tw = static_cast<const float*>(t->get_data_handle());
    for (int64_t n = 0; n < K; ++n)
      for (int64_t k = 0; k < K; ++k) ASSERT_EQ(transposed_at(tw, n, k), v[k * K + n]) << n << "," << k;
    auto b = packed.Get(as_w, blocked);  // the blocked layout of W, not of B
    if (blocked_first) {
      EXPECT_NE(b.get(), first.get());
    }
    auto back = packed.Get(as_w, stored);
    EXPECT_EQ(0, std::memcmp(back->get_data_handle(), tw, v.size() * sizeof(float)));
  }
  // Float16 copies keep the distinction too.
  Tensor w = Tensor::FromVector(DataType::kFloat, {K, K}, v);
  PackedWeights packed(&w);
  w = Tensor();
  auto hb = packed.GetHalf(stored, blocked);
  auto hw = packed.GetHalf(as_w, blocked);
  ASSERT_TRUE(hb && hw);
  EXPECT_NE(hb.get(), hw.get());
  std::vector<float> wb(v.size()), ww(v.size());
  hb->Expand(wb.data());
  hw->Expand(ww.data());
  EXPECT_NE(wb, ww);  // B and W blocked the same way hold transposed values (v is not symmetric)
}


TEST(DnnlPackedWeights, HalfCopiesKeepHalfTheBytesAndRebuildRoundedValues) {
  const int64_t K = 40, N = 72;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(K * N));
  for (auto& x : v) x = dist(rng);
  Tensor w = Tensor::FromVector(DataType::kFloat, {K, N}, v);
  PackedWeights packed(&w);
  w = Tensor();  // PackedWeights holds the only reference now
  auto bytes = [&] {
    size_t total = 0;
    packed.ForEachBuffer([&](const void*, size_t b) { total += b; });
    return total;
  };
  EXPECT_EQ(bytes(), v.size() * sizeof(float));  // the plain original
  const memory::desc plain({K, N}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc blocked({K, N}, memory::data_type::f32, memory::format_tag::BA16a16b);
  auto half = packed.GetHalf(plain, blocked);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->md, blocked);
  EXPECT_EQ(packed.GetHalf(plain, blocked).get(), half.get());  // cached
  // The float32 original is gone: only the float16 copy (of the padded blocked layout) is left.
  EXPECT_EQ(bytes(), blocked.get_size() / 2);
  // Widened in the blocked layout, then back to plain: every value is its float16 rounding.
  auto rebuilt = packed.Plain();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(rebuilt->data<float>()[i], HalfToFloat(FloatToHalf(v[i]))) << i;
    EXPECT_NEAR(rebuilt->data<float>()[i], v[i], 1e-3) << i;
  }
  // A bf16 packing through Get rounds to bfloat16 (8 significant bits).
  Tensor w2 = Tensor::FromVector(DataType::kFloat, {K, N}, v);
  PackedWeights packed16(&w2);
  const memory::desc bf16_plain({K, N}, memory::data_type::bf16, memory::format_tag::ab);
  auto m = packed16.Get(plain, bf16_plain);
  const auto* b = static_cast<const uint16_t*>(m->get_data_handle());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(b[i], FloatToBFloat16(v[i])) << i;
}

// INFERLOOP_ISA lowers oneDNN's instruction set as it lowers inferloop's own kernels (each case
// in a fresh process, as oneDNN reads its ISA once): avx512 runs no AMX kernels, avx2 nothing
// above AVX2; ONEDNN_MAX_CPU_ISA, when the user sets it, wins. oneDNN's ISA values are nested bit
// sets, so "at most X" is "no bits outside X's".
bool AtMost(dnnl::cpu_isa isa, dnnl::cpu_isa cap) {
  return (static_cast<unsigned>(isa) & ~static_cast<unsigned>(cap)) == 0;
}

void ExpectCap(const char* inferloop_isa, const char* onednn_isa, dnnl::cpu_isa cap) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("INFERLOOP_ISA", inferloop_isa, 1);
        if (onednn_isa) setenv("ONEDNN_MAX_CPU_ISA", onednn_isa, 1);
        else unsetenv("ONEDNN_MAX_CPU_ISA");
        const dnnl::cpu_isa isa = dnnl_kernels::EffectiveIsa();
        std::fprintf(stderr, "effective isa %#x\n", static_cast<unsigned>(isa));
        std::exit(AtMost(isa, cap) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "effective isa")
      << "INFERLOOP_ISA=" << inferloop_isa;
}

TEST(DnnlIsaCap, InferloopIsaLowersOneDnn) {
  ExpectCap("avx512", nullptr, dnnl::cpu_isa::avx512_core_bf16);
  ExpectCap("avx2", nullptr, dnnl::cpu_isa::avx2);
  ExpectCap("scalar", nullptr, dnnl::cpu_isa::sse41);
  ExpectCap("avx512", "AVX2", dnnl::cpu_isa::avx2);  // the user's oneDNN cap wins
}

// Only the pool matters to ThreadScope; the rest of the context is never called.
class PoolOnlyContext : public KernelContext {
 public:
  explicit PoolOnlyContext(ThreadPool* pool) : pool_(pool) {}
  int num_inputs() const override { return 0; }
  const Value* input_value(int) const override { return nullptr; }
  int num_outputs() const override { return 0; }
  bool output_wanted(int) const override { return false; }
  void SetOutput(int, Value) override {}
  Result<Tensor> Allocate(DataType, Shape) override { return Status::Unimplemented("not in this test"); }
  ThreadPool* thread_pool() const override { return pool_; }
  Result<std::vector<Value>> RunSubgraph(const Subgraph&, std::vector<Value>) override {
    return Status::Unimplemented("not in this test");
  }
  const Node& node() const override { return node_; }

 private:
  ThreadPool* pool_;
  Node node_;
};

TEST(DnnlThreadScope, StallsLookLikeWaitingNotComputing) {
  using std::chrono::microseconds;
  using dnnl_kernels::LooksStalled;
  // DLRM's Gemm at batch 8 waiting for a core, and the same computing.
  EXPECT_TRUE(LooksStalled(1 << 20, microseconds(2200)));
  EXPECT_FALSE(LooksStalled(1 << 20, microseconds(40)));
  // Short calls are never a stall, however slow for their work.
  EXPECT_FALSE(LooksStalled(1000, microseconds(499)));
  // Long calls that did their work at one multiply-add per nanosecond or more are not either
  // (a big convolution, a matrix-vector product streaming its weights).
  EXPECT_FALSE(LooksStalled(int64_t{1} << 30, microseconds(100000)));
  EXPECT_FALSE(LooksStalled(16 << 20, microseconds(4000)));
  EXPECT_TRUE(LooksStalled(2 << 20, microseconds(4000)));
  EXPECT_FALSE(LooksStalled(-1, microseconds(100000)));  // work not known
}

TEST(DnnlThreadScope, AContendedPoolKeepsSmallWorkOnTheCallersThread) {
  using dnnl_kernels::ThreadScope;
  ThreadPool pool(2);
  PoolOnlyContext ctx(&pool);
  const int64_t small = ThreadScope::kParallelMinMacs * 2, big = ThreadScope::kContendedMinMacs;
  EXPECT_EQ(ThreadScope(ctx, small).threads(), 2);
  EXPECT_EQ(ThreadScope(ctx, ThreadScope::kParallelMinMacs - 1).threads(), 1);
  // Run reports a stall of a parallel scope to its pool ...
  {
    ThreadScope scope(ctx, small);
    ASSERT_EQ(scope.threads(), 2);
    const Status st = scope.Run([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // 2M multiply-adds in 3 ms
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok());
  }
  EXPECT_TRUE(pool.Contended(std::chrono::steady_clock::now()));
  // ... and then small work runs on one thread, work worth the wait still on two, work of
  // unknown size as before.
  EXPECT_EQ(ThreadScope(ctx, small).threads(), 1);
  EXPECT_EQ(ThreadScope(ctx, big).threads(), 2);
  EXPECT_EQ(ThreadScope(ctx, -1).threads(), 2);
  // Run passes the Status through.
  EXPECT_EQ(ThreadScope(ctx, big).Run([] { return Status::Internal("x"); }).code(), StatusCode::kInternal);
  // A scope on one thread does not report: a slow one-thread call is no stall.
  ThreadPool quiet(2);
  PoolOnlyContext qctx(&quiet);
  EXPECT_TRUE(ThreadScope(qctx, 10).Run([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Status::Ok();
  }).ok());
  EXPECT_FALSE(quiet.Contended(std::chrono::steady_clock::now()));
}

}  // namespace
}  // namespace inferloop
