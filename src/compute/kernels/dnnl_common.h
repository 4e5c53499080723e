// Shared plumbing of the oneDNN-backed float32 kernels (dnnl_*.cc): the CPU engine, per-thread
// streams and scratch buffers, the OpenMP thread count of a call, fused-activation post-ops and
// the small per-kernel cache of primitives keyed by input shape. Internal to compute/kernels.
//
// Threads: oneDNN (Debian's build) runs on libgomp, like ThreadPool. A call claims threads
// from the context's pool (ThreadScope) and sets the calling thread's OpenMP thread count before
// it creates or executes a primitive; primitives are cached per thread count because oneDNN
// fixes its work split when a primitive is created.
//
// Scratchpads are user-managed (one growable buffer per calling thread), so one primitive may run
// from several threads at once: the library-managed global scratchpad would bind a primitive to
// the thread that created it.
//
// Steady state (a shape seen before): kernels find their plan by a PlanKey built without heap
// allocation and run it through oneDNN's C API (MemArg, ExecArgs), so the only heap allocations
// of a call are oneDNN's own bookkeeping inside dnnl_primitive_execute / dnnl_memory_create.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "compute/activation.h"
#include "compute/kernel.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/dnnl_kernels.h"

namespace inferloop {
namespace dnnl_kernels {

// Short names for oneDNN's memory types, used throughout the dnnl_*.cc kernels.
using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// False when the environment sets INFERLOOP_DISABLE_DNNL to a non-empty value other than "0":
// every oneDNN kernel then runs the scalar reference path (for A/B checks). Read once.
bool Enabled();

const dnnl::engine& Engine();
// The instruction set oneDNN's kernels use: the CPU's, lowered by ONEDNN_MAX_CPU_ISA or else by
// INFERLOOP_ISA (avx512: no AMX; avx2; scalar: SSE4.1). Ask here, not oneDNN directly: the cap
// must be set before oneDNN first reads its ISA.
dnnl::cpu_isa EffectiveIsa();
// The calling thread's stream (streams are cheap; one per thread avoids sharing questions).
dnnl::stream& ThreadStream();

// Counts one run of a kernel's own fast path in PrimitiveExecutions (dnnl_kernels.h).
void CountFastPathExecution();

// Per calling thread, a 64-byte-aligned buffer of at least `bytes`, one per slot (0..4); grows
// and is kept. Valid until the same thread asks for the same slot again.
void* ThreadScratch(int slot, size_t bytes);

// Claims the pool's threads for one oneDNN call and sets the calling thread's OpenMP thread
// count to threads(). One thread when the context has no pool, the call already runs inside
// a parallel chunk, or the call's `macs` (multiply-adds; -1: not known) are below
// kParallelMinMacs: waking a second thread costs more than it saves on so little work, and on a
// machine shared with busy processes much more (the woken thread waits for a core: DLRM's
// 53k-MAC Gemm at batch 8 took 0.2 ms at 2 threads next to two busy loops, 0.01 ms on one).
//
// While the pool is Contended (ThreadPool::NoteStall), calls under kContendedMinMacs run on one
// thread: the wait for a core costs milliseconds, so only work of that size is worth a worker.
// Run() times the oneDNN work of a parallel scope with known `macs` and reports a stall to the
// pool. AMD EPYC Zen 3 (2 CPUs, AVX2), the zoo's DLRM at batch 8, 2 threads, next to two busy
// loops (bench/busy_neighbours.py): p50 2.2 ms in two of three rounds before (its two Gemms of
// 1.05M multiply-adds waited for a core every run), against ONNX Runtime's 0.15.
class ThreadScope {
 public:
  // About 10-20 us of one core's work.
  static constexpr int64_t kParallelMinMacs = int64_t{1} << 20;
  // About 2 ms of one core's work: the wait for a core on a contended machine.
  static constexpr int64_t kContendedMinMacs = int64_t{1} << 26;
  explicit ThreadScope(const KernelContext& ctx, int64_t macs = -1);
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
  int threads() const { return threads_; }
  // Runs fn() (a Status-returning call of the oneDNN work this scope's threads do) and returns
  // its Status; when it ran on several threads and LooksStalled, tells the pool.
  template <typename Fn>
  Status Run(Fn&& fn) const {
    if (threads_ <= 1 || macs_ <= 0) return fn();
    const auto start = std::chrono::steady_clock::now();
    Status st = fn();
    NoteWall(start, std::chrono::steady_clock::now());
    return st;
  }
  // ParallelFor on the claimed threads (inline when one), for a kernel's own loops.
  template <typename Fn>
  void ParallelFor(int64_t n, int64_t grain, Fn&& fn) const {
    if (reservation_) reservation_->ParallelFor(n, grain, std::forward<Fn>(fn));
    else if (n > 0) fn(int64_t{0}, n);
  }

 private:
  void NoteWall(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) const;
  std::optional<ThreadPool::Reservation> reservation_;
  ThreadPool* pool_ = nullptr;
  int64_t macs_ = -1;
  int threads_ = 1;
};

// Whether `macs` multiply-adds that took `wall` on several threads waited for a core rather
// than computed: at least 500 us, and under one multiply-add per nanosecond (a float matrix-vector
// product streaming its weights at 4 GB/s does more; DLRM's 1.05M-MAC Gemm took 2.2 ms when its
// worker waited, 0.04 ms when not).
bool LooksStalled(int64_t macs, std::chrono::nanoseconds wall);

inline dnnl::memory::dims Dims(const Shape& s) { return dnnl::memory::dims(s.begin(), s.end()); }

// The plain row-major (dense, no padding) format of a rank-`rank` tensor: a, ab, abc, ...
dnnl::memory::format_tag PlainTag(int rank);

// A oneDNN memory object over caller-owned data, made and destroyed through the C API (the
// C++ dnnl::memory would add a shared_ptr control block per call). Const data is only read.
class MemArg {
 public:
  MemArg() = default;
  MemArg(const dnnl::memory::desc& md, const void* data);
  ~MemArg() { Reset(); }
  MemArg(MemArg&& o) noexcept : m_(o.m_) { o.m_ = nullptr; }
  MemArg& operator=(MemArg&& o) noexcept {
    if (this != &o) {
      Reset();
      m_ = o.m_;
      o.m_ = nullptr;
    }
    return *this;
  }
  MemArg(const MemArg&) = delete;
  MemArg& operator=(const MemArg&) = delete;
  dnnl_memory_t get() const { return m_; }
  explicit operator bool() const { return m_ != nullptr; }

 private:
  void Reset();
  dnnl_memory_t m_ = nullptr;
};

// The arguments of one primitive execution, on the stack.
struct ExecArgs {
  dnnl_exec_arg_t args[12];
  int n = 0;
  void Add(int arg, dnnl_memory_t m) { args[n++] = {arg, m}; }
};

// The channel-blocked layouts NCHW16c and NCHW8c (graph/channel_block.h, docs/DNNL_KERNELS.md):
// a tensor of logical shape [N, C, S...] stored as [N, ceil(C/B), S..., B], element (n, c, s...)
// at [n, c / B, s..., c % B], channels past C zero; B = `block`, 8 or 16.
// The storage shape of logical shape `logical` (rank >= 2).
Shape BlockedShape(const Shape& logical, int64_t block);
// oneDNN's tag for it: aBc16b, aBcd16b, aBcde16b (aBc8b, ...) for logical rank 3, 4, 5 (undef
// otherwise).
dnnl::memory::format_tag BlockedTag(int logical_rank, int64_t block);
// True when `storage` can be the blocked storage of a logical tensor with `channels` channels
// (channels <= 0: any): rank >= 3, last dim `block`, dim 1 = ceil(channels / block).
bool IsBlockedStorage(const Shape& storage, int64_t channels, int64_t block);
// The node's channel block (graph/channel_block.h NodeChannelBlock: 0 plain, 8 or 16; the
// reorders NCHW16c without the attribute); an error for any other layout.
Result<int64_t> BlockedLayoutFromInfo(const KernelInfo& info);

// Appends eltwise post-ops computing `act` on the destination. Every ActivationKind maps
// (HardSigmoid = linear then clip to [0, 1]).
void AppendActivation(const Activation& act, dnnl::post_ops& po);

// Throws dnnl::error when `pd` is one of oneDNN's reference implementations ("ref:any" and
// the like): they are far slower than the scalar kernels, so they never count as a candidate.
void RejectReference(const dnnl::primitive_desc_base& pd);

// An attribute with user scratchpad mode and the given post-ops.
dnnl::primitive_attr MakeAttr(const dnnl::post_ops& po);

// Runs `prim` with `args` plus a scratchpad of `scratch_md` from the thread's scratch slot 3
// on the thread's stream, and waits. oneDNN failures become Status errors naming `what`.
Status Execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratch_md, ExecArgs& args, const char* what);

// A reorder primitive (layout conversion) with its scratchpad.
struct ReorderPrim {
  dnnl::reorder prim;
  dnnl::memory::desc scratch;
};
// Throws dnnl::error when oneDNN cannot convert between the layouts.
ReorderPrim MakeReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
Status RunReorder(const ReorderPrim& r, dnnl_memory_t from, dnnl_memory_t to);

// The data type float32 Conv/MatMul/Gemm primitives take their source and weights in under
// `p` (KernelInfo::float_precision): bf16 for kBf16, else f32. Accumulation and destination
// stay f32.
dnnl::memory::data_type ComputeType(Precision p);
// "f32" / "bf16" / "f16w": the precision's part of tuning-cache keys.
const char* PrecisionKey(Precision p);

// Constant weights kept as float16 in the element order of a primitive's float32 layout `md`
// (Precision::kFp16: half the memory). oneDNN 2.6 computes nothing with f16 weights on this
// class of CPU (no f32-src/f16-weight or f16 convolution/matmul/inner-product implementation;
// probed on AVX512_FP16 + AMX), so each call widens them into scratch (Expand) and runs the
// float32 primitive.
struct HalfWeights {
  dnnl::memory::desc md;   // the float32 layout (format_kind blocked: plain or blocked)
  std::vector<uint16_t> data;  // md.get_size() / 4 halves
  // Writes the float32 values (md.get_size() bytes) to `out`, on the OpenMP threads the
  // caller's ThreadScope set when large.
  void Expand(float* out) const;
};

// A constant weight tensor (an initializer) and its copies reordered into the layouts that
// primitives asked for. A copy lives while some plan holds it, and plans wanting the same
// layout of the same plain layout share one (a square [K, N] and its [N, K] transposed view
// may ask for equal layouts: different copies). Thread-safe.
//
// Storage (the kernel's Precision): kFp32 and kBf16 copies are dnnl::memory (for kBf16 the
// primitive's layout `md` has data type bf16, the reorder from the plain float32 weights
// rounds); kFp16 copies are HalfWeights (GetHalf).
class PackedWeights {
 public:
  // `w` may be undefined (no constant weights); Matches is then always false.
  explicit PackedWeights(const Tensor* w);
  bool defined() const { return defined_; }
  // True when the run-time input `t` is this constant. The constant is a non-overridable
  // initializer, so the input always is it; the session may pass it without data once
  // the kernel keeps its own copy (Kernel::KeepsOwnCopyOfConstant), so dtype and shape decide.
  bool Matches(const Tensor& t) const { return defined_ && t.dtype() == DataType::kFloat && t.shape() == shape_; }
  // The weights (plain float32 layout `user_md`) in layout `md` (md == user_md: the plain
  // weights themselves; md may have data type bf16). After the first packing into a blocked
  // layout, the plain original is dropped (that frees it when the session no longer holds it
  // either); later layouts are reordered from that packed copy. Throws dnnl::error on failure.
  std::shared_ptr<const dnnl::memory> Get(const dnnl::memory::desc& user_md, const dnnl::memory::desc& md) const;
  // The weights in float32 layout `md` (format_kind blocked), stored as float16. After the
  // first one the plain float32 original is dropped; later layouts are made from that copy
  // (widened). Throws dnnl::error on failure.
  std::shared_ptr<const HalfWeights> GetHalf(const dnnl::memory::desc& user_md, const dnnl::memory::desc& md) const;
  // The plain weights as a tensor, rebuilt from the packed copy if the original was dropped
  // (for the scalar fallback; rounded to bf16/fp16 when that is what is kept).
  Result<Tensor> Plain() const;
  // Called with the weights a chosen plan keeps (from Get / GetHalf): they become what later
  // layouts are made from, so the copies autotuning made for the losing candidates are all freed.
  void Retain(const std::shared_ptr<const dnnl::memory>& kept) const;
  void Retain(const std::shared_ptr<const HalfWeights>& kept) const;
  // Calls fn(address, bytes) for every copy held now (the plain original while kept).
  void ForEachBuffer(const std::function<void(const void*, size_t)>& fn) const;

