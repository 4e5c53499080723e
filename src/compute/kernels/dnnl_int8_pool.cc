// QMaxPool, QAveragePool and QGlobalAveragePool: the INT8 pools of the QDQ fusion (semantics in
// dnnl_int8.cc), on 8-bit tensors in NCHW or NHWC.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernels/dnnl_int8_common.h"
#include "compute/kernels/nn_common.h"
#include "compute/simd/int8_loops.h"

namespace inferloop {
namespace dnnl_kernels {
namespace int8 {

namespace {

// QMaxPool and QGlobalAveragePool on rank-4 tensors, NCHW or NHWC.

// Dims of a rank-4 tensor in logical order N, C, H, W.
struct Nchw {
  int64_t n, c, h, w;
};
Nchw Logical(const Tensor& x, bool nhwc) {
  return nhwc ? Nchw{x.dim(0), x.dim(3), x.dim(1), x.dim(2)} : Nchw{x.dim(0), x.dim(1), x.dim(2), x.dim(3)};
}

class QMaxPoolKernel final : public Kernel {
 public:
  QMaxPoolKernel(nn::WindowAttrs attrs, bool nhwc) : attrs_(std::move(attrs)), nhwc_(nhwc) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (!Is8Bit(x->dtype()) || x->rank() != 4) return ctx.Invalid("X must be a rank-4 uint8 or int8 tensor");
    const Nchw d = Logical(*x, nhwc_);
    IL_ASSIGN_OR_RETURN(nn::WindowGeom g, nn::ResolveWindow(ctx, attrs_, Shape{d.h, d.w}, attrs_.kernel_shape, /*pool_style=*/true));
    const int64_t oh = g.out[0], ow = g.out[1];
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(x->dtype(), nhwc_ ? Shape{d.n, oh, ow, d.c} : Shape{d.n, d.c, oh, ow}));
    if (x->dtype() == DataType::kUInt8) Run(ctx, x->data<uint8_t>(), y.data<uint8_t>(), d, g);
    else Run(ctx, x->data<int8_t>(), y.data<int8_t>(), d, g);
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx, const T* x, T* y, const Nchw& d, const nn::WindowGeom& g) const {
    const int64_t oh = g.out[0], ow = g.out[1];
    const T lowest = std::numeric_limits<T>::lowest();
    auto window = [&](int64_t o, int dim, int64_t* b, int64_t* e) {
      *b = o * g.strides[dim] - g.pad_begin[dim];
      *e = std::min(*b + (g.kernel[dim] - 1) * g.dilations[dim] + 1, dim == 0 ? d.h : d.w);
    };
    if (nhwc_) {
      ParallelFor(ctx.thread_pool(), d.n * oh, 4, [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r) {
          const int64_t n = r / oh, i = r % oh;
          int64_t hb, he;
          window(i, 0, &hb, &he);
          for (int64_t j = 0; j < ow; ++j) {
            int64_t wb, we;
            window(j, 1, &wb, &we);
            T* out = y + ((n * oh + i) * ow + j) * d.c;
            std::fill(out, out + d.c, lowest);
            for (int64_t h = hb; h < he; h += g.dilations[0]) {
              if (h < 0) continue;
              for (int64_t w = wb; w < we; w += g.dilations[1])
                if (w >= 0) simd::MaxInto(out, x + ((n * d.h + h) * d.w + w) * d.c, d.c);
            }
          }
        }
      });
      return;
    }
    ParallelFor(ctx.thread_pool(), d.n * d.c, 1, [&](int64_t s, int64_t e) {
      for (int64_t p = s; p < e; ++p) {
        const T* plane = x + p * d.h * d.w;
        for (int64_t i = 0; i < oh; ++i) {
          int64_t hb, he;
          window(i, 0, &hb, &he);
          for (int64_t j = 0; j < ow; ++j) {
            int64_t wb, we;
            window(j, 1, &wb, &we);
            T m = lowest;
            for (int64_t h = hb; h < he; h += g.dilations[0])
              for (int64_t w = wb; w < we; w += g.dilations[1])
                if (h >= 0 && w >= 0) m = std::max(m, plane[h * d.w + w]);
            y[(p * oh + i) * ow + j] = m;
          }
        }
      }
    });
  }

  nn::WindowAttrs attrs_;
  bool nhwc_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> MakeQMaxPool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, true));
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  if (attrs.kernel_shape.size() != 2) return info.Invalid("QMaxPool takes 2-D windows only");
  if (info.GetInt("storage_order", 0) != 0) return info.Invalid("storage_order must be 0");
  return std::unique_ptr<Kernel>(std::make_unique<QMaxPoolKernel>(std::move(attrs), nhwc));
}

