// Proves that a steady-state run (input shapes seen before, outputs reused through RunInto)
// makes no heap allocation, kernels included: malloc and friends are counted between two
// points. operator new goes through malloc in libstdc++, so it is counted too.
//
// Allocations made inside oneDNN (any frame of the call stack in libdnnl) are counted apart:
// oneDNN's primitive execute builds its argument map on the heap on every call, which no
// caller can avoid; everything else is inferloop's and must be zero.
//
// Set INFERLOOP_ALLOC_TRACE=1 to print a backtrace of every allocation counted.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "unit/runtime/test_models.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define RT_NO_ALLOC_HOOKS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RT_NO_ALLOC_HOOKS 1
#endif

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};       // outside oneDNN
std::atomic<long> g_dnnl_allocations{0};  // with libdnnl on the stack
bool g_trace = false;
thread_local bool t_in_hook = false;

// Address ranges of libdnnl's loaded segments.
struct Range {
  uintptr_t begin, end;
};
Range g_dnnl[8];
int g_dnnl_ranges = 0;

int FindDnnl(struct dl_phdr_info* info, size_t, void*) {
  if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libdnnl")) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_dnnl_ranges < 8; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t b = info->dlpi_addr + ph.p_vaddr;
    g_dnnl[g_dnnl_ranges++] = {b, b + ph.p_memsz};
  }
  return 1;
}

bool InDnnl(void* const* frames, int n) {
  for (int f = 0; f < n; ++f) {
    auto a = reinterpret_cast<uintptr_t>(frames[f]);
    for (int r = 0; r < g_dnnl_ranges; ++r)
      if (a >= g_dnnl[r].begin && a < g_dnnl[r].end) return true;
  }
  return false;
}

void Count() {
  if (!g_counting.load(std::memory_order_relaxed) || t_in_hook) return;
  t_in_hook = true;
  void* frames[64];
  const int n = backtrace(frames, 64);
  if (InDnnl(frames, n)) {
    g_dnnl_allocations.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (g_trace) {
      static const char kSep[] = "---- allocation in a steady-state run:\n";
      ssize_t ignored = write(2, kSep, sizeof(kSep) - 1);
      (void)ignored;
      backtrace_symbols_fd(frames, n, 2);
    }
  }
  t_in_hook = false;
}

// Before counting: find libdnnl and load the unwinder (its first use allocates).
void PrepareHooks() {
  g_dnnl_ranges = 0;
  dl_iterate_phdr(FindDnnl, nullptr);
  void* frames[4];
  backtrace(frames, 4);
}
}  // namespace

#ifndef RT_NO_ALLOC_HOOKS
#include "unit/libc_alloc_hooks.h"

void OnHeapAllocation() { Count(); }
#endif

namespace inferloop {
namespace {

using testing::MakeSession;
using testing::RandomFloats;
using testing::SmallCnnModel;

// x[2,3,8,8] -> Relu -> Reshape [6,64] -> Sigmoid -> Identity -> Tanh -> Reshape back -> Relu:
// kernels that allocate nothing themselves, so any allocation is the runtime's.
std::string RuntimeOnlyModel() {
  testing::ModelBuilder b;
  b.Input("x", DataType::kFloat, {2, 3, 8, 8}).Output("y", DataType::kFloat, {2, 3, 8, 8});
  b.Initializer("flat", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {6, 64}));
  b.Initializer("back", Tensor::FromVector<int64_t>(DataType::kInt64, {4}, {2, 3, 8, 8}));
  b.Node("Relu", {"x"}, {"a"});
  b.Node("Reshape", {"a", "flat"}, {"b"});
  b.Node("Sigmoid", {"b"}, {"c"});
  b.Node("Identity", {"c"}, {"d"});
  b.Node("Tanh", {"d"}, {"e"});
  b.Node("Reshape", {"e", "back"}, {"f"});
  b.Node("Relu", {"f"}, {"y"});
  return b.Bytes();
}

// Allocations outside oneDNN made by `runs` runs after two warm-up runs (oneDNN's own in
// g_dnnl_allocations).
long AllocationsInSteadyState(const std::string& model, int optimization_level, int threads, int runs) {
  SessionOptions opts;
  opts.optimization_level = optimization_level;
  opts.intra_op_threads = threads;
  auto s = MakeSession(model, opts);
  if (!s) return -1;
  std::vector<NamedValue> inputs = {{"x", Value(RandomFloats({2, 3, 8, 8}, 1))}};
  std::vector<NamedValue> outputs;
  for (int i = 0; i < 2; ++i)
    if (!s->RunInto(inputs, outputs).ok()) return -1;
  const Tensor before = outputs[0].second.tensor().Clone();
  g_trace = std::getenv("INFERLOOP_ALLOC_TRACE") != nullptr;
  PrepareHooks();
  g_allocations = 0;
  g_dnnl_allocations = 0;
  g_counting = true;
  bool ok = true;
  for (int i = 0; i < runs; ++i) ok = ok && s->RunInto(inputs, outputs).ok();
  g_counting = false;
  if (!ok) return -1;
  EXPECT_EQ(testing::MaxAbsDiff(outputs[0].second.tensor(), before), 0.f);  // same inputs, same result
  return g_allocations.load();
}

void ExpectHooksActive() {
  PrepareHooks();
  g_allocations = 0;
  g_counting = true;
  void* volatile probe = std::malloc(64);
  g_counting = false;
  std::free(probe);
  ASSERT_EQ(g_allocations.load(), 1) << "the malloc hook is not active";
}

TEST(RtNoAllocRuntime, ExecutorArenaAndRunIntoAllocateNothing) {
#ifdef RT_NO_ALLOC_HOOKS
  GTEST_SKIP() << "allocation hooks are off under sanitizers";
#endif
  ExpectHooksActive();
  for (int threads : {1, 2}) {
    long n = AllocationsInSteadyState(RuntimeOnlyModel(), 0, threads, 5);
    ASSERT_GE(n, 0) << "the model did not run";
    EXPECT_EQ(n, 0) << n << " heap allocations in 5 steady-state runs with " << threads
                    << " threads; rerun with INFERLOOP_ALLOC_TRACE=1 to see where";
    EXPECT_EQ(g_dnnl_allocations.load(), 0);
  }
}

// The small CNN: Conv, Relu, Add, MaxPool, Reshape, Gemm (fused at level 2).
class RtNoAlloc : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(RtNoAlloc, SteadyStateRunAllocatesNothing) {
#ifdef RT_NO_ALLOC_HOOKS
  GTEST_SKIP() << "allocation hooks are off under sanitizers";
#endif
  ExpectHooksActive();
  const auto [level, threads] = GetParam();
  long n = AllocationsInSteadyState(SmallCnnModel(), level, threads, 5);
  ASSERT_GE(n, 0) << "the model did not run";
  EXPECT_EQ(n, 0) << n << " heap allocations in 5 steady-state runs (optimization level " << level << ", " << threads
                  << " threads); rerun with INFERLOOP_ALLOC_TRACE=1 to see where";
  const long dnnl = g_dnnl_allocations.load();
  RecordProperty("onednn_internal_allocations_per_run", std::to_string(dnnl / 5));
  std::cout << "  (oneDNN made " << dnnl / 5 << " allocations of its own per run)\n";
}

INSTANTIATE_TEST_SUITE_P(LevelsAndThreads, RtNoAlloc,
                         ::testing::Values(std::make_pair(0, 1), std::make_pair(2, 1), std::make_pair(2, 2)),
                         [](const auto& info) {
                           return "O" + std::to_string(info.param.first) + "_threads" + std::to_string(info.param.second);
                         });

}  // namespace
}  // namespace inferloop
