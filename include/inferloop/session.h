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

#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

struct SessionOptions {
  // Largest single tensor a run may allocate, in bytes (guards against shapes that would
  // exceed memory, e.g. Expand to 2^40 elements). Default: 16 GiB.
  size_t max_tensor_bytes = size_t{16} << 30;
  // Folder used to resolve external-data files when loading from bytes.
  std::string external_data_dir;
};

// One dimension of a declared shape: a fixed size, or a symbolic name ("batch"), or unknown.
struct Dim {
  int64_t value = -1;   // >= 0 when fixed
  std::string symbol;   // set when symbolic
};

struct ValueInfo {
  std::string name;
  enum class Kind { kTensor, kSequence, kOptional, kMap, kUnknown } kind = Kind::kTensor;
  DataType dtype = DataType::kUndefined;  // element type (for sequences/optionals: inner)
  bool has_shape = false;                 // false: rank unknown
  std::vector<Dim> shape;
  std::string ToString() const;           // "input: float32[batch,3,224,224]"
};

using NamedValue = std::pair<std::string, Value>;

struct RunOptions {
  // Names of outputs to compute; empty = all graph outputs.
  std::vector<std::string> output_names;
};

// What static planning found for given input shapes (see Session::PlanMemory).
struct MemoryPlanSummary {
  size_t arena_bytes = 0;   // one arena holding every intermediate whose size is known, with reuse
  size_t peak_bytes = 0;    // most bytes of intermediates alive at once
  size_t naive_bytes = 0;   // all intermediates without reuse
  int planned_values = 0;   // intermediates placed in the arena
  int unplanned_values = 0; // intermediates whose size depends on data (allocated at run time)
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

  // Infers every intermediate's shape from input shapes (declared ones where not given) and
  // plans their memory before running. Unknown input names or ranks are errors.
  Result<MemoryPlanSummary> PlanMemory(const std::map<std::string, Shape>& input_shapes = {}) const;

  class Impl;
  // Internal: builds a session from an already-loaded model (runtime/session_internal.h).
  static Result<std::unique_ptr<Session>> CreateFromModel(struct Model model, const SessionOptions& opts);

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferloop
