#include "compute/kernels/dnnl_common.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/cpu_features.h"
#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/simd/cpu_isa.h"
#include "compute/tensor_cast.h"
#include "compute/tuning_cache.h"
#include "graph/channel_block.h"

extern "C" void omp_set_num_threads(int);

namespace inferloop {
namespace dnnl_kernels {

namespace {
constexpr int kPrimitiveCacheCapacity = 64;
}  // namespace

bool Enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("INFERLOOP_DISABLE_DNNL");
    return v == nullptr || v[0] == '\0' || std::strcmp(v, "0") == 0;
  }();
  return enabled;
}

bool Bf16ComputeSupported() {
  if (!Enabled()) return false;
  const auto isa = static_cast<unsigned>(EffectiveIsa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;  // the ISA values are nested bit sets
}

dnnl::memory::data_type ComputeType(Precision p) {
  return p == Precision::kBf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

const char* PrecisionKey(Precision p) {
  switch (p) {
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "f16w";
    default: return "f32";
  }
}

namespace {

// INFERLOOP_ISA caps oneDNN's kernels as it caps inferloop's own, so that `INFERLOOP_ISA=avx512`
// runs what a CPU with AVX-512 VNNI and BF16 but no AMX runs (AMD EPYC), and `avx2` what an
// AVX2-only CPU runs; before, oneDNN kept choosing AMX for int8 and bf16 under either (measured:
// ResNet-50's QConvs as brgconv:avx512_core_amx_int8 with INFERLOOP_ISA=avx512). A cap the user
// gives oneDNN itself (ONEDNN_MAX_CPU_ISA) wins. Called before oneDNN's first use.
void CapOneDnnIsa() {
  const char* own = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (own != nullptr && own[0] != '\0') return;
  switch (IsaCapFromEnv()) {
    case IsaCap::kAvx512: dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16); break;
    case IsaCap::kAvx2: dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2); break;
    case IsaCap::kScalar: dnnl::set_max_cpu_isa(dnnl::cpu_isa::sse41); break;
    case IsaCap::kNone: break;
  }
}

}  // namespace

dnnl::cpu_isa EffectiveIsa() {
  Engine();  // the cap is set there, before oneDNN's first use (it reads its ISA once)
  return dnnl::get_effective_cpu_isa();
}

const dnnl::engine& Engine() {
  static const dnnl::engine engine = [] {
    CapOneDnnIsa();
    // Kernels keep their own primitives per shape (ShapeCache); oneDNN's global cache only
    // shares identical primitives between kernels (e.g. the layers of a transformer). Its
    // default of 1024 entries would keep the JIT code of every shape a dynamic-shape model ever
    // saw; a small cap keeps memory bounded when shapes vary.
    dnnl::set_primitive_cache_capacity(kPrimitiveCacheCapacity);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

struct ScratchSlot {
  std::unique_ptr<void, AlignedFree> data;
  size_t bytes = 0;
};

}  // namespace

void* ThreadScratch(int slot, size_t bytes) {
  thread_local ScratchSlot slots[5];
  ScratchSlot& s = slots[slot];
  if (bytes == 0) bytes = 64;
  if (s.bytes < bytes) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    s.data.reset(std::aligned_alloc(64, rounded));
    s.bytes = s.data ? rounded : 0;
  }
  return s.data.get();
}

ThreadScope::ThreadScope(const KernelContext& ctx, int64_t macs) : macs_(macs) {
  ThreadPool* pool = ctx.thread_pool();
  if (pool != nullptr && pool->num_threads() > 1 && !ThreadPool::InParallelRegion()) {
    // The clock is read only for the products the pool's contention decides.
    const bool worth_it = macs < 0 || (macs >= kParallelMinMacs &&
                                       (macs >= kContendedMinMacs || !pool->Contended(std::chrono::steady_clock::now())));
    if (worth_it) {
      reservation_.emplace(pool, pool->num_threads());
      threads_ = reservation_->threads();
      pool_ = pool;
    }
  }
  omp_set_num_threads(threads_);
}

void ThreadScope::NoteWall(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) const {
  if (pool_ != nullptr && LooksStalled(macs_, end - start)) pool_->NoteStall(end);
}

bool LooksStalled(int64_t macs, std::chrono::nanoseconds wall) {
  return wall >= std::chrono::microseconds(500) && macs >= 0 && macs < wall.count();
}

dnnl::memory::format_tag PlainTag(int rank) {
  static const tag tags[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef,
                             tag::abcdefg, tag::abcdefgh, tag::abcdefghi, tag::abcdefghij,
                             tag::abcdefghijk, tag::abcdefghijkl};
  return rank >= 1 && rank <= 12 ? tags[rank - 1] : tag::undef;
}

Shape BlockedShape(const Shape& logical, int64_t block) {
  Shape s{logical[0], (logical[1] + block - 1) / block};
  s.insert(s.end(), logical.begin() + 2, logical.end());
  s.push_back(block);
  return s;
}

dnnl::memory::format_tag BlockedTag(int logical_rank, int64_t block) {
  using tag = dnnl::memory::format_tag;
  if (block == 8) {
    switch (logical_rank) {
      case 3: return tag::aBc8b;
      case 4: return tag::aBcd8b;
      case 5: return tag::aBcde8b;
      default: return tag::undef;
    }
  }
  if (block != 16) return tag::undef;
  switch (logical_rank) {
    case 3: return tag::aBc16b;
    case 4: return tag::aBcd16b;
    case 5: return tag::aBcde16b;
    default: return tag::undef;
  }
}

bool IsBlockedStorage(const Shape& storage, int64_t channels, int64_t block) {
  if (block <= 0 || storage.size() < 3 || storage.back() != block) return false;
  return channels <= 0 || storage[1] == (channels + block - 1) / block;
}

Result<int64_t> BlockedLayoutFromInfo(const KernelInfo& info) {
  const int64_t block = NodeChannelBlock(info.node());
  if (block >= 0) return block;
  return info.Invalid("layout must be NCHW, NCHW8c or NCHW16c, got '" + info.GetString("layout", "") + "'");
}

int64_t PreferredChannelBlock() {
  // oneDNN's direct convolutions take the block of the vector they run on: nChw16c with AVX-512,
  // nChw8c with AVX2. A 16-blocked chain on an AVX2 CPU reordered every convolution's input and
  // output (ResNet-50 batch 8, 2 threads, INFERLOOP_ISA=avx2 on a Zen 4: 122 reorders, 44 of 358
  // ms, and a reference GlobalAveragePool; docs/DNNL_KERNELS.md).
  return simd::ActiveIsa() >= simd::Isa::kAvx512 ? 16 : 8;
}

void AppendActivation(const Activation& act, dnnl::post_ops& po) {
  using alg = dnnl::algorithm;
  switch (act.kind) {
    case ActivationKind::kNone: return;
    case ActivationKind::kRelu: po.append_eltwise(1.f, alg::eltwise_relu, 0.f, 0.f); return;
    case ActivationKind::kLeakyRelu: po.append_eltwise(1.f, alg::eltwise_relu, act.alpha, 0.f); return;
    case ActivationKind::kClip: po.append_eltwise(1.f, alg::eltwise_clip, act.alpha, act.beta); return;
    case ActivationKind::kSigmoid: po.append_eltwise(1.f, alg::eltwise_logistic, 0.f, 0.f); return;
    case ActivationKind::kTanh: po.append_eltwise(1.f, alg::eltwise_tanh, 0.f, 0.f); return;
    case ActivationKind::kHardSigmoid:
      po.append_eltwise(1.f, alg::eltwise_linear, act.alpha, act.beta);
      po.append_eltwise(1.f, alg::eltwise_clip, 0.f, 1.f);
      return;
    case ActivationKind::kHardSwish: po.append_eltwise(1.f, alg::eltwise_hardswish, 0.f, 0.f); return;
    case ActivationKind::kElu: po.append_eltwise(1.f, alg::eltwise_elu, act.alpha, 0.f); return;
    case ActivationKind::kGelu: po.append_eltwise(1.f, alg::eltwise_gelu_erf, 0.f, 0.f); return;
    case ActivationKind::kGeluTanh: po.append_eltwise(1.f, alg::eltwise_gelu_tanh, 0.f, 0.f); return;
  }
}

void RejectReference(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  if (impl.find("ref") != std::string::npos) throw dnnl::error(dnnl_unimplemented, "only a reference implementation");
}

dnnl::primitive_attr MakeAttr(const dnnl::post_ops& po) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(po);
  return attr;
}

namespace {
std::atomic<int64_t> g_executions{0};
std::atomic<int64_t> g_fast_path_executions{0};
}  // namespace

int64_t PrimitiveExecutions() { return g_executions.load(std::memory_order_relaxed); }
int64_t FastPathExecutions() { return g_fast_path_executions.load(std::memory_order_relaxed); }
void CountFastPathExecution() {
  g_executions.fetch_add(1, std::memory_order_relaxed);
  g_fast_path_executions.fetch_add(1, std::memory_order_relaxed);
}

Status Execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratch_md, ExecArgs& args, const char* what) {
  MemArg scratch;
  const size_t sbytes = scratch_md.get_size();
  if (sbytes > 0) {
    void* buf = ThreadScratch(3, sbytes);
    if (buf == nullptr) return Status::ResourceExhausted(std::string(what) + ": out of memory for a scratchpad");
    scratch = MemArg(scratch_md, buf);
    if (!scratch) return Status::Internal(std::string(what) + ": oneDNN could not wrap the scratchpad");
    args.Add(DNNL_ARG_SCRATCHPAD, scratch.get());
  }
  for (int i = 0; i < args.n; ++i)
    if (args.args[i].memory == nullptr) return Status::Internal(std::string(what) + ": oneDNN could not wrap an argument");
  g_executions.fetch_add(1, std::memory_order_relaxed);
  dnnl_stream_t stream = ThreadStream().get();
  dnnl_status_t st = dnnl_primitive_execute(prim.get(), stream, args.n, args.args);
  if (st == dnnl_success) st = dnnl_stream_wait(stream);
  if (st != dnnl_success) return Status::Internal(std::string(what) + ": oneDNN execution failed (status " + std::to_string(st) + ")");
  return Status::Ok();
}

MemArg::MemArg(const dnnl::memory::desc& md, const void* data) {
  if (dnnl_memory_create(&m_, &md.data, Engine().get(), const_cast<void*>(data)) != dnnl_success) m_ = nullptr;
}

void MemArg::Reset() {
  if (m_) dnnl_memory_destroy(m_);
  m_ = nullptr;
}

ReorderPrim MakeReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::reorder::primitive_desc pd(Engine(), from, Engine(), to, attr);
  return {dnnl::reorder(pd), pd.scratchpad_desc()};
}

Status RunReorder(const ReorderPrim& r, dnnl_memory_t from, dnnl_memory_t to) {
  ExecArgs args;
  args.Add(DNNL_ARG_FROM, from);
  args.Add(DNNL_ARG_TO, to);
  return Execute(r.prim, r.scratch, args, "reorder");
}

PackedWeights::PackedWeights(const Tensor* w) {
  if (w && w->dtype() == DataType::kFloat) {
    w_ = *w;
    shape_ = w->shape();
    defined_ = true;
  }
}

namespace {
// Plain weights wrapped as a oneDNN memory, kept alive with it.
struct HeldPlain {
  HeldPlain(Tensor t, const dnnl::memory::desc& md) : tensor(std::move(t)), mem(md, Engine(), const_cast<void*>(tensor.raw_data())) {}
  Tensor tensor;
  dnnl::memory mem;
};
}  // namespace

Tensor PackedWeights::PlainLocked() const {
  if (w_.defined() && w_.raw_data() != nullptr) return w_;
  if (half_source_) {  // widen the float16 copy, then back to the plain layout
    auto t = Tensor::Create(DataType::kFloat, shape_);
    if (!t.ok()) throw dnnl::error(dnnl_out_of_memory, "rebuilding plain weights");
    if (half_source_->md == half_source_user_md_) {
      half_source_->Expand(t->data<float>());
      return std::move(t).value();
    }
    dnnl::memory wide(half_source_->md, Engine());
    half_source_->Expand(static_cast<float*>(wide.get_data_handle()));
    MemArg to(half_source_user_md_, t->raw_data());
    if (!RunReorder(MakeReorder(half_source_->md, half_source_user_md_), wide.get(), to.get()).ok())
      throw dnnl::error(dnnl_runtime_error, "rebuilding plain weights failed");
    return std::move(t).value();
  }
  if (!source_) throw dnnl::error(dnnl_invalid_arguments, "no constant weights to pack");
  auto t = Tensor::Create(DataType::kFloat, shape_);
  if (!t.ok()) throw dnnl::error(dnnl_out_of_memory, "rebuilding plain weights");
  MemArg to(source_user_md_, t->raw_data());
  if (!RunReorder(MakeReorder(source_->get_desc(), source_user_md_), source_->get(), to.get()).ok())
    throw dnnl::error(dnnl_runtime_error, "rebuilding plain weights failed");
  return std::move(t).value();
}

