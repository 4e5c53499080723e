// Registration of the attention kernel family: Attention (ai.onnx 23+) and RotaryEmbedding (23+).
//
// Both compute in float (double when the inputs are double) and cast the results back to the
// input type, so float16/bfloat16 results are rounded once (this is what the ONNX reference
// does as well: it promotes to float64 internally).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/float_compute.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

using float_compute::AsCompute;
using float_compute::ComputeDtype;
using float_compute::Dot;

// Attention's computation order. The ONNX 1.23 errata (onnx/onnx#7867, #7913) moved softcap
// before the mask addition and swapped qk_matmul_output_mode 1 and 2 accordingly, without an
// opset bump; ONNX Runtime follows the corrected order. ONNX <= 1.20 (whose backend test data
// is in the conformance suite) added the mask first, then softcapped:
//   corrected: qk -> [mode 0] -> softcap -> [mode 1] -> + bias -> [mode 2] -> softmax -> [mode 3]
//   legacy:    qk -> [mode 0] -> + bias -> [mode 1] -> softcap -> [mode 2] -> softmax -> [mode 3]
// The legacy order lets softcap map a -inf mask to -softcap, leaking probability into masked
// positions, which is why it was corrected. Flip this to reproduce ONNX 1.20 exactly.
constexpr bool kLegacySoftcapAfterMask = false;

bool IsAttentionFloat(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kDouble;
}

// A computed C tensor returned in `dtype`.
Result<Tensor> FromCompute(Tensor t, DataType dtype) {
  if (t.dtype() == dtype) return t;
  return CastTensor(t, dtype);
}

// ---------------------------------------------------------------------------------------------
// Attention

struct AttentionAttrs {
  int64_t opset = 23;
  bool is_causal = false;
  int64_t q_num_heads = 0;   // 0: not given
  int64_t kv_num_heads = 0;  // 0: not given
  int mode = 0;              // qk_matmul_output_mode
  bool has_scale = false;
  double scale = 0;
  double softcap = 0;
  bool softmax_double = false;
  int64_t left_window = -1;  // opset 25
  int64_t right_window = -1;
};

// Element strides of a (batch, heads, seq, head_size) view of a 4-D tensor or of a 3-D
// (batch, seq, heads * head_size) tensor; head_size is contiguous in both.
struct HeadStrides {
  int64_t b, h, s;
};
HeadStrides StridesFor(bool three_d, int64_t heads, int64_t seq, int64_t head_size) {
  if (three_d) return {seq * heads * head_size, head_size, heads * head_size};
  return {heads * seq * head_size, seq * head_size, head_size};
}

// Copies `src` viewed as (B, H, S, D) via `st` into rows [t0, t0+S) of dst (B, H, T, D).
template <typename C>
void CopyHeads(const C* src, HeadStrides st, int64_t B, int64_t H, int64_t S, int64_t D, C* dst, int64_t T, int64_t t0) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        std::memcpy(dst + ((b * H + h) * T + t0 + s) * D, src + b * st.b + h * st.h + s * st.s, sizeof(C) * D);
}

// Attention's dimensions: Q (B, Hq, Sq, D), K (B, Hkv, Skv, D), V (B, Hkv, Skv, Dv), given as 4-D
// tensors or as 3-D (batch, seq, heads * head_size) ones; P cached keys before them, T = P + Skv.
struct AttentionDims {
  bool three_d = false;
  int64_t B = 0, Hq = 0, Hkv = 0, Sq = 0, Skv = 0, D = 0, Dv = 0;
  int64_t group = 1;  // Hq / Hkv: query heads per key/value head
  int64_t P = 0, T = 0;
};

// attn_mask right-aligned to (B, Hq, Sq, T): row (b, h, i) starts at b * sb + h * sh + i * sq
// and has `len` <= T entries (the keys past it are masked out). Either bools or values are set.
template <typename C>
struct AttentionMask {
  bool present = false;
  Tensor converted;  // holds `values`
  const uint8_t* bools = nullptr;
  const C* values = nullptr;
  int64_t len = 0, sb = 0, sh = 0, sq = 0;
};

// Which keys query row i of batch b may attend to, from everything but the mask.
struct KeyWindow {
  bool is_causal = false;
  int64_t left = -1, right = -1;  // -1: unbounded
  int64_t offset = 0;             // keys before the query block (the frontier is bottom-right aligned)
  int64_t valid = 0;              // keys [valid, T) are padding
};

// Additive bias of one query row: the mask's value (0 for a bool mask) where key j may be
// attended, -inf (selected, not added) where not. Returns whether every key is masked.
template <typename C>
bool FillBias(const AttentionMask<C>& m, int64_t mrow, const KeyWindow& w, int64_t i, int64_t T, C* bias) {
  const C kNegInf = -std::numeric_limits<C>::infinity();
  bool all_masked = true;
  for (int64_t j = 0; j < T; ++j) {
    C v = 0;
    bool allowed = true;
    if (m.present) {
      if (j >= m.len) allowed = false;
      else if (m.bools) allowed = m.bools[mrow + j] != 0;
      else v = m.values[mrow + j];
    }
    if (w.is_causal && j > i + w.offset) allowed = false;
    if (w.left >= 0 && (i + w.offset) - j > w.left) allowed = false;
    if (w.right >= 0 && j - (i + w.offset) > w.right) allowed = false;
    if (j >= w.valid) allowed = false;
    bias[j] = allowed ? v : kNegInf;
    if (bias[j] != kNegInf) all_masked = false;
  }
  return all_masked;
}

// Softmax of `score` into `prob`; a row with no attendable key gives zero probabilities.
template <typename C, typename S>
void SoftmaxRow(const C* score, bool all_masked, int64_t T, S* prob) {
  S mx = -std::numeric_limits<S>::infinity();
  for (int64_t j = 0; j < T; ++j) mx = std::max(mx, static_cast<S>(score[j]));
  if (all_masked || mx == -std::numeric_limits<S>::infinity()) {
    std::fill(prob, prob + T, S(0));
    return;
  }
  S sum = 0;
  for (int64_t j = 0; j < T; ++j) sum += (prob[j] = std::exp(static_cast<S>(score[j]) - mx));
  for (int64_t j = 0; j < T; ++j) prob[j] /= sum;
}

// out[d] = sum over j of prob[j] * v[j * Dv + d], skipping zero probabilities.
template <typename C, typename S>
void WeightedValues(const S* prob, const C* v, int64_t T, int64_t Dv, C* acc, C* out) {
  std::fill(acc, acc + Dv, C(0));
  for (int64_t j = 0; j < T; ++j) {
    const C p = static_cast<C>(prob[j]);
    if (p == 0) continue;
    const C* vrow = v + j * Dv;
    for (int64_t d = 0; d < Dv; ++d) acc[d] += p * vrow[d];
  }
  std::copy(acc, acc + Dv, out);
}

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(AttentionAttrs a) : a_(a) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* q, ctx.RequireInput(0));
    if (q->dtype() == DataType::kDouble) return Run<double, double>(ctx);
    if (a_.softmax_double) return Run<float, double>(ctx);
    return Run<float, float>(ctx);
  }

 private:
  // Scratch space of one query row.
  template <typename C, typename S>
  struct RowBuffers {
    std::vector<C> bias, score, acc;
    std::vector<S> prob;
  };

  template <typename C, typename S>
  Status Run(KernelContext& ctx) const;
  Status CheckQkv(KernelContext& ctx, const Tensor& Q, const Tensor& K, const Tensor& V, AttentionDims* d) const;
  Status CheckHeads3d(KernelContext& ctx, const Tensor& Q, const Tensor& K, const Tensor& V, AttentionDims* d) const;
  Status CheckHeads4d(KernelContext& ctx, const Tensor& Q, const Tensor& K, const Tensor& V, AttentionDims* d) const;
  static Status CheckCache(KernelContext& ctx, const Tensor& K, const Tensor& V, const Tensor* past_k,
                           const Tensor* past_v, AttentionDims* d);
  Result<std::vector<int64_t>> NonpadLengths(KernelContext& ctx, const Tensor* nonpad, bool has_cache,
                                             const AttentionDims& d) const;
  template <typename C>
  static Status BroadcastMask(KernelContext& ctx, const Tensor* mask, const AttentionDims& d, AttentionMask<C>* m);
  template <typename C>
  static Status ConcatCache(KernelContext& ctx, const Tensor& K, const Tensor& V, const Tensor* past_k,
                            const Tensor* past_v, const AttentionDims& d, Tensor* kall, Tensor* vall);
  template <typename C>
  void ScoreRow(const C* qrow, const C* kh, const C* bias, int64_t T, int64_t D, C scale, C* score, C* qkrow) const;
  template <typename C, typename S>
  void AttendRow(const C* qrow, const C* kh, const C* vh, const AttentionMask<C>& m, int64_t mrow, const KeyWindow& w,
                 int64_t i, const AttentionDims& d, RowBuffers<C, S>& buf, C* yrow, C* qkrow) const;

  AttentionAttrs a_;
};

Status AttentionKernel::CheckQkv(KernelContext& ctx, const Tensor& Q, const Tensor& K, const Tensor& V,
                                 AttentionDims* d) const {
  if (!IsAttentionFloat(Q.dtype()) || !IsAttentionFloat(V.dtype()))
    return ctx.Invalid(std::string("Q, K, V must be float16, bfloat16, float or double, got ") + DataTypeName(Q.dtype()) +
                       " and " + DataTypeName(V.dtype()));
  if (K.dtype() != Q.dtype())
    return ctx.Invalid(std::string("K must have Q's dtype ") + DataTypeName(Q.dtype()) + ", got " + DataTypeName(K.dtype()));
  const int rank = Q.rank();
  if ((rank != 3 && rank != 4) || K.rank() != rank || V.rank() != rank)
    return ctx.Invalid("Q, K and V must all be 3-D or all be 4-D, got ranks " + std::to_string(Q.rank()) + ", " +
                       std::to_string(K.rank()) + ", " + std::to_string(V.rank()));
  d->three_d = rank == 3;
  d->B = Q.dim(0);
  if (K.dim(0) != d->B || V.dim(0) != d->B)
    return ctx.Invalid("Q, K, V batch sizes differ: " + ShapeToString(Q.shape()) + ", " + ShapeToString(K.shape()) + ", " +
                       ShapeToString(V.shape()));
  IL_RETURN_IF_ERROR(d->three_d ? CheckHeads3d(ctx, Q, K, V, d) : CheckHeads4d(ctx, Q, K, V, d));
  if (d->Hkv <= 0 || d->Hq % d->Hkv != 0)
    return ctx.Invalid("q_num_heads " + std::to_string(d->Hq) + " must be a multiple of kv_num_heads " +
                       std::to_string(d->Hkv));
  d->group = d->Hq / d->Hkv;
  return Status::Ok();
}

Status AttentionKernel::CheckHeads3d(KernelContext& ctx, const Tensor& Q, const Tensor& K, const Tensor& V,
                                     AttentionDims* d) const {
  if (a_.q_num_heads <= 0 || a_.kv_num_heads <= 0)
    return ctx.Invalid("3-D inputs need the q_num_heads and kv_num_heads attributes");
  d->Hq = a_.q_num_heads;
  d->Hkv = a_.kv_num_heads;
  d->Sq = Q.dim(1);
  d->Skv = K.dim(1);
  if (V.dim(1) != d->Skv)
    return ctx.Invalid("K and V sequence lengths differ: " + ShapeToString(K.shape()) + " vs " + ShapeToString(V.shape()));
  if (Q.dim(2) % d->Hq != 0 || K.dim(2) % d->Hkv != 0 || V.dim(2) % d->Hkv != 0)
    return ctx.Invalid("hidden sizes of Q " + ShapeToString(Q.shape()) + ", K " + ShapeToString(K.shape()) + ", V " +
                       ShapeToString(V.shape()) + " must be multiples of q_num_heads " + std::to_string(d->Hq) +
                       " / kv_num_heads " + std::to_string(d->Hkv));
  d->D = Q.dim(2) / d->Hq;
  if (K.dim(2) / d->Hkv != d->D)
    return ctx.Invalid("Q head size " + std::to_string(d->D) + " differs from K head size " +
                       std::to_string(K.dim(2) / d->Hkv));
  d->Dv = V.dim(2) / d->Hkv;
  return Status::Ok();
}

Status AttentionKernel::CheckHeads4d(KernelContext& ctx, const Tensor& Q, const Tensor& K, const Tensor& V,
                                     AttentionDims* d) const {
  if (a_.opset >= 25 && (a_.q_num_heads > 0 || a_.kv_num_heads > 0))
    return ctx.Invalid("q_num_heads and kv_num_heads must not be given with 4-D inputs");
  d->Hq = Q.dim(1);
  d->Hkv = K.dim(1);
  d->Sq = Q.dim(2);
  d->Skv = K.dim(2);
  d->D = Q.dim(3);
  d->Dv = V.dim(3);
  if (V.dim(1) != d->Hkv || V.dim(2) != d->Skv)
    return ctx.Invalid("V " + ShapeToString(V.shape()) + " must match K " + ShapeToString(K.shape()) + " in heads and sequence");
  if (K.dim(3) != d->D)
    return ctx.Invalid("Q head size " + std::to_string(d->D) + " differs from K head size " + std::to_string(K.dim(3)));
  if ((a_.q_num_heads > 0 && a_.q_num_heads != d->Hq) || (a_.kv_num_heads > 0 && a_.kv_num_heads != d->Hkv))
    return ctx.Invalid("q_num_heads/kv_num_heads attributes disagree with the 4-D input shapes " + ShapeToString(Q.shape()) +
                       ", " + ShapeToString(K.shape()));
  return Status::Ok();
}

