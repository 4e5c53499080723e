// OptimizeModel: runs the graph passes (passes.h) over a model until nothing changes.
//
// Level 0 does nothing; 1 (basic) folds constants and removes dead nodes, identities and
// cancelling Transpose/Reshape pairs; 2 (all, the default) adds Conv+BatchNorm folding and the
// fusions into com.inferloop ops (docs/FUSED_OPS.md) and LayerNormalization, then (once) the
// channel-blocked NCHW16c layout between 2-D convolutions. Fusions fire only
// for ops the registry has kernels for. A model whose graph is not a valid DAG (a cycle, a value
// defined twice, a read of an undefined name) is left as it is, so the runtime reports it.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "graph/graph.h"
#include "optimizer/graph_pass.h"

namespace inferloop {

struct OptimizeOptions {
  int level = 2;
  int max_iterations = 10;  // rounds over all passes before stopping short of a fixed point
  const KernelRegistry* registry = nullptr;  // nullptr: DefaultKernelRegistry()
  size_t max_folding_growth_bytes = size_t{1} << 20;
  // Fuse QuantizeLinear/DequantizeLinear patterns into int8 kernels (the QDQ fusion pass reads
  // this). false: Q/DQ nodes stay and run in float, as written (SessionOptions::precision fp32).
  bool fuse_qdq = true;
  // The NchwcLayout pass's channel block (graph/channel_block.h): 0 = the one this process's
  // convolutions run fastest in (dnnl_kernels::PreferredChannelBlock: 16 with AVX-512, 8 on
  // AVX2); 8 or 16 to choose (tests).
  int64_t channel_block = 0;
};

struct OptimizeReport {
  std::map<std::string, int> ops_before, ops_after;  // node count by "op" or "domain:op"
  int nodes_before = 0, nodes_after = 0;
  std::map<std::string, int> rewrites;  // by pass name
  int iterations = 0;
  bool skipped = false;  // the graph was not a valid DAG; nothing was done
};

Result<OptimizeReport> OptimizeModel(Model& model, const OptimizeOptions& opts = {});

// Node counts of the main graph by op ("Conv", or "com.inferloop:FusedConv" for other domains).
std::map<std::string, int> CountOps(const Graph& g);

// A printable table: one row per op (before, after), then the totals.
std::string FormatOptimizeReport(const OptimizeReport& r);

}  // namespace inferloop