std::shared_ptr<const dnnl::memory> PackedWeights::Get(const dnnl::memory::desc& user_md, const dnnl::memory::desc& md) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = packed_.begin(); it != packed_.end();) {
    auto sp = it->mem.lock();
    if (!sp) {
      it = packed_.erase(it);
      continue;
    }
    // Equal layouts of different plain layouts are different tensors (a square [K, N] kept as
    // it is and the [N, K] view of the same bytes transposed share one desc).
    if (sp->get_desc() == md && it->user_md == user_md) return sp;
    ++it;
  }
  if (source_ && source_->get_desc() == md && source_user_md_ == user_md) return source_;
  if (!defined_ || user_md.get_size() != static_cast<size_t>(ShapeElementCount(shape_)) * sizeof(float))
    throw dnnl::error(dnnl_invalid_arguments, "no constant weights to pack");
  Tensor plain = PlainLocked();
  std::shared_ptr<const dnnl::memory> result;
  if (md == user_md) {
    auto held = std::make_shared<HeldPlain>(plain, md);
    result = std::shared_ptr<const dnnl::memory>(held, &held->mem);
    packed_.push_back({result, user_md, plain});
  } else {
    auto packed = std::make_shared<dnnl::memory>(md, Engine());  // oneDNN allocates the buffer
    MemArg from(user_md, plain.raw_data());
    if (!RunReorder(MakeReorder(user_md, md), from.get(), packed->get()).ok())
      throw dnnl::error(dnnl_runtime_error, "packing constant weights failed");
    result = packed;
    packed_.push_back({result, user_md, Tensor()});
    // The first blocked packing becomes the source of later layouts (Winograd's own format
    // cannot be reordered back, so it never is).
    if (!source_ && md.data.format_kind == dnnl_blocked) {
      source_ = packed;
      source_user_md_ = user_md;
    }
  }
  if (source_) w_ = Tensor();  // plain weights now live on only where a plan uses them
  return result;
}

std::shared_ptr<const HalfWeights> PackedWeights::GetHalf(const dnnl::memory::desc& user_md,
                                                          const dnnl::memory::desc& md) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = half_packed_.begin(); it != half_packed_.end();) {
    auto sp = it->mem.lock();
    if (!sp) {
      it = half_packed_.erase(it);
      continue;
    }
    if (sp->md == md && it->user_md == user_md) return sp;  // as in Get
    ++it;
  }
  if (half_source_ && half_source_->md == md && half_source_user_md_ == user_md) return half_source_;
  if (!defined_ || user_md.get_size() != static_cast<size_t>(ShapeElementCount(shape_)) * sizeof(float))
    throw dnnl::error(dnnl_invalid_arguments, "no constant weights to pack");
  if (md.data.format_kind != dnnl_blocked || md.data.data_type != dnnl_f32)
    throw dnnl::error(dnnl_unimplemented, "float16 weights need a float32 blocked layout");
  Tensor plain = PlainLocked();
  auto half = std::make_shared<HalfWeights>();
  half->md = md;
  half->data.resize(md.get_size() / sizeof(float));
  auto narrow = [&](const float* f) {
    for (size_t i = 0; i < half->data.size(); ++i) half->data[i] = FloatToHalf(f[i]);
  };
  if (md == user_md) {
    narrow(plain.data<float>());
  } else {
    dnnl::memory packed(md, Engine());
    MemArg from(user_md, plain.raw_data());
    if (!RunReorder(MakeReorder(user_md, md), from.get(), packed.get()).ok())
      throw dnnl::error(dnnl_runtime_error, "packing constant weights failed");
    narrow(static_cast<const float*>(packed.get_data_handle()));
  }
  half_packed_.push_back({half, user_md});
  if (!half_source_) {
    half_source_ = half;
    half_source_user_md_ = user_md;
  }
  w_ = Tensor();  // the float16 copy is the source from now on
  return half;
}