// The KV cache: past_key (B, Hkv, P, D) and past_value (B, Hkv, P, Dv), both or neither. Sets P and T.
Status AttentionKernel::CheckCache(KernelContext& ctx, const Tensor& K, const Tensor& V, const Tensor* past_k,
                                   const Tensor* past_v, AttentionDims* d) {
  if ((past_k == nullptr) != (past_v == nullptr)) return ctx.Invalid("past_key and past_value must be given together");
  d->P = 0;
  if (past_k) {
    if (past_k->dtype() != K.dtype() || past_v->dtype() != V.dtype())
      return ctx.Invalid(std::string("past_key/past_value must have K/V's dtypes, got ") + DataTypeName(past_k->dtype()) + "/" +
                         DataTypeName(past_v->dtype()));
    if (past_k->rank() != 4 || past_v->rank() != 4)
      return ctx.Invalid("past_key and past_value must be 4-D, got " + ShapeToString(past_k->shape()) + " and " +
                         ShapeToString(past_v->shape()));
    const int64_t B = d->B, Hkv = d->Hkv, P = past_k->dim(2), D = d->D, Dv = d->Dv;
    if (past_k->shape() != Shape{B, Hkv, P, D} || past_v->shape() != Shape{B, Hkv, P, Dv})
      return ctx.Invalid("past_key " + ShapeToString(past_k->shape()) + " / past_value " + ShapeToString(past_v->shape()) +
                         " expected " + ShapeToString({B, Hkv, P, D}) + " / " + ShapeToString({B, Hkv, P, Dv}));
    d->P = P;
  }
  d->T = d->P + d->Skv;
  return Status::Ok();
}

