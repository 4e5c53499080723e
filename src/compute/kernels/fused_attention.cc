// com.inferloop MultiHeadAttention (docs/FUSED_OPS.md), float32:
//   Q [B, Sq, H*D], K [B, Sk, H*D], V [B, Sk, H*Dv], mask? (additive, broadcasting to
//   [B, H, Sq, Sk]) -> Y [B, Sq, H*Dv] = concat_h softmax(scale * Q_h K_h^T + mask) V_h.
// Attributes: num_heads (required), scale (default 1/sqrt(D)), mask_type ("additive", the
// only kind defined; absent = additive).
//
// K is first transposed per head into scratch ([B, H, D, Sk]); then work is split over
// (batch, head, block of query rows) on the run's thread pool. Per task, scores = scale *
// Q_h K_h^T and Y_h = P V_h are register-tiled GEMMs (fused_attention_gemm.h, per instruction
// set) reading Q and V and writing Y in place through leading dimensions; between them the rows
// get the mask and a max-subtracted softmax (compute/simd). Scratch is per thread, grows to the
// largest shape seen and is reused, so steady-state runs do not allocate.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/fused_attention_gemm.h"
#include "compute/simd/float_kernels.h"
#include "compute/simd/transpose.h"

namespace inferloop {
namespace {

// Grows-only per-thread scratch; slot 0 holds K^T (written by the calling thread before the
// parallel part, read by all), slot 1 a task's scores.
float* Scratch(int slot, size_t floats) {
  thread_local std::vector<float> buf[2];
  if (buf[slot].size() < floats) buf[slot].resize(floats);
  return buf[slot].data();
}

struct Attention {
  int64_t heads = 0;
  bool has_scale = false;
  float scale = 0.f;
};

Status Compute(const Attention& a, KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* q, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* k, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(const Tensor* v, ctx.RequireInput(2));
  const Tensor* mask = ctx.input(3);
  for (const Tensor* t : {q, k, v, mask})
    if (t && t->dtype() != DataType::kFloat)
      return ctx.Invalid(std::string("inputs must be float32, got ") + DataTypeName(t->dtype()));
  if (q->rank() != 3 || k->rank() != 3 || v->rank() != 3)
    return ctx.Invalid("Q, K and V must be 3-D [batch, seq, hidden], got " + ShapeToString(q->shape()) + ", " +
                       ShapeToString(k->shape()) + ", " + ShapeToString(v->shape()));
  const int64_t B = q->dim(0), Sq = q->dim(1), hidden = q->dim(2), Sk = k->dim(1), H = a.heads;
  if (k->dim(0) != B || v->dim(0) != B || v->dim(1) != Sk || k->dim(2) != hidden)
    return ctx.Invalid("Q " + ShapeToString(q->shape()) + ", K " + ShapeToString(k->shape()) + " and V " +
                       ShapeToString(v->shape()) + " do not agree in batch, key length or hidden size");
  if (hidden % H != 0 || v->dim(2) % H != 0)
    return ctx.Invalid("hidden sizes " + std::to_string(hidden) + " / " + std::to_string(v->dim(2)) +
                       " are not divisible by num_heads " + std::to_string(H));
  const int64_t D = hidden / H, Dv = v->dim(2) / H;
  // Mask strides over [B, H, Sq, Sk] (0 where it broadcasts).
  int64_t ms[4] = {0, 0, 0, 0};
  if (mask) {
    if (mask->rank() > 4) return ctx.Invalid("mask has rank " + std::to_string(mask->rank()) + ", above 4");
    const int64_t full[4] = {B, H, Sq, Sk};
    int64_t stride = 1;
    for (int d = 3, md = mask->rank() - 1; md >= 0; --d, --md) {
      const int64_t n = mask->dim(md);
      if (n != 1 && n != full[d])
        return ctx.Invalid("mask " + ShapeToString(mask->shape()) + " does not broadcast to [" + std::to_string(B) + "," +
                           std::to_string(H) + "," + std::to_string(Sq) + "," + std::to_string(Sk) + "]");
      ms[d] = n == 1 ? 0 : stride;
      stride *= n;
    }
  }
  IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(DataType::kFloat, {B, Sq, H * Dv}));
  if (y.size() == 0) {
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }
  if (Sk == 0) {  // softmax over nothing: every weight sum is empty
    std::fill(y.data<float>(), y.data<float>() + y.size(), 0.f);
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }
  const float scale = a.has_scale ? a.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  const float* qd = q->data<float>();
  const float* kd = k->data<float>();
  const float* vd = v->data<float>();
  const float* md = mask ? mask->data<float>() : nullptr;
  float* yd = y.data<float>();
  const int64_t ldq = hidden, ldv = v->dim(2), ldy = H * Dv;
  // Tasks: (batch, head, block of query rows); blocks split heads only when there are too few
  // heads to keep every thread busy.
  ThreadPool* pool = ctx.thread_pool();
  const int64_t threads = pool ? pool->num_threads() : 1;
  const int64_t splits = std::max<int64_t>(1, (4 * threads + B * H - 1) / (B * H));
  const int64_t rows_per_task = std::max<int64_t>(16, (Sq + splits - 1) / splits);
  const int64_t q_blocks = (Sq + rows_per_task - 1) / rows_per_task;
  // K^T per (batch, head): [B, Sk, H, D] -> [B, H, D, Sk], so both products below are plain
  // row-major GEMMs.
  float* kt = Scratch(0, static_cast<size_t>(B * H * D * Sk));
  const int64_t k_shape[4] = {B, Sk, H, D}, k_perm[4] = {0, 2, 3, 1};
  if (!simd::TransposeBytes(pool, kd, kt, sizeof(float), k_shape, k_perm, 4))
    return ctx.Invalid("internal: K could not be transposed");
  ParallelFor(pool, B * H * q_blocks, 1, [&](int64_t begin, int64_t end) {
    float* scores = Scratch(1, static_cast<size_t>(std::min(rows_per_task, Sq) * Sk));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bh = t / q_blocks, qb = t % q_blocks;
      const int64_t b = bh / H, h = bh % H;
      const int64_t i0 = qb * rows_per_task, rows = std::min(rows_per_task, Sq - i0);
      // scores = scale * Q_h K_h^T  [rows, Sk]
      AttentionGemm(rows, Sk, D, scale, qd + (b * Sq + i0) * ldq + h * D, ldq, kt + bh * D * Sk, Sk, scores, Sk);
      if (md) {
        for (int64_t r = 0; r < rows; ++r) {
          float* row = scores + r * Sk;
          const float* m = md + b * ms[0] + h * ms[1] + (i0 + r) * ms[2];
          if (ms[3] == 1) simd::Binary(nullptr, simd::BinaryOp::kAdd, row, m, row, Sk);
          else simd::BinaryScalarB(nullptr, simd::BinaryOp::kAdd, row, m[0], row, Sk);
        }
      }
      simd::SoftmaxRows(nullptr, scores, scores, rows, Sk, false);
      // Y_h = P V_h  [rows, Dv], written in place into Y's head columns
      AttentionGemm(rows, Dv, Sk, 1.f, scores, Sk, vd + b * Sk * ldv + h * Dv, ldv, yd + (b * Sq + i0) * ldy + h * Dv, ldy);
    }
  });
  ctx.SetOutput(0, std::move(y));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeMultiHeadAttention(const KernelInfo& info) {
  Attention a;
  a.heads = info.GetInt("num_heads", 0);
  if (a.heads <= 0) return info.Invalid("attribute 'num_heads' must be a positive int");
  a.has_scale = info.has_attr("scale");
  a.scale = info.GetFloat("scale", 0.f);
  const std::string mask_type = info.GetString("mask_type", "additive");
  if (mask_type != "additive") return info.Invalid("mask_type \"" + mask_type + "\" is not supported (only \"additive\")");
  return MakeKernel([a](KernelContext& ctx) { return Compute(a, ctx); });
}

}  // namespace

void RegisterFusedAttentionKernel(KernelRegistry& r) {
  r.Register("com.inferloop", "MultiHeadAttention", 1, MakeMultiHeadAttention);
}

}  // namespace inferloop