void PackedWeights::Retain(const std::shared_ptr<const HalfWeights>& kept) const {
  if (!kept) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (kept == half_source_) return;
  for (const HalfPacked& p : half_packed_)
    if (p.mem.lock() == kept) {
      half_source_ = kept;
      half_source_user_md_ = p.user_md;
      return;
    }
}

void PackedWeights::ForEachBuffer(const std::function<void(const void*, size_t)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (w_.defined() && w_.raw_data() != nullptr) fn(w_.raw_data(), w_.nbytes());
  if (source_) fn(source_->get_data_handle(), source_->get_desc().get_size());
  for (const Packed& p : packed_)
    if (auto sp = p.mem.lock(); sp && sp != source_) fn(sp->get_data_handle(), sp->get_desc().get_size());
  if (half_source_) fn(half_source_->data.data(), half_source_->data.size() * sizeof(uint16_t));
  for (const HalfPacked& p : half_packed_)
    if (auto sp = p.mem.lock(); sp && sp != half_source_) fn(sp->data.data(), sp->data.size() * sizeof(uint16_t));
}

void PackedWeights::Retain(const std::shared_ptr<const dnnl::memory>& kept) const {
  if (!kept) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (kept == source_) return;
  for (const Packed& p : packed_) {
    if (p.mem.lock() != kept) continue;
    if (p.plain.defined()) {  // the plain weights themselves: the most compact source
      w_ = p.plain;
      source_.reset();
    } else if (kept->get_desc().data.format_kind == dnnl_blocked) {
      source_ = kept;
      source_user_md_ = p.user_md;
      w_ = Tensor();
    }
    return;  // a Winograd copy: the current source stays (it is what plain weights come back from)
  }
}

Result<Tensor> PackedWeights::Plain() const {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    w_ = PlainLocked();  // kept: the scalar path may need it again
    return w_;
  } catch (const dnnl::error& e) {
    return Status::Internal(std::string("constant weights: ") + e.what());
  }
}

Status WithPlainConstant(KernelContext& ctx, int index, const PackedWeights& w,
                         const std::function<Status(KernelContext&)>& run) {
  const Tensor* t = ctx.input(index);
  if (!w.defined() || !t || t->raw_data() != nullptr || t->size() == 0) return run(ctx);
  IL_ASSIGN_OR_RETURN(Tensor plain, w.Plain());
  const Value v(std::move(plain));
  InputOverrideContext c(ctx, index, &v);
  return run(c);
}

Result<Activation> ActivationFromInfo(const KernelInfo& info) {
  auto act = ParseActivation(info.GetString("activation", ""), info.GetFloats("activation_params"));
  if (!act.ok()) return info.Invalid(act.status().message());
  return act;
}

Result<size_t> PickFastest(const std::vector<std::function<Status()>>& runs, const std::vector<double>& handicap) {
  using Clock = std::chrono::steady_clock;
  if (runs.size() <= 1) return size_t{0};
  std::vector<double> best(runs.size(), 0);
  double slowest = 0;
  for (size_t i = 0; i < runs.size(); ++i) {  // warm-up (first-touch, JIT caches)
    const auto t0 = Clock::now();
    IL_RETURN_IF_ERROR(runs[i]());
    best[i] = std::chrono::duration<double>(Clock::now() - t0).count();
    slowest = std::max(slowest, best[i]);
  }
  // About 60 ms of timed calls per candidate, 1 to 7 rounds (fewer made BERT's matmul picks
  // flip between runs); candidates whose warm-up took more than 4x the fastest one's are out
  // already (first-call overheads are well below that).
  const double fastest = *std::min_element(best.begin(), best.end());
  std::vector<bool> timed(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) timed[i] = best[i] <= 4 * fastest;
  const int rounds = std::clamp(static_cast<int>(0.06 / std::max(slowest, 1e-6)), 1, 7);
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < runs.size(); ++i) {
      if (!timed[i]) continue;
      const auto t0 = Clock::now();
      IL_RETURN_IF_ERROR(runs[i]());
      const double t = std::chrono::duration<double>(Clock::now() - t0).count();
      best[i] = r == 0 ? t : std::min(best[i], t);
    }
  if (handicap.size() == runs.size())
    for (size_t i = 0; i < runs.size(); ++i) best[i] *= handicap[i];
  size_t pick = 0;
  for (size_t i = 1; i < runs.size(); ++i)
    if (timed[i] && (!timed[pick] || best[i] < best[pick])) pick = i;
  return pick;
}

