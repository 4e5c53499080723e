// QAdd and QConcat: the INT8 elementwise ops of the QDQ fusion (semantics in dnnl_int8.cc),
// requantizing 8-bit inputs into the output's scale and zero point.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_int8_common.h"
#include "compute/simd/int8_loops.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

namespace {

class QAddKernel final : public Kernel {
 public:
  QAddKernel(QParam a, QParam b, QParam y, bool relu) : a_(a), b_(b), y_(y), relu_(relu) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* a, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* b, ctx.RequireInput(3));
    if (a->dtype() != a_.type || b->dtype() != b_.type) return ctx.Invalid("A and B must have their zero points' dtypes");
    if (a->shape() != b->shape())
      return ctx.Invalid("A " + ShapeToString(a->shape()) + " and B " + ShapeToString(b->shape()) + " must have the same shape");
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, a->shape()));
    const float fa = a_.scale / y_.scale, fb = b_.scale / y_.scale;
    const float c = static_cast<float>(y_.zp) - fa * static_cast<float>(a_.zp) - fb * static_cast<float>(b_.zp);
    const float lo = relu_ ? std::max(Lo(y_.type), static_cast<float>(y_.zp)) : Lo(y_.type), hi = Hi(y_.type);
    const int64_t n = a->size();
    auto run = [&](auto* pa, auto* pb, auto* py) {
      ParallelFor(ctx.thread_pool(), n, 16384, [&](int64_t s, int64_t e) { simd::AddRequant(pa + s, pb + s, py + s, e - s, fa, fb, c, lo, hi); });
    };
    auto with_y = [&](auto* pa, auto* pb) {
      if (y_.type == DataType::kUInt8) run(pa, pb, y.data<uint8_t>());
      else run(pa, pb, y.data<int8_t>());
    };
    auto with_b = [&](auto* pa) {
      if (b_.type == DataType::kUInt8) with_y(pa, b->data<uint8_t>());
      else with_y(pa, b->data<int8_t>());
    };
    if (a_.type == DataType::kUInt8) with_b(a->data<uint8_t>());
    else with_b(a->data<int8_t>());
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  QParam a_, b_, y_;
  bool relu_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> MakeQAdd(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(Activation act, ActivationFromInfo(info));
  if (act.kind != ActivationKind::kNone && act.kind != ActivationKind::kRelu) return info.Invalid("QAdd takes activation Relu only");
  IL_ASSIGN_OR_RETURN(QParam a, ConstQParam(info, 1, 2, DataType::kUInt8, "a"));
  IL_ASSIGN_OR_RETURN(QParam b, ConstQParam(info, 4, 5, DataType::kUInt8, "b"));
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 6, 7, DataType::kUInt8, "y"));
  return std::unique_ptr<Kernel>(std::make_unique<QAddKernel>(a, b, y, act.kind == ActivationKind::kRelu));
}

// --------------------------------------------------------------------------------------------
// QConcat(y_scale, y_zp, X0, s0, z0, X1, s1, z1, ...): Concat of the dequantized inputs along
// `axis`, quantized with (y_scale, y_zp). An input with the output's parameters is copied.

namespace {

class QConcatKernel final : public Kernel {
 public:
  QConcatKernel(int64_t axis, QParam y, std::vector<QParam> in) : axis_(axis), y_(y), in_(std::move(in)) {}

  Status Compute(KernelContext& ctx) const override {
    const size_t n = in_.size();
    std::vector<const Tensor*> xs(n);
    for (size_t i = 0; i < n; ++i) {
      IL_ASSIGN_OR_RETURN(xs[i], ctx.RequireInput(static_cast<int>(2 + 3 * i)));
      if (xs[i]->dtype() != in_[i].type) return ctx.Invalid("input " + std::to_string(i) + " must have its zero point's dtype");
    }
    const int r = xs[0]->rank();
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis >= r) return ctx.Invalid("axis out of range");
    Shape ys = xs[0]->shape();
    ys[axis] = 0;
    for (const Tensor* x : xs) {
      if (x->rank() != r) return ctx.Invalid("inputs must have the same rank");
      for (int d = 0; d < r; ++d)
        if (d != axis && x->dim(d) != xs[0]->dim(d)) return ctx.Invalid("inputs differ outside the concat axis");
      ys[axis] += x->dim(axis);
    }
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, ys));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= ys[d];
    for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= ys[d];
    const int64_t row = ys[axis] * inner;
    auto* py = static_cast<uint8_t*>(y.raw_data());  // 1-byte elements either way
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t block = xs[i]->dim(axis) * inner;
      const QParam& q = in_[i];
      const bool same = q.type == y_.type && q.zp == y_.zp && q.scale == y_.scale;
      const auto* px = static_cast<const uint8_t*>(xs[i]->raw_data());
      const float f = q.scale / y_.scale, c = static_cast<float>(y_.zp) - f * static_cast<float>(q.zp);
      const float lo = Lo(y_.type), hi = Hi(y_.type);
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* dst = py + o * row + offset;
        const uint8_t* src = px + o * block;
        if (same) {
          std::memcpy(dst, src, static_cast<size_t>(block));
          continue;
        }
        for (int64_t k = 0; k < block; ++k) {
          const float v = q.type == DataType::kUInt8 ? static_cast<float>(src[k]) : static_cast<float>(static_cast<int8_t>(src[k]));
          const float t = std::min(std::max(std::nearbyint(v * f + c), lo), hi);
          dst[k] = y_.type == DataType::kUInt8 ? static_cast<uint8_t>(t) : static_cast<uint8_t>(static_cast<int8_t>(t));
        }
      }
      offset += block;
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  int64_t axis_;
  QParam y_;
  std::vector<QParam> in_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> MakeQConcat(const KernelInfo& info) {
  if (!info.has_attr("axis")) return info.Invalid("axis is required");
  if (info.num_inputs() < 5 || (info.num_inputs() - 2) % 3 != 0) return info.Invalid("inputs: y_scale, y_zp, then (X, scale, zero point) triples");
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 0, 1, DataType::kUInt8, "y"));
  std::vector<QParam> in;
  for (int i = 2; i < info.num_inputs(); i += 3) {
    IL_ASSIGN_OR_RETURN(QParam q, ConstQParam(info, i + 1, i + 2, DataType::kUInt8, "x"));
    in.push_back(q);
  }
  return std::unique_ptr<Kernel>(std::make_unique<QConcatKernel>(info.GetInt("axis", 0), y, std::move(in)));
}

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