namespace {

// QAveragePool(X, x_scale, x_zp, y_scale, y_zp): 2-D average over the in-bounds elements of each
// window (count_include_pad = 0; the pass fuses nothing else), requantized.
class QAveragePoolKernel final : public Kernel {
 public:
  QAveragePoolKernel(nn::WindowAttrs attrs, QParam x, QParam y, bool nhwc) : attrs_(std::move(attrs)), x_(x), y_(y), nhwc_(nhwc) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != x_.type || x->rank() != 4) return ctx.Invalid("X must be a rank-4 tensor of its zero point's dtype");
    const Nchw d = Logical(*x, nhwc_);
    IL_ASSIGN_OR_RETURN(nn::WindowGeom g, nn::ResolveWindow(ctx, attrs_, Shape{d.h, d.w}, attrs_.kernel_shape, /*pool_style=*/true));
    const int64_t oh = g.out[0], ow = g.out[1];
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, nhwc_ ? Shape{d.n, oh, ow, d.c} : Shape{d.n, d.c, oh, ow}));
    const float f = x_.scale / y_.scale, lo = Lo(y_.type), hi = Hi(y_.type);
    auto out_value = [&](int32_t sum, int64_t count) {
      const float avg = static_cast<float>(sum) / static_cast<float>(std::max<int64_t>(count, 1));
      return std::min(std::max(std::nearbyint((avg - static_cast<float>(x_.zp)) * f) + static_cast<float>(y_.zp), lo), hi);
    };
    auto run = [&](const auto* px, auto* py) {
      std::vector<int32_t> acc(static_cast<size_t>(nhwc_ ? d.c : 1));
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < (nhwc_ ? 1 : d.c); ++c)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              std::fill(acc.begin(), acc.end(), 0);
              int64_t count = 0;
              const int64_t hb = i * g.strides[0] - g.pad_begin[0], wb = j * g.strides[1] - g.pad_begin[1];
              for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
                for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
                  const int64_t h = hb + kh * g.dilations[0], w = wb + kw * g.dilations[1];
                  if (h < 0 || h >= d.h || w < 0 || w >= d.w) continue;
                  ++count;
                  if (nhwc_) simd::SumInto(acc.data(), px + ((n * d.h + h) * d.w + w) * d.c, d.c);
                  else acc[0] += px[((n * d.c + c) * d.h + h) * d.w + w];
                }
              using T = std::remove_pointer_t<decltype(py)>;
              if (nhwc_) {
                T* o = py + ((n * oh + i) * ow + j) * d.c;
                for (int64_t k = 0; k < d.c; ++k) o[k] = static_cast<T>(out_value(acc[k], count));
              } else {
                py[((n * d.c + c) * oh + i) * ow + j] = static_cast<T>(out_value(acc[0], count));
              }
            }
    };
    auto with_y = [&](const auto* px) {
      if (y_.type == DataType::kUInt8) run(px, y.data<uint8_t>());
      else run(px, y.data<int8_t>());
    };
    if (x_.type == DataType::kUInt8) with_y(x->data<uint8_t>());
    else with_y(x->data<int8_t>());
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  nn::WindowAttrs attrs_;
  QParam x_, y_;
  bool nhwc_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> MakeQAveragePool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(nn::WindowAttrs attrs, nn::ParseWindowAttrs(info, true));
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  if (attrs.kernel_shape.size() != 2) return info.Invalid("QAveragePool takes 2-D windows only");
  if (info.GetInt("count_include_pad", 0) != 0) return info.Invalid("count_include_pad must be 0");
  IL_ASSIGN_OR_RETURN(QParam x, ConstQParam(info, 1, 2, DataType::kUInt8, "x"));
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 3, 4, DataType::kUInt8, "y"));
  return std::unique_ptr<Kernel>(std::make_unique<QAveragePoolKernel>(std::move(attrs), x, y, nhwc));
}

namespace {

class QGlobalAveragePoolKernel final : public Kernel {
 public:
  QGlobalAveragePoolKernel(QParam x, QParam y, bool nhwc) : x_(x), y_(y), nhwc_(nhwc) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != x_.type || x->rank() != 4) return ctx.Invalid("X must be a rank-4 tensor of its zero point's dtype");
    const Nchw d = Logical(*x, nhwc_);
    IL_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateUninit(y_.type, nhwc_ ? Shape{d.n, 1, 1, d.c} : Shape{d.n, d.c, 1, 1}));
    const int64_t hw = d.h * d.w;
    std::vector<int32_t> acc(static_cast<size_t>(d.n * d.c), 0);
    auto sum = [&](const auto* p) {
      if (nhwc_) {
        for (int64_t n = 0; n < d.n; ++n)
          for (int64_t s = 0; s < hw; ++s) simd::SumInto(acc.data() + n * d.c, p + (n * hw + s) * d.c, d.c);
      } else {
        for (int64_t k = 0; k < d.n * d.c; ++k) {
          int32_t t = 0;
          for (int64_t s = 0; s < hw; ++s) t += p[k * hw + s];
          acc[k] = t;
        }
      }
    };
    if (x_.type == DataType::kUInt8) sum(x->data<uint8_t>());
    else sum(x->data<int8_t>());
    // y = q((mean - x_zp) * x_scale); both layouts store [n][c] contiguously.
    const float f = x_.scale / y_.scale / static_cast<float>(std::max<int64_t>(hw, 1));
    for (int64_t k = 0; k < d.n * d.c; ++k) {
      float v = std::nearbyint((static_cast<float>(acc[k]) - static_cast<float>(x_.zp * hw)) * f) + static_cast<float>(y_.zp);
      v = std::min(std::max(v, Lo(y_.type)), Hi(y_.type));
      if (y_.type == DataType::kUInt8) y.data<uint8_t>()[k] = static_cast<uint8_t>(v);
      else y.data<int8_t>()[k] = static_cast<int8_t>(v);
    }
    ctx.SetOutput(0, std::move(y));
    return Status::Ok();
  }

 private:
  QParam x_, y_;
  bool nhwc_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> MakeQGlobalAveragePool(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(bool nhwc, NhwcFromInfo(info));
  IL_ASSIGN_OR_RETURN(QParam x, ConstQParam(info, 1, 2, DataType::kUInt8, "x"));
  IL_ASSIGN_OR_RETURN(QParam y, ConstQParam(info, 3, 4, DataType::kUInt8, "y"));
  return std::unique_ptr<Kernel>(std::make_unique<QGlobalAveragePoolKernel>(x, y, nhwc));
}

}  // namespace int8
}  // namespace dnnl_kernels
}  // namespace inferloop