 private:
  Tensor PlainLocked() const;  // throws dnnl::error

  bool defined_ = false;
  Shape shape_;
  mutable std::mutex mu_;
  mutable Tensor w_;                                      // the plain weights while kept
  mutable std::shared_ptr<const dnnl::memory> source_;    // first blocked packing (kept)
  mutable dnnl::memory::desc source_user_md_;             // the plain layout source_ came from
  mutable std::shared_ptr<const HalfWeights> half_source_;  // first float16 copy (kept)
  mutable dnnl::memory::desc half_source_user_md_;
  struct Packed {
    std::weak_ptr<const dnnl::memory> mem;
    dnnl::memory::desc user_md;  // the plain layout it was made from
    Tensor plain;                // set when mem wraps plain weights (no copy)
  };
  mutable std::vector<Packed> packed_;
  struct HalfPacked {
    std::weak_ptr<const HalfWeights> mem;
    dnnl::memory::desc user_md;
  };
  mutable std::vector<HalfPacked> half_packed_;
};

// A KernelContext that forwards every call to `inner`; wrappers override what they change.
class ForwardingContext : public KernelContext {
 public:
  explicit ForwardingContext(KernelContext& inner) : inner_(inner) {}
  int num_inputs() const override { return inner_.num_inputs(); }
  const Value* input_value(int i) const override { return inner_.input_value(i); }
  int num_outputs() const override { return inner_.num_outputs(); }
  bool output_wanted(int i) const override { return inner_.output_wanted(i); }
  void SetOutput(int i, Value v) override { inner_.SetOutput(i, std::move(v)); }
  Result<Tensor> Allocate(DataType dtype, Shape shape) override { return inner_.Allocate(dtype, std::move(shape)); }
  Result<Tensor> AllocateUninit(DataType dtype, Shape shape) override { return inner_.AllocateUninit(dtype, std::move(shape)); }
  ThreadPool* thread_pool() const override { return inner_.thread_pool(); }
  void* Scratch(size_t bytes) override { return inner_.Scratch(bytes); }
  Result<std::vector<Value>> RunSubgraph(const Subgraph& g, std::vector<Value> inputs) override {
    return inner_.RunSubgraph(g, std::move(inputs));
  }
  const Node& node() const override { return inner_.node(); }

 protected:
  KernelContext& inner_;
};

// A KernelContext that passes `value` as input `index` and forwards everything else to `inner`
// (to hand a scalar fallback kernel the plain weights the session no longer holds).
class InputOverrideContext : public ForwardingContext {
 public:
  InputOverrideContext(KernelContext& inner, int index, const Value* value) : ForwardingContext(inner), index_(index), value_(value) {}
  const Value* input_value(int i) const override { return i == index_ ? value_ : inner_.input_value(i); }

