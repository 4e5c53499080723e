// Session: a loaded ONNX model, ready to run.
//
// Create from a file path or from bytes; inspect inputs/outputs; Run with named values.
// A Session is immutable after creation: Run may be called from many threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inferloop/precision.h"
#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

struct SessionOptions {
  // Largest single tensor a run may allocate, in bytes (guards against shapes that would
  // exceed memory, e.g. Expand to 2^40 elements). Default: 16 GiB.
  size_t max_tensor_bytes = size_t{16} << 30;
  // Folder used to resolve external-data files when loading from bytes.
  std::string external_data_dir;
  // Graph optimization before running (src/optimizer): 0 = none, 1 = basic (constant folding,
  // dead / identity removal, Transpose/Reshape cancellation), 2 = also fusions into fused ops.
  int optimization_level = 2;
  // Threads the intra-op pool uses for this session's kernels. 0 = DefaultThreadCount() (the CPUs
  // this process may use).
  int intra_op_threads = 0;
  // Place intermediates in planned arenas (false: every tensor on the heap, for comparison).
  bool enable_memory_arena = true;
  // Memory plans kept per distinct set of input shapes (least recently used dropped first).
  // Each plan lays out every intermediate of known size in one arena per concurrent run.
  int max_cached_shape_plans = 8;
  // An arena no run has used for this long is freed on a later Run or Trim().
  int arena_idle_release_ms = 10000;
  // Numeric precision (inferloop/precision.h): kAuto = int8 for a model with Q/DQ nodes, else
  // fp32. kInt8 on a model without Q/DQ nodes fails session creation (quantize it first);
  // kBf16 without AVX512_BF16 falls back to kFp16 with a note on stderr.
  Precision precision = Precision::kAuto;
};

struct ValueInfo {
  std::string name;
  enum class Kind { kTensor, kSequence, kOptional, kMap, kUnknown } kind = Kind::kTensor;
  DataType dtype = DataType::kUndefined;  // element type (for sequences/optionals: inner)
  bool has_shape = false;                 // false: rank unknown
  std::vector<Dim> shape;                 // declared dims: fixed, symbolic or unknown (inferloop/shape.h)
  std::string ToString() const;           // "input: float32[batch,3,224,224]"
};

using NamedValue = std::pair<std::string, Value>;

// One node's kernel run in a profiled run (RunOptions::profile).
struct NodeTiming {
  std::string node;     // the node's name (may be empty in the model)
  std::string op_type;  // "Conv", or "domain:Op" for a non-ONNX domain ("com.inferloop:FusedConv")
  int64_t start_ns = 0;     // steady_clock time at the kernel's start, nanoseconds
  int64_t duration_ns = 0;  // wall time of the kernel, nanoseconds (all its intra-op threads)
  int depth = 0;            // 0: the main graph; 1+: inside an If/Loop/Scan body (counted in its parent too)
};

struct RunOptions {
  // Names of outputs to compute; empty = all graph outputs.
  std::vector<std::string> output_names;
  // When set, every node the run executes appends its timing here, in execution order (a body's
  // nodes before the If/Loop/Scan node that ran them). Costs two clock reads and one record per
  // node; nothing when null. Also on a failed run: the nodes that ran.
  std::vector<NodeTiming>* profile = nullptr;
};

// What static planning found for given input shapes (see Session::PlanMemory).
struct MemoryPlanSummary {
  size_t arena_bytes = 0;   // one arena holding every intermediate whose size is known, with reuse
  size_t peak_bytes = 0;    // most bytes of intermediates alive at once
  size_t naive_bytes = 0;   // all intermediates without reuse
  int planned_values = 0;   // intermediates placed in the arena
  int unplanned_values = 0; // intermediates whose size depends on data (allocated at run time)
};

// How long Session creation took, by phase (milliseconds, wall clock).
struct SessionCreateTimings {
  double load_ms = 0;      // reading and parsing the model
  double optimize_ms = 0;  // the graph optimizer (SessionOptions::optimization_level)
  double plan_ms = 0;      // compiling the plan: kernels created, weights packed
  double total_ms = 0;
};

// The runtime's memory right now (see Session::memory_stats).
struct RuntimeMemoryStats {
  size_t last_arena_bytes = 0;  // arena size of the shape plan the last run used
  size_t arena_bytes_held = 0;  // bytes held by the arenas and scratch blocks of idle runs
  int cached_shape_plans = 0;
  int run_states = 0;           // run states (arena, scratch, frame): most runs in flight at once
  // Constant data held now: initializers the session keeps plus the kernels' own (packed,
  // possibly bf16/fp16) copies of weights, each buffer once. Kernels pack weights on the first
  // run of a shape, so this is meaningful after a run.
  size_t weight_bytes = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> CreateFromFile(const std::string& path,
                                                         const SessionOptions& opts = {});
  static Result<std::unique_ptr<Session>> CreateFromBytes(const void* data, size_t size,
                                                          const SessionOptions& opts = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;

  // Runs the model. Every required input must be given, by name, with the declared dtype and
  // a shape compatible with the declared one. Returns outputs in graph order (or in the order
  // of opts.output_names). Thread-safe.
  Result<std::vector<NamedValue>> Run(const std::vector<NamedValue>& inputs,
                                      const RunOptions& opts = {}) const;

  // Like Run, for a serving loop that reuses `outputs` across runs. If `outputs` is empty it is
  // filled like Run's result (opts.output_names applies). Otherwise its names choose the outputs
  // (any graph output names, in any order) and each value is replaced by the new result; when
  // an entry holds a tensor of the output's dtype and shape whose buffer nothing else shares,
  // the result is computed straight into that buffer. Inputs must stay alive during the call.
  // With outputs kept this way and kernels that use the arena/Scratch, a run with input shapes
  // seen before allocates nothing on the heap. On error, reused output tensors may hold partial
  // results. Thread-safe (use one `outputs` per thread).
  Status RunInto(const std::vector<NamedValue>& inputs, std::vector<NamedValue>& outputs,
                 const RunOptions& opts = {}) const;

  // Creation time by phase.
  const SessionCreateTimings& create_timings() const;
  // Arena sizes, cached shape plans.
  RuntimeMemoryStats memory_stats() const;
  // Frees every idle arena and scratch block and the cached shape plans, and returns free heap
  // memory to the OS (malloc_trim). Runs in flight are not affected. Thread-safe.
  void Trim() const;
  // Threads this session's kernels use.
  int intra_op_threads() const;
  // The precision in force: SessionOptions::precision resolved (kAuto becomes kInt8 or kFp32;
  // kBf16 may have become kFp16).
  Precision precision() const;

  // Infers every intermediate's shape from input shapes (declared ones where not given) and
  // plans their memory before running. Unknown input names or ranks are errors.
  Result<MemoryPlanSummary> PlanMemory(const std::map<std::string, Shape>& input_shapes = {}) const;

 private:
  class Impl;                   // the implementation (runtime/session.cc)
  friend class SessionFactory;  // builds sessions inside the library (runtime/session.cc)
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferloop
