// GridSample (opsets 16, 20, 22) for any number of spatial dims (opset 16: 2-D only).
//
// For each output location the grid gives normalized coordinates in [-1, 1] (x first, i.e. the
// innermost spatial axis first). They are denormalized, adjusted for the padding mode and then
// sampled with nearest / linear / cubic (Keys, a = -0.75) weights; taps outside the input read
// zeros, the clamped border, or the reflected index, following ONNX's reference.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/image_common.h"

namespace inferloop {

void RegisterGridSampleKernels(KernelRegistry& r);

namespace {

using namespace image_internal;

enum class GsMode { kNearest, kLinear, kCubic };
enum class GsPad { kZeros, kBorder, kReflection };

constexpr int kMaxSpatial = 8;

template <typename C>
C Reflect(C x, C lo, C hi) {
  const C rng = hi - lo;
  if (!(rng > 0)) return lo;
  if (x < lo) {
    const C dx = lo - x;
    const C n = std::floor(dx / rng);
    const C r = dx - n * rng;
    return std::fmod(n, C(2)) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const C dx = x - hi;
    const C n = std::floor(dx / rng);
    const C r = dx - n * rng;
    return std::fmod(n, C(2)) == 0 ? hi - r : lo + r;
  }
  return x;
}

template <typename C>
void CubicCoeffs(C t, C* c) {
  const C a = C(-0.75);
  t = std::fabs(t);
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

struct GsConfig {
  GsMode mode = GsMode::kLinear;
  GsPad pad = GsPad::kZeros;
  bool align_corners = false;
  bool only_2d = false;
};

// Per-dimension taps for one sample: source index (or -1 for "reads zero") and weight.
template <typename C>
struct Taps {
  int n = 0;
  int64_t idx[4];
  C w[4];
};

template <typename C>
class GridSampler {
 public:
  GridSampler(const GsConfig& cfg, int64_t len) : cfg_(cfg), len_(len) {
    lo_ = cfg.align_corners ? C(0) : C(-0.5);
    hi_ = cfg.align_corners ? static_cast<C>(len - 1) : static_cast<C>(len) - C(0.5);
  }

  // Index to read for integer position i (after the coordinate was adjusted), -1 for zero.
  int64_t PixelIndex(int64_t i) const {
    switch (cfg_.pad) {
      case GsPad::kZeros: return (i >= 0 && i < len_) ? i : -1;
      case GsPad::kBorder: return std::clamp<int64_t>(i, 0, len_ - 1);
      case GsPad::kReflection: {
        C v = Reflect<C>(static_cast<C>(i), lo_, hi_);
        int64_t k = static_cast<int64_t>(v);  // truncation, as the reference's int()
        return std::clamp<int64_t>(k, 0, len_ - 1);
      }
    }
    return -1;
  }

  void Compute(C g, Taps<C>& t) const {
    const C l = static_cast<C>(len_);
    C x = cfg_.align_corners ? (g + 1) / 2 * (l - 1) : ((g + 1) * l - 1) / 2;
    if (cfg_.mode == GsMode::kNearest) x = std::nearbyint(x);
    if (!(x >= lo_ && x <= hi_)) {
      if (cfg_.pad == GsPad::kBorder) x = std::clamp(x, C(0), l - 1);
      else if (cfg_.pad == GsPad::kReflection) x = Reflect<C>(x, lo_, hi_);
    }
    // Keep coordinates in a range where integer conversion is defined; taps that far out read
    // zeros (or the clamped border) either way.
    const C lim = l + 8;
    if (!(x > -lim)) x = -lim;
    if (x > lim) x = lim;
    if (cfg_.mode == GsMode::kNearest) {
      t.n = 1;
      t.idx[0] = PixelIndex(static_cast<int64_t>(x));
      t.w[0] = 1;
      return;
    }
    const C f = std::floor(x);
    const int64_t x0 = static_cast<int64_t>(f);
    if (cfg_.mode == GsMode::kLinear) {
      t.n = 2;
      const C d = x - f;
      t.w[0] = 1 - d;
      t.w[1] = d;
      t.idx[0] = PixelIndex(x0);
      t.idx[1] = PixelIndex(x0 + 1);
      return;
    }
    t.n = 4;
    CubicCoeffs<C>(x - f, t.w);
    for (int k = 0; k < 4; ++k) t.idx[k] = PixelIndex(x0 - 1 + k);
  }

 private:
  GsConfig cfg_;
  int64_t len_;
  C lo_, hi_;
};

// The sizes both samplers walk: X [N, Cn, in spatial dims...] read through a grid
// [N, out spatial dims..., S].
struct GridLayout {
  GridLayout(const Shape& xs, const Shape& gs) : S(static_cast<int>(xs.size()) - 2), N(xs[0]), Cn(xs[1]), in_strides(S, 1) {
    for (int d = 0; d < S; ++d) {
      in_spatial *= xs[2 + d];
      out_spatial *= gs[1 + d];
    }
    for (int d = S - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * xs[3 + d];
  }
  int S;
  int64_t N, Cn;
  int64_t in_spatial = 1, out_spatial = 1;
  std::vector<int64_t> in_strides;  // of X's spatial dims, in elements
};

template <typename C>
Status RunGridSample(KernelContext& ctx, const GsConfig& cfg, const C* xdata, const C* grid, C* ydata,
                     const Shape& xs, const Shape& gs) {
  const GridLayout l(xs, gs);
  const int S = l.S;
  const int64_t N = l.N, Cn = l.Cn, in_spatial = l.in_spatial, out_spatial = l.out_spatial;
  const std::vector<int64_t>& in_strides = l.in_strides;
  std::vector<GridSampler<C>> samplers;
  for (int d = 0; d < S; ++d) samplers.emplace_back(cfg, xs[2 + d]);
  Taps<C> taps[kMaxSpatial];
  int cnt[kMaxSpatial];
  for (int64_t n = 0; n < N; ++n) {
    const C* g = grid + n * out_spatial * S;
    for (int64_t p = 0; p < out_spatial; ++p) {
      const C* gp = g + p * S;
      bool any_empty = false;
      // Grid's last axis lists x (innermost spatial dim) first.
      for (int d = 0; d < S; ++d) samplers[d].Compute(gp[S - 1 - d], taps[d]);
      for (int d = 0; d < S; ++d) any_empty |= taps[d].n == 0;
      for (int64_t c = 0; c < Cn; ++c) {
        const C* src = xdata + (n * Cn + c) * in_spatial;
        C acc = 0;
        if (!any_empty) {
          std::fill(cnt, cnt + S, 0);
          while (true) {
            C w = 1;
            int64_t off = 0;
            bool zero = false;
            for (int d = 0; d < S; ++d) {
              const int64_t i = taps[d].idx[cnt[d]];
              if (i < 0) {
                zero = true;
                break;
              }
              w *= taps[d].w[cnt[d]];
              off += i * in_strides[d];
            }
            if (!zero) acc += w * src[off];
            int d = S - 1;
            for (; d >= 0; --d) {
              if (++cnt[d] < taps[d].n) break;
              cnt[d] = 0;
            }
            if (d < 0) break;
          }
        }
        ydata[(n * Cn + c) * out_spatial + p] = acc;
      }
    }
  }
  return Status::Ok();
}

// Nearest mode for any element type: a gather (zeros padding reads a zero element).
template <typename T>
void NearestGridGather(const GsConfig& cfg, const T* xdata, const double* grid, T* ydata, const Shape& xs, const Shape& gs) {
  const GridLayout l(xs, gs);
  const int S = l.S;
  const int64_t N = l.N, Cn = l.Cn, in_spatial = l.in_spatial, out_spatial = l.out_spatial;
  const std::vector<int64_t>& in_strides = l.in_strides;
  std::vector<GridSampler<double>> samplers;
  for (int d = 0; d < S; ++d) samplers.emplace_back(cfg, xs[2 + d]);
  Taps<double> t;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t p = 0; p < out_spatial; ++p) {
      const double* gp = grid + (n * out_spatial + p) * S;
      int64_t off = 0;
      for (int d = 0; d < S && off >= 0; ++d) {
        samplers[d].Compute(gp[S - 1 - d], t);
        off = t.idx[0] < 0 ? -1 : off + t.idx[0] * in_strides[d];
      }
      for (int64_t c = 0; c < Cn; ++c)
        ydata[(n * Cn + c) * out_spatial + p] = off < 0 ? T{} : xdata[(n * Cn + c) * in_spatial + off];
    }
  }
}

class GridSampleKernel : public Kernel {
 public:
  explicit GridSampleKernel(GsConfig cfg) : cfg_(cfg) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    IL_ASSIGN_OR_RETURN(const Tensor* grid, ctx.RequireInput(1));
    const int r = x->rank();
    if (r < 3 || r - 2 > kMaxSpatial)
      return ctx.Invalid("expected X of rank 3 to " + std::to_string(kMaxSpatial + 2) + ", got shape " + ShapeToString(x->shape()));
    if (cfg_.only_2d && r != 4) return ctx.Invalid("expected 4-D X in this opset, got shape " + ShapeToString(x->shape()));
    const int S = r - 2;
    if (grid->rank() != r || grid->dim(0) != x->dim(0) || grid->dim(r - 1) != S)
      return ctx.Invalid("expected grid of shape [" + std::to_string(x->dim(0)) + ", ..., " + std::to_string(S) + "] with rank " +
                         std::to_string(r) + ", got " + ShapeToString(grid->shape()));
    switch (grid->dtype()) {
      case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: case DataType::kBFloat16: break;
      default: return UnsupportedType("GridSample grid", grid->dtype());
    }
    Shape out_shape = {x->dim(0), x->dim(1)};
    for (int d = 0; d < S; ++d) out_shape.push_back(grid->dim(1 + d));
    for (int d = 0; d < S; ++d)
      if (x->dim(2 + d) == 0 && ShapeElementCount(out_shape) > 0)
        return ctx.Invalid("cannot sample from an empty input of shape " + ShapeToString(x->shape()));
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x->dtype(), out_shape));
    if (out.size() == 0) {
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    if (cfg_.mode == GsMode::kNearest && (!IsInterpolatable(x->dtype()) || ComputeTypeFor(x->dtype()) == DataType::kDouble)) {
      if (x->dtype() == DataType::kString) return UnsupportedType("GridSample", x->dtype());
      IL_ASSIGN_OR_RETURN(std::vector<double> g, ReadDoubles(*grid, "GridSample grid"));
      IL_RETURN_IF_ERROR(DispatchBySize(
          x->dtype(),
          [&](auto tag) {
            using T = typename decltype(tag)::type;
            NearestGridGather<T>(cfg_, x->data<T>(), g.data(), out.data<T>(), x->shape(), grid->shape());
            return Status::Ok();
          },
          "GridSample"));
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    if (!IsInterpolatable(x->dtype())) return UnsupportedType("GridSample", x->dtype());
    const DataType ct = ComputeTypeFor(x->dtype()) == DataType::kDouble || grid->dtype() == DataType::kDouble
                            ? DataType::kDouble
                            : DataType::kFloat;
    if (ct == DataType::kFloat) return Run<float>(ctx, *x, *grid, out);
    return Run<double>(ctx, *x, *grid, out);
  }

 private:
  template <typename C>
  Status Run(KernelContext& ctx, const Tensor& x, const Tensor& grid, Tensor& out) const {
    const DataType ct = std::is_same_v<C, float> ? DataType::kFloat : DataType::kDouble;
    Tensor xc = x, gc = grid;
    if (x.dtype() != ct) {
      IL_ASSIGN_OR_RETURN(xc, LoadAsCompute(ctx, x, ct, "GridSample"));
    }
    if (grid.dtype() != ct) {
      IL_ASSIGN_OR_RETURN(gc, LoadAsCompute(ctx, grid, ct, "GridSample"));
    }
    if (out.dtype() == ct) {
      IL_RETURN_IF_ERROR(RunGridSample<C>(ctx, cfg_, xc.data<C>(), gc.data<C>(), out.data<C>(), x.shape(), grid.shape()));
    } else {
      IL_ASSIGN_OR_RETURN(Tensor tmp, ctx.Allocate(ct, out.shape()));
      IL_RETURN_IF_ERROR(RunGridSample<C>(ctx, cfg_, xc.data<C>(), gc.data<C>(), tmp.data<C>(), x.shape(), grid.shape()));
      IL_RETURN_IF_ERROR(StoreFromCompute<C>(tmp.data<C>(), out, "GridSample"));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }

  GsConfig cfg_;
};

}  // namespace

void RegisterGridSampleKernels(KernelRegistry& r) {
  r.Register("", "GridSample", 16, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    GsConfig cfg;
    const bool old = info.opset() < 20;
    cfg.only_2d = old;
    const std::string mode = info.GetString("mode", old ? "bilinear" : "linear");
    if (mode == "nearest") cfg.mode = GsMode::kNearest;
    else if (mode == (old ? "bilinear" : "linear")) cfg.mode = GsMode::kLinear;
    else if (mode == (old ? "bicubic" : "cubic")) cfg.mode = GsMode::kCubic;
    else return info.Invalid("unsupported mode '" + mode + "'");
    const std::string pad = info.GetString("padding_mode", "zeros");
    if (pad == "zeros") cfg.pad = GsPad::kZeros;
    else if (pad == "border") cfg.pad = GsPad::kBorder;
    else if (pad == "reflection") cfg.pad = GsPad::kReflection;
    else return info.Invalid("unsupported padding_mode '" + pad + "'");
    const int64_t ac = info.GetInt("align_corners", 0);
    if (ac != 0 && ac != 1) return info.Invalid("align_corners must be 0 or 1, got " + std::to_string(ac));
    cfg.align_corners = ac == 1;
    return std::unique_ptr<Kernel>(std::make_unique<GridSampleKernel>(cfg));
  });
}

}  // namespace inferloop