 private:
  int index_;
  const Value* value_;
};

// Runs `run(ctx)`, first swapping in the plain weights from `w` for input `index` when the
// session passes that constant without data.
Status WithPlainConstant(KernelContext& ctx, int index, const PackedWeights& w,
                         const std::function<Status(KernelContext&)>& run);

// Reads the node's `activation` / `activation_params` attributes (absent = none).
Result<Activation> ActivationFromInfo(const KernelInfo& info);

// Index of the fastest of `runs` (callables returning Status, each one candidate
// implementation of the same call): one warm-up call each, then rounds that call every
// candidate once in turn, keeping each one's fastest time (interleaving and the minimum make
// the pick robust to a noisy machine). Slow calls get fewer rounds, so tuning stays cheap.
// Errors pass through.
// `handicap` (empty or one per run): a candidate's time is multiplied by it before comparing,
// so that one costing more memory wins only when it is that much faster.
Result<size_t> PickFastest(const std::vector<std::function<Status()>>& runs, const std::vector<double>& handicap = {});

// "1x64x56x56": a shape in tuning-cache keys.
std::string ShapeKey(const Shape& s);

// Adds `residual` (same element count, or nullptr) and then a bias row `row_bias` (length =
// last dim of y, or nullptr) to float32 `y`, then applies `act` in place. The fallback epilogue.
void FloatEpilogue(float* y, int64_t n, const float* residual, const float* row_bias, int64_t row_len,
                   const Activation& act);

// Runs the unfused `scalar` kernel, then (in float32, whatever the dtype) adds input
// `residual_input` (>= 0: a tensor of Y's shape) or the row bias `bias_input` (>= 0: 1-D of Y's
// last dim) and applies `act`; sets output 0 in Y's dtype. The fused ops' path for dtypes other
// than float32 and for cases oneDNN refuses.
Status RunScalarFused(KernelContext& ctx, const Kernel& scalar, int residual_input, int bias_input, const Activation& act);

// A cache key of up to kCapacity integers (shapes, flags, the thread count), built without heap
// allocation. A key that would hold more is marked overflowed and never matches (callers then
// build their plan every call: only absurd ranks get there).
class PlanKey {
 public:
  static constexpr int kCapacity = 48;
  void Add(int64_t v) {
    if (n_ == kCapacity) {
      overflow_ = true;
      return;
    }
    v_[n_++] = v;
  }
  void AddShape(const Shape& s) {
    Add(static_cast<int64_t>(s.size()));
    for (int64_t d : s) Add(d);
  }
  // A tensor that may be absent: its shape, or a marker.
  void AddOptional(const Tensor* t) {
    if (t) AddShape(t->shape());
    else Add(-1);
  }
  bool usable() const { return !overflow_; }
  bool operator==(const PlanKey& o) const {
    if (overflow_ || o.overflow_ || n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
      if (v_[i] != o.v_[i]) return false;
    return true;
  }

 private:
  int64_t v_[kCapacity];
  int n_ = 0;
  bool overflow_ = false;
};

// True when every tensor of `ts` is absent (nullptr) or float32: what the float32 oneDNN kernels
// take; they hand anything else to their scalar kernel.
bool AllFloatOrAbsent(std::initializer_list<const Tensor*> ts);

// The plan key of a weighted float32 primitive (Conv, ConvTranspose, MatMul, Gemm): the shapes of
// `inputs` in order (an absent one marked), the call's thread count, and whether the weights are
// the kernel's constant ones (then packed once) or a run-time input.
PlanKey WeightedPlanKey(std::initializer_list<const Tensor*> inputs, int threads, bool weights_const);

// Least-recently-used map from a PlanKey to immutable shared values, holding at most
// `capacity` entries (a kernel sees few input shapes; each entry holds a primitive). Thread-safe;
// a value handed out stays alive while its caller holds it, even when evicted. Find does not
// allocate.
template <typename V>
class ShapeCache {
 public:
  explicit ShapeCache(size_t capacity = 8) : capacity_(capacity) { entries_.reserve(capacity); }

  std::shared_ptr<const V> Find(const PlanKey& key) const {
    if (!key.usable()) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : entries_)
      if (e.key == key) {
        e.last_use = ++clock_;
        return e.value;
      }
    return nullptr;
  }
  // Stores `value` under `key` unless another thread stored one first; returns the stored one.
  std::shared_ptr<const V> Insert(const PlanKey& key, std::shared_ptr<const V> value) const {
    if (!key.usable()) return value;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : entries_)
      if (e.key == key) {
        e.last_use = ++clock_;
        return e.value;
      }
    if (entries_.size() >= capacity_) {
      size_t oldest = 0;
      for (size_t i = 1; i < entries_.size(); ++i)
        if (entries_[i].last_use < entries_[oldest].last_use) oldest = i;
      entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));
    }
    entries_.push_back({key, value, ++clock_});
    return value;
  }

 private:
  struct Entry {
    PlanKey key;
    std::shared_ptr<const V> value;
    uint64_t last_use;
  };
  size_t capacity_;
  mutable std::mutex mu_;
  mutable std::vector<Entry> entries_;
  mutable uint64_t clock_ = 0;
};

// Captures what a wrapped kernel writes to output 0 while forwarding everything else to the
// real context (runs a scalar kernel whose result the caller post-processes).
class CapturingContext : public ForwardingContext {
 public:
  explicit CapturingContext(KernelContext& inner) : ForwardingContext(inner) {}
  void SetOutput(int i, Value v) override {
    if (i == 0) captured_ = std::move(v);
    else inner_.SetOutput(i, std::move(v));
  }
  Value& captured() { return captured_; }

 private:
  Value captured_;
};

}  // namespace dnnl_kernels
}  // namespace inferloop