std::string ShapeKey(const Shape& s) {
  std::string k;
  for (size_t i = 0; i < s.size(); ++i) k += (i ? "x" : "") + std::to_string(s[i]);
  return k.empty() ? "scalar" : k;
}

void FloatEpilogue(float* y, int64_t n, const float* residual, const float* row_bias, int64_t row_len,
                   const Activation& act) {
  if (residual)
    for (int64_t i = 0; i < n; ++i) y[i] += residual[i];
  if (row_bias && row_len > 0)
    for (int64_t i = 0; i < n; ++i) y[i] += row_bias[i % row_len];
  ApplyActivation(act, y, n);
}

Status RunScalarFused(KernelContext& ctx, const Kernel& scalar, int residual_input, int bias_input, const Activation& act) {
  CapturingContext cc(ctx);
  IL_RETURN_IF_ERROR(scalar.Compute(cc));
  if (!cc.captured().is_tensor()) return ctx.Invalid("the unfused operator produced no tensor");
  const Tensor& y0 = cc.captured().tensor();
  const Tensor* res = residual_input >= 0 ? ctx.input(residual_input) : nullptr;
  const Tensor* bias = bias_input >= 0 ? ctx.input(bias_input) : nullptr;
  if (res && res->shape() != y0.shape())
    return ctx.Invalid("Z must have the output's shape " + ShapeToString(y0.shape()) + ", got " + ShapeToString(res->shape()));
  const int64_t row = y0.rank() > 0 ? y0.dim(y0.rank() - 1) : 1;
  if (bias && (bias->rank() != 1 || bias->dim(0) != row))
    return ctx.Invalid("bias must be 1-D of the output's last dimension " + std::to_string(row) + ", got " +
                       ShapeToString(bias->shape()));
  for (const Tensor* t : {res, bias})
    if (t && t->dtype() != y0.dtype())
      return ctx.Invalid(std::string("fused inputs must have the output's dtype ") + DataTypeName(y0.dtype()) + ", got " +
                         DataTypeName(t->dtype()));
  if (y0.dtype() != DataType::kFloat && y0.dtype() != DataType::kDouble && y0.dtype() != DataType::kFloat16 &&
      y0.dtype() != DataType::kBFloat16)
    return UnsupportedType("fused activation epilogue", y0.dtype());
  IL_ASSIGN_OR_RETURN(Tensor yf, y0.dtype() == DataType::kFloat ? Result<Tensor>(y0) : CastTensor(y0, DataType::kFloat));
  Tensor rf, bf;
  if (res) { IL_ASSIGN_OR_RETURN(rf, CastTensor(*res, DataType::kFloat)); }
  if (bias) { IL_ASSIGN_OR_RETURN(bf, CastTensor(*bias, DataType::kFloat)); }
  FloatEpilogue(yf.data<float>(), yf.size(), res ? rf.data<float>() : nullptr, bias ? bf.data<float>() : nullptr, row, act);
  if (y0.dtype() == DataType::kFloat) {
    ctx.SetOutput(0, std::move(yf));
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor y, CastTensor(yf, y0.dtype()));
  ctx.SetOutput(0, std::move(y));
  return Status::Ok();
}

bool AllFloatOrAbsent(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t && t->dtype() != DataType::kFloat) return false;
  return true;
}

PlanKey WeightedPlanKey(std::initializer_list<const Tensor*> inputs, int threads, bool weights_const) {
  PlanKey key;
  for (const Tensor* t : inputs) key.AddOptional(t);
  key.Add(threads);
  key.Add(weights_const);
  return key;
}

}  // namespace dnnl_kernels
}  // namespace inferloop