// nonpad_kv_seqlen (opset 24): the valid key count of each batch entry; empty when not given.
Result<std::vector<int64_t>> AttentionKernel::NonpadLengths(KernelContext& ctx, const Tensor* nonpad, bool has_cache,
                                                            const AttentionDims& d) const {
  std::vector<int64_t> valid_len;
  if (!nonpad) return valid_len;
  const int64_t B = d.B, T = d.T;
  if (a_.opset < 24) return ctx.Invalid("nonpad_kv_seqlen needs opset 24 or later");
  if (has_cache) return ctx.Invalid("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  if (nonpad->dtype() != DataType::kInt64 || nonpad->shape() != Shape{B})
    return ctx.Invalid("nonpad_kv_seqlen must be int64 of shape " + ShapeToString({B}) + ", got " +
                       DataTypeName(nonpad->dtype()) + ShapeToString(nonpad->shape()));
  valid_len.assign(nonpad->data<int64_t>(), nonpad->data<int64_t>() + B);
  for (int64_t b = 0; b < B; ++b)
    if (valid_len[b] < 0 || valid_len[b] > T)
      return ctx.Invalid("nonpad_kv_seqlen[" + std::to_string(b) + "] = " + std::to_string(valid_len[b]) +
                         " out of range [0, " + std::to_string(T) + "]");
  return valid_len;
}

// attn_mask: right-aligned broadcast to (B, Hq, Sq, T); the last dim may be shorter (padded
// with -inf / false).
template <typename C>
Status AttentionKernel::BroadcastMask(KernelContext& ctx, const Tensor* mask, const AttentionDims& d, AttentionMask<C>* m) {
  if (!mask) return Status::Ok();
  m->present = true;
  if (mask->rank() < 1 || mask->rank() > 4)
    return ctx.Invalid("attn_mask must have rank 1 to 4, got " + ShapeToString(mask->shape()));
  Shape m4(4 - mask->rank(), 1);
  m4.insert(m4.end(), mask->shape().begin(), mask->shape().end());
  const Shape target{d.B, d.Hq, d.Sq, d.T};
  for (int i = 0; i < 3; ++i)
    if (m4[i] != 1 && m4[i] != target[i])
      return ctx.Invalid("attn_mask " + ShapeToString(mask->shape()) + " does not broadcast to " + ShapeToString(target));
  m->len = m4[3];
  if (m->len > d.T)
    return ctx.Invalid("attn_mask " + ShapeToString(mask->shape()) + " last dim exceeds total sequence length " +
                       std::to_string(d.T));
  m->sq = m4[2] == 1 ? 0 : m->len;
  m->sh = m4[1] == 1 ? 0 : m4[2] * m->len;
  m->sb = m4[0] == 1 ? 0 : m4[1] * m4[2] * m->len;
  if (mask->dtype() == DataType::kBool) {
    m->bools = mask->data<uint8_t>();
    return Status::Ok();
  }
  if (mask->dtype() == DataType::kString || IsSmallFloat(mask->dtype()) || mask->dtype() == DataType::kComplex64 ||
      mask->dtype() == DataType::kComplex128)
    return ctx.Invalid(std::string("attn_mask must be bool or numeric, got ") + DataTypeName(mask->dtype()));
  IL_ASSIGN_OR_RETURN(m->converted, AsCompute<C>(*mask));
  m->values = m->converted.template data<C>();
  return Status::Ok();
}

// K and V in C, concatenated after the cache as contiguous (B, Hkv, T, D) and (B, Hkv, T, Dv).
template <typename C>
Status AttentionKernel::ConcatCache(KernelContext& ctx, const Tensor& K, const Tensor& V, const Tensor* past_k,
                                    const Tensor* past_v, const AttentionDims& d, Tensor* kall, Tensor* vall) {
  const int64_t B = d.B, Hkv = d.Hkv, P = d.P, T = d.T, D = d.D, Dv = d.Dv;
  IL_ASSIGN_OR_RETURN(*kall, ctx.Allocate(ComputeDtype<C>(), {B, Hkv, T, D}));
  IL_ASSIGN_OR_RETURN(*vall, ctx.Allocate(ComputeDtype<C>(), {B, Hkv, T, Dv}));
  IL_ASSIGN_OR_RETURN(Tensor kc, AsCompute<C>(K));
  IL_ASSIGN_OR_RETURN(Tensor vc, AsCompute<C>(V));
  if (past_k) {
    IL_ASSIGN_OR_RETURN(Tensor pk, AsCompute<C>(*past_k));
    IL_ASSIGN_OR_RETURN(Tensor pv, AsCompute<C>(*past_v));
    CopyHeads(pk.data<C>(), StridesFor(false, Hkv, P, D), B, Hkv, P, D, kall->data<C>(), T, 0);
    CopyHeads(pv.data<C>(), StridesFor(false, Hkv, P, Dv), B, Hkv, P, Dv, vall->data<C>(), T, 0);
  }
  CopyHeads(kc.data<C>(), StridesFor(d.three_d, Hkv, d.Skv, D), B, Hkv, d.Skv, D, kall->data<C>(), T, P);
  CopyHeads(vc.data<C>(), StridesFor(d.three_d, Hkv, d.Skv, Dv), B, Hkv, d.Skv, Dv, vall->data<C>(), T, P);
  return Status::Ok();
}

// The pre-softmax scores of one query row: q.k * scale, softcapped, plus the bias (in the order
// kLegacySoftcapAfterMask selects); qk_matmul_output_mode 0..2 copy a stage into qkrow.
template <typename C>
void AttentionKernel::ScoreRow(const C* qrow, const C* kh, const C* bias, int64_t T, int64_t D, C scale, C* score,
                               C* qkrow) const {
  const C softcap = static_cast<C>(a_.softcap);
  for (int64_t j = 0; j < T; ++j) {
    score[j] = Dot(qrow, kh + j * D, D) * scale;
  }
  auto capture = [&](int m) {
    if (qkrow && a_.mode == m) std::copy(score, score + T, qkrow);
  };
  auto apply_softcap = [&] {
    if (softcap > 0)
      for (int64_t j = 0; j < T; ++j) score[j] = softcap * std::tanh(score[j] / softcap);
  };
  capture(0);
  if (kLegacySoftcapAfterMask) {
    for (int64_t j = 0; j < T; ++j) score[j] += bias[j];
    capture(1);
    apply_softcap();
    capture(2);
  } else {
    apply_softcap();
    capture(1);
    for (int64_t j = 0; j < T; ++j) score[j] += bias[j];
    capture(2);
  }
}

// One query row: bias, scores, softmax (captured in qkrow for mode 3) and the weighted values into yrow.
template <typename C, typename S>
void AttentionKernel::AttendRow(const C* qrow, const C* kh, const C* vh, const AttentionMask<C>& m, int64_t mrow,
                                const KeyWindow& w, int64_t i, const AttentionDims& d, RowBuffers<C, S>& buf, C* yrow,
                                C* qkrow) const {
  const int64_t T = d.T;
  const C scale = static_cast<C>(a_.has_scale ? a_.scale : 1.0 / std::sqrt(static_cast<double>(d.D)));
  const bool all_masked = FillBias(m, mrow, w, i, T, buf.bias.data());
  ScoreRow(qrow, kh, buf.bias.data(), T, d.D, scale, buf.score.data(), qkrow);
  SoftmaxRow(buf.score.data(), all_masked, T, buf.prob.data());
  if (qkrow && a_.mode == 3)
    for (int64_t j = 0; j < T; ++j) qkrow[j] = static_cast<C>(buf.prob[j]);
  WeightedValues(buf.prob.data(), vh, T, d.Dv, buf.acc.data(), yrow);
}

template <typename C, typename S>
Status AttentionKernel::Run(KernelContext& ctx) const {
  IL_ASSIGN_OR_RETURN(const Tensor* Q, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* K, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(const Tensor* V, ctx.RequireInput(2));
  const Tensor* past_k = ctx.input(4);
  const Tensor* past_v = ctx.input(5);
  const Tensor* nonpad = ctx.input(6);
  AttentionDims d;
  IL_RETURN_IF_ERROR(CheckQkv(ctx, *Q, *K, *V, &d));
  IL_RETURN_IF_ERROR(CheckCache(ctx, *K, *V, past_k, past_v, &d));
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> valid_len, NonpadLengths(ctx, nonpad, past_k != nullptr, d));
  AttentionMask<C> mask;
  IL_RETURN_IF_ERROR(BroadcastMask(ctx, ctx.input(3), d, &mask));

  const int64_t B = d.B, Hq = d.Hq, Hkv = d.Hkv, Sq = d.Sq, T = d.T, D = d.D, Dv = d.Dv;
  IL_ASSIGN_OR_RETURN(Tensor qc, AsCompute<C>(*Q));
  Tensor kall, vall;
  IL_RETURN_IF_ERROR(ConcatCache<C>(ctx, *K, *V, past_k, past_v, d, &kall, &vall));
  const Shape y_shape = d.three_d ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv};
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.Allocate(ComputeDtype<C>(), y_shape));
  const bool want_qk = ctx.output_wanted(3);
  Tensor qk_out;
  if (want_qk) {
    IL_ASSIGN_OR_RETURN(qk_out, ctx.Allocate(ComputeDtype<C>(), {B, Hq, Sq, T}));
  }

  const HeadStrides qst = StridesFor(d.three_d, Hq, Sq, D);
  const HeadStrides yst = StridesFor(d.three_d, Hq, Sq, Dv);
  const C* qd = qc.data<C>();
  const C* kd = kall.data<C>();
  const C* vd = vall.data<C>();
  C* yd = y.data<C>();
  C* qkd = want_qk ? qk_out.data<C>() : nullptr;
  RowBuffers<C, S> buf{std::vector<C>(T), std::vector<C>(T), std::vector<C>(Dv), std::vector<S>(T)};
  KeyWindow w{a_.is_causal, a_.left_window, a_.right_window, 0, T};
  for (int64_t b = 0; b < B; ++b) {
    w.offset = past_k ? d.P : (nonpad ? valid_len[b] - Sq : 0);
    w.valid = nonpad ? valid_len[b] : T;
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = h / d.group;
      const C* kh = kd + (b * Hkv + kvh) * T * D;
      const C* vh = vd + (b * Hkv + kvh) * T * Dv;
      for (int64_t i = 0; i < Sq; ++i) {
        C* qkrow = want_qk ? qkd + ((b * Hq + h) * Sq + i) * T : nullptr;
        AttendRow<C, S>(qd + b * qst.b + h * qst.h + i * qst.s, kh, vh, mask, b * mask.sb + h * mask.sh + i * mask.sq, w, i,
                        d, buf, yd + b * yst.b + h * yst.h + i * yst.s, qkrow);
      }
    }
  }

  IL_ASSIGN_OR_RETURN(Tensor y_out, FromCompute(std::move(y), Q->dtype()));
  ctx.SetOutput(0, std::move(y_out));
  if (ctx.output_wanted(1)) {
    IL_ASSIGN_OR_RETURN(Tensor pk, FromCompute(std::move(kall), K->dtype()));
    ctx.SetOutput(1, std::move(pk));
  }
  if (ctx.output_wanted(2)) {
    IL_ASSIGN_OR_RETURN(Tensor pv, FromCompute(std::move(vall), V->dtype()));
    ctx.SetOutput(2, std::move(pv));
  }
  if (want_qk) {
    IL_ASSIGN_OR_RETURN(Tensor qo, FromCompute(std::move(qk_out), Q->dtype()));
    ctx.SetOutput(3, std::move(qo));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeAttention(const KernelInfo& info) {
  AttentionAttrs a;
  a.opset = info.opset();
  const int64_t causal = info.GetInt("is_causal", 0);
  if (causal != 0 && causal != 1) return info.Invalid("is_causal must be 0 or 1, got " + std::to_string(causal));
  a.is_causal = causal == 1;
  if (info.has_attr("q_num_heads")) {
    a.q_num_heads = info.GetInt("q_num_heads", 0);
    if (a.q_num_heads <= 0) return info.Invalid("q_num_heads must be positive, got " + std::to_string(a.q_num_heads));
  }
  if (info.has_attr("kv_num_heads")) {
    a.kv_num_heads = info.GetInt("kv_num_heads", 0);
    if (a.kv_num_heads <= 0) return info.Invalid("kv_num_heads must be positive, got " + std::to_string(a.kv_num_heads));
  }
  const int64_t mode = info.GetInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return info.Invalid("qk_matmul_output_mode must be 0..3, got " + std::to_string(mode));
  a.mode = static_cast<int>(mode);
  if (info.has_attr("scale")) {
    a.has_scale = true;
    a.scale = info.GetFloat("scale", 0.0f);
    if (!std::isfinite(a.scale)) return info.Invalid("scale must be finite");
  }
  a.softcap = info.GetFloat("softcap", 0.0f);
  if (std::isnan(a.softcap)) return info.Invalid("softcap must not be NaN");
  if (info.has_attr("softmax_precision")) {
    const int64_t p = info.GetInt("softmax_precision", 1);
    const auto dt = static_cast<DataType>(p);
    if (dt != DataType::kFloat && dt != DataType::kFloat16 && dt != DataType::kBFloat16 && dt != DataType::kDouble)
      return info.Invalid("softmax_precision must be a float type (1, 10, 11 or 16), got " + std::to_string(p));
    a.softmax_double = dt == DataType::kDouble;
  }
  if (a.opset >= 25) {
    a.left_window = info.GetInt("left_window_size", -1);
    a.right_window = info.GetInt("right_window_size", -1);
    if (a.left_window < -1 || a.right_window < -1)
      return info.Invalid("left_window_size/right_window_size must be -1 or nonnegative");
  }
  return std::unique_ptr<Kernel>(std::make_unique<AttentionKernel>(a));
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding

struct RotaryAttrs {
  bool interleaved = false;
  int64_t rotary_dim = 0;  // 0: head_size
  int64_t num_heads = 0;   // 0: not given
};

Status RotaryCompute(const RotaryAttrs& a, KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* X, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* cosc, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(const Tensor* sinc, ctx.RequireInput(2));
  const Tensor* pos = ctx.input(3);
  const DataType dt = X->dtype();
  if (dt != DataType::kFloat && dt != DataType::kFloat16 && dt != DataType::kBFloat16)
    return ctx.Invalid(std::string("input must be float, float16 or bfloat16, got ") + DataTypeName(dt));
  if (cosc->dtype() != dt || sinc->dtype() != dt)
    return ctx.Invalid(std::string("cos_cache/sin_cache must have the input's dtype ") + DataTypeName(dt) + ", got " +
                       DataTypeName(cosc->dtype()) + "/" + DataTypeName(sinc->dtype()));
  int64_t B, H, S, Dh;
  // Element strides of (batch, seq, head) for the head vector (contiguous, length Dh).
  int64_t sb, ss, sh;
  if (X->rank() == 4) {
    B = X->dim(0);
    H = X->dim(1);
    S = X->dim(2);
    Dh = X->dim(3);
    sb = H * S * Dh;
    sh = S * Dh;
    ss = Dh;
  } else if (X->rank() == 3) {
    if (a.num_heads <= 0) return ctx.Invalid("3-D input needs the num_heads attribute");
    B = X->dim(0);
    S = X->dim(1);
    H = a.num_heads;
    if (X->dim(2) % H != 0)
      return ctx.Invalid("hidden size " + std::to_string(X->dim(2)) + " is not a multiple of num_heads " + std::to_string(H));
    Dh = X->dim(2) / H;
    sb = S * H * Dh;
    ss = H * Dh;
    sh = Dh;
  } else {
    return ctx.Invalid("input must be 3-D or 4-D, got " + ShapeToString(X->shape()));
  }
  const int64_t rd = a.rotary_dim > 0 ? a.rotary_dim : Dh;
  if (rd > Dh || rd % 2 != 0)
    return ctx.Invalid("rotary_embedding_dim " + std::to_string(rd) + " must be even and at most the head size " +
                       std::to_string(Dh));
  const int64_t half = rd / 2;
  const int64_t* pid = nullptr;
  int64_t max_pos = 0;
  if (pos) {
    if (pos->dtype() != DataType::kInt64 || pos->shape() != Shape{B, S})
      return ctx.Invalid("position_ids must be int64 of shape " + ShapeToString({B, S}) + ", got " +
                         DataTypeName(pos->dtype()) + ShapeToString(pos->shape()));
    if (cosc->rank() != 2 || cosc->dim(1) != half || sinc->shape() != cosc->shape())
      return ctx.Invalid("with position_ids, cos_cache/sin_cache must be [max_position, " + std::to_string(half) + "], got " +
                         ShapeToString(cosc->shape()) + "/" + ShapeToString(sinc->shape()));
    pid = pos->data<int64_t>();
    max_pos = cosc->dim(0);
    for (int64_t k = 0; k < B * S; ++k)
      if (pid[k] < 0 || pid[k] >= max_pos)
        return ctx.Invalid("position_ids value " + std::to_string(pid[k]) + " out of range [0, " + std::to_string(max_pos) + ")");
  } else {
    if (cosc->shape() != Shape{B, S, half} || sinc->shape() != cosc->shape())
      return ctx.Invalid("without position_ids, cos_cache/sin_cache must be " + ShapeToString({B, S, half}) + ", got " +
                         ShapeToString(cosc->shape()) + "/" + ShapeToString(sinc->shape()));
  }

  IL_ASSIGN_OR_RETURN(Tensor xf, ToFloat32(*X));
  IL_ASSIGN_OR_RETURN(Tensor cf, ToFloat32(*cosc));
  IL_ASSIGN_OR_RETURN(Tensor sf, ToFloat32(*sinc));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kFloat, X->shape()));
  const float* x = xf.data<float>();
  const float* cd = cf.data<float>();
  const float* sd = sf.data<float>();
  float* o = out.data<float>();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      const int64_t row = pid ? pid[b * S + s] : b * S + s;
      const float* c = cd + row * half;
      const float* sn = sd + row * half;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = b * sb + s * ss + h * sh;
        const float* xi = x + base;
        float* oi = o + base;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = a.interleaved ? 2 * k : k;
          const int64_t i2 = a.interleaved ? 2 * k + 1 : k + half;
          const float x1 = xi[i1], x2 = xi[i2];
          oi[i1] = c[k] * x1 - sn[k] * x2;
          oi[i2] = sn[k] * x1 + c[k] * x2;
        }
        for (int64_t k = rd; k < Dh; ++k) oi[k] = xi[k];
      }
    }
  }
  IL_ASSIGN_OR_RETURN(Tensor res, FromCompute(std::move(out), dt));
  ctx.SetOutput(0, std::move(res));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeRotaryEmbedding(const KernelInfo& info) {
  RotaryAttrs a;
  const int64_t il = info.GetInt("interleaved", 0);
  if (il != 0 && il != 1) return info.Invalid("interleaved must be 0 or 1, got " + std::to_string(il));
  a.interleaved = il == 1;
  a.rotary_dim = info.GetInt("rotary_embedding_dim", 0);
  if (a.rotary_dim < 0 || a.rotary_dim % 2 != 0)
    return info.Invalid("rotary_embedding_dim must be 0 or a positive even number, got " + std::to_string(a.rotary_dim));
  a.num_heads = info.GetInt("num_heads", 0);
  if (a.num_heads < 0) return info.Invalid("num_heads must be positive, got " + std::to_string(a.num_heads));
  return MakeKernel([a](KernelContext& ctx) { return RotaryCompute(a, ctx); });
}

}  // namespace

void RegisterAttentionKernels(KernelRegistry& r) {
  r.Register("", "Attention", 23, MakeAttention);
  r.Register("", "RotaryEmbedding", 23, MakeRotaryEmbedding);
}

}  // namespace inferloop
