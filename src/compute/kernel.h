// The kernel interface: one Kernel object per graph node, created once when a session is made
// (so it can validate attributes and pre-compute), then Compute()d many times, possibly from
// several threads at once: Compute must not mutate the kernel.
//
// KernelInfo (creation time) exposes the node's attributes, opset and constant inputs.
// KernelContext (run time) exposes input values, takes outputs, allocates within the session's
// limits and runs subgraphs (If/Loop/Scan bodies) with the caller's scope visible.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "graph/graph.h"
#include "inferloop/precision.h"
#include "inferloop/status.h"
#include "inferloop/tensor.h"

namespace inferloop {

// A compiled subgraph, owned by the runtime.
class Subgraph {
 public:
  virtual ~Subgraph() = default;
  virtual size_t num_inputs() const = 0;
  virtual size_t num_outputs() const = 0;
  virtual const GraphValue& input(size_t i) const = 0;
  virtual const GraphValue& output(size_t i) const = 0;
};

class KernelInfo {
 public:
  virtual ~KernelInfo() = default;
  virtual const Node& node() const = 0;
  // Opset version in force for the node's domain.
  virtual int64_t opset() const = 0;
  // Compiled subgraph for a GRAPH attribute; nullptr if absent.
  virtual const Subgraph* subgraph(const std::string& attr_name) const = 0;
  // The input's value when it is a constant initializer (not overridable); else nullptr.
  virtual const Tensor* constant_input(int i) const = 0;
  // How float32 Conv/MatMul/Gemm kernels store constant weights and compute, as the session
  // resolved SessionOptions::precision: kFp32, kBf16 or kFp16 (inferloop/precision.h).
  virtual Precision float_precision() const { return Precision::kFp32; }

  int num_inputs() const { return static_cast<int>(node().inputs.size()); }
  int num_outputs() const { return static_cast<int>(node().outputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && !node().inputs[i].empty(); }
  bool has_output(int i) const { return i < num_outputs() && !node().outputs[i].empty(); }

  bool has_attr(const std::string& name) const { return node().FindAttribute(name) != nullptr; }
  const Attribute* attr(const std::string& name) const { return node().FindAttribute(name); }
  int64_t GetInt(const std::string& name, int64_t def) const;
  float GetFloat(const std::string& name, float def) const;
  std::string GetString(const std::string& name, const std::string& def) const;
  std::vector<int64_t> GetInts(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> GetFloats(const std::string& name, std::vector<float> def = {}) const;
  std::vector<std::string> GetStrings(const std::string& name, std::vector<std::string> def = {}) const;
  const Tensor* GetTensor(const std::string& name) const;
  // Error helper: "Conv (node 'x'): msg".
  Status Invalid(const std::string& msg) const { return Status::InvalidArgument(node().Describe() + ": " + msg); }
};

class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual int num_inputs() const = 0;
  // nullptr when the input was omitted (empty name) or beyond the node's inputs.
  virtual const Value* input_value(int i) const = 0;
  virtual int num_outputs() const = 0;
  virtual bool output_wanted(int i) const = 0;
  virtual void SetOutput(int i, Value v) = 0;
  // Allocates a zeroed tensor within the session's per-tensor memory limit.
  virtual Result<Tensor> Allocate(DataType dtype, Shape shape) = 0;
  // Like Allocate, but the contents are unspecified: for outputs the kernel writes in full.
  // The runtime may place it in the session's planned arena. For the elementwise ops listed in
  // runtime/memory_plan.cc (kInPlaceOps: unary math/activations, Add/Sub/Mul/Div, ...) it may be
  // the memory of an input that dies at this node: such kernels must write output element i
  // only after reading the inputs' element(s) for i, as any elementwise loop does.
  virtual Result<Tensor> AllocateUninit(DataType dtype, Shape shape) { return Allocate(dtype, std::move(shape)); }
  // The intra-op pool this run may use; nullptr = run single-threaded.
  virtual ThreadPool* thread_pool() const { return nullptr; }
  // Temporary memory for this Compute call: 64-byte aligned, contents unspecified, valid until
  // Compute returns; each call gives a separate block. The runtime takes it from the run's
  // scratch arena, so kernels that use it instead of std::vector/Tensor temporaries allocate
  // nothing in steady-state runs. Split one block among ParallelFor chunks yourself (the chunks
  // must not call Scratch). nullptr when the memory is not available: return ResourceExhausted.
  virtual void* Scratch(size_t bytes);
  // Runs `g` with `inputs`; names not defined inside `g` resolve in this node's scope.
  virtual Result<std::vector<Value>> RunSubgraph(const Subgraph& g, std::vector<Value> inputs) = 0;
  virtual const Node& node() const = 0;

  // The input as a tensor; nullptr if omitted or not a tensor.
  const Tensor* input(int i) const {
    const Value* v = input_value(i);
    return v && v->is_tensor() ? &v->tensor() : nullptr;
  }
  // Like input() but an error naming the node when it is missing.
  Result<const Tensor*> RequireInput(int i) const;
  void SetOutput(int i, Tensor t) { SetOutput(i, Value(std::move(t))); }
  Status Invalid(const std::string& msg) const { return Status::InvalidArgument(node().Describe() + ": " + msg); }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> fallback_scratch_;  // Scratch() without a run arena
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Compute(KernelContext& ctx) const = 0;
  // True when the kernel took its own reference to constant input `i` at creation (e.g. to
  // pack weights for oneDNN) and at run time reads only that input's dtype and shape, never its
  // data. When every reader of an initializer says so, the session stops holding the
  // initializer's data and passes a tensor of the same dtype and shape without data
  // (raw_data() == nullptr), so the memory is freed once the kernels have packed it.
  virtual bool KeepsOwnCopyOfConstant(int /*i*/) const { return false; }
  // Calls `fn` for every buffer of constant data (packed weights) the kernel holds itself now,
  // with its address and size (a buffer shared with the session or another kernel is reported
  // by each holder: callers count each address once). For memory statistics.
  virtual void ForEachOwnConstantBuffer(const std::function<void(const void* data, size_t bytes)>& /*fn*/) const {}
};

using KernelFn = std::function<Status(KernelContext&)>;
// Wraps a function (which may capture attribute values) as a Kernel.
std::unique_ptr<Kernel> MakeKernel(KernelFn fn);

using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const KernelInfo&)>;

}  // namespace inferloop
