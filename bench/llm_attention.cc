// Times the attention of one decode step (every layer, every query head, over n cached
// positions) of a TinyLlama-shaped model (22 layers, 32 query heads sharing 4 key/value heads,
// head dim 64), single-threaded, with the kernel table the process chooses (INFERLOOP_ISA lowers
// it): query heads one at a time against grouped-query calls that read each key/value row once
// for the 8 heads sharing it (AttendHeads). A tuning aid for kv_attention.cc.
//   build/bench_llm_attention [positions ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "llm/kv_attention.h"
#include "llm/kv_block_pool.h"
#include "llm/llm_kernels.h"

using namespace inferloop::llm;

namespace {

constexpr int kLayers = 22, kHeads = 32, kKvHeads = 4, kHeadDim = 64, kGroup = kHeads / kKvHeads;

double StepSeconds(const LlmKernelTable& k, const KvSequence& seq, int n, int group, const std::vector<float>& q,
                   std::vector<float>& out, AttentionScratch& s) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int l = 0; l < kLayers; ++l) {
    for (int h = 0; h < kHeads; h += group) {
      AttendHeads(k, seq, l, h / kGroup, kHeadDim, group, q.data() + h * kHeadDim, n, 0.125f,
                  out.data() + h * kHeadDim, s);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> positions;
  for (int i = 1; i < argc; ++i) positions.push_back(std::atoi(argv[i]));
  if (positions.empty()) positions = {512, 4096, 16384};
  const LlmKernelTable& k = ActiveLlmKernels();
  std::printf("kernel table: %s; %d layers, %d query heads over %d key/value heads, head dim %d, 1 thread\n", k.name,
              kLayers, kHeads, kKvHeads, kHeadDim);
  std::printf("| cache | positions | per head (ms) | grouped (ms) | per head / grouped |\n|---|---:|---:|---:|---:|\n");
  std::mt19937 g(1);
  std::normal_distribution<float> nd;
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    for (int n : positions) {
      const KvCacheShape shape{kLayers, kKvHeads * kHeadDim, 16, type, kHeadDim};
      auto pool = KvBlockPool::Create(shape, (n + 15) / 16);
      if (!pool.ok()) {
        std::fprintf(stderr, "%s\n", pool.status().message().c_str());
        return 1;
      }
      KvSequence seq(&*pool);
      if (!seq.Reserve(n).ok()) return 1;
      std::vector<float> row(shape.kv_dim);
      for (int l = 0; l < kLayers; ++l) {
        for (int j = 0; j < n; ++j) {
          for (float& v : row) v = nd(g);
          for (int h = 0; h < kKvHeads; ++h) StoreKvRow(k, type, row.data() + h * kHeadDim, kHeadDim, seq.KeyHead(l, h, j));
          for (float& v : row) v = nd(g);
          for (int h = 0; h < kKvHeads; ++h) StoreKvRow(k, type, row.data() + h * kHeadDim, kHeadDim, seq.ValueHead(l, h, j));
        }
      }
      std::vector<float> q(kHeads * kHeadDim), out(kHeads * kHeadDim);
      for (float& v : q) v = nd(g);
      AttentionScratch s;
      std::vector<double> single, grouped;
      for (int rep = 0; rep < 7; ++rep) {  // alternating, medians
        single.push_back(StepSeconds(k, seq, n, 1, q, out, s));
        grouped.push_back(StepSeconds(k, seq, n, kGroup, q, out, s));
      }
      std::nth_element(single.begin(), single.begin() + 3, single.end());
      std::nth_element(grouped.begin(), grouped.begin() + 3, grouped.end());
      std::printf("| %s | %d | %.2f | %.2f | %.2fx |\n", type == KvType::kF16 ? "F16" : "Q8_0", n, single[3] * 1e3,
                  grouped[3] * 1e3, single[3] / grouped[3]);
    }
  }
  return 0;
}
