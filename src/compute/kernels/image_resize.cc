// Resize (opsets 10-19) and Upsample (opsets 7-10).
//
// Resizing is separable: every resized axis is handled by one 1-D pass over the tensor, with a
// per-axis table of source indices and weights computed once per call. Nearest mode is a pure
// gather (any element type). Linear and cubic interpolate in float (double for double and wide
// integers) and round/saturate back for integer types, as ONNX's reference does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/image_common.h"

namespace inferloop {

void RegisterResizeKernels(KernelRegistry& r);

namespace {

using namespace image_internal;

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize, kTfHalfPixelForNn };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class Policy { kStretch, kNotLarger, kNotSmaller };

struct ResizeConfig {
  bool upsample = false;  // Upsample op
  int64_t opset = 19;
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  Policy policy = Policy::kStretch;
  bool has_axes = false;
  std::vector<int64_t> axes;          // raw attribute values
  std::vector<float> attr_scales;     // Upsample-7
  int roi_input = -1, scales_input = -1, sizes_input = -1;
};

// Per-axis resampling plan.
struct AxisPlan {
  int64_t in = 0, out = 0;
  bool identity = true;
  int taps = 0;
  std::vector<int64_t> idx;      // out * taps source indices (already clamped), or out for nearest
  std::vector<double> w;         // out * taps weights
  std::vector<uint8_t> extrap;   // out: 1 where tf_crop_and_resize extrapolates
};

double SourceCoord(Coord c, double y, double scale, int64_t in, int64_t out_int, double roi0, double roi1) {
  const double out_w = scale * static_cast<double>(in);
  const double l = static_cast<double>(in);
  switch (c) {
    case Coord::kAlignCorners:
      return out_w == 1 ? 0.0 : y * (l - 1) / (out_w - 1);
    case Coord::kAsymmetric:
      return y / scale;
    case Coord::kTfCropAndResize: {
      double x = out_w == 1 ? (roi1 - roi0) * (l - 1) / 2 : y * (roi1 - roi0) * (l - 1) / (out_w - 1);
      return x + roi0 * (l - 1);
    }
    case Coord::kPytorchHalfPixel:
      return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    case Coord::kHalfPixel:
      return (y + 0.5) / scale - 0.5;
    case Coord::kTfHalfPixelForNn:
      return (y + 0.5) / scale;
    case Coord::kHalfPixelSymmetric: {
      double adjustment = static_cast<double>(out_int) / out_w;
      double offset = l / 2 * (1 - adjustment);
      return offset + (y + 0.5) / scale - 0.5;
    }
  }
  return 0;
}

int64_t NearestIndex(double x, NearestMode m, bool downsample) {
  const double f = std::floor(x);
  if (m == NearestMode::kLegacy) return static_cast<int64_t>(downsample ? std::ceil(x) : f);
  if (x == f) return static_cast<int64_t>(f);
  const double r = x - f;
  switch (m) {
    case NearestMode::kRoundPreferFloor: return static_cast<int64_t>(r <= 0.5 ? f : f + 1);
    case NearestMode::kRoundPreferCeil: return static_cast<int64_t>(r < 0.5 ? f : f + 1);
    case NearestMode::kFloor: return static_cast<int64_t>(f);
    case NearestMode::kCeil: return static_cast<int64_t>(f + 1);
    default: return static_cast<int64_t>(f);
  }
}

double CubicKernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Builds the plan for one axis. `scale` is the scale used by the coordinate transform.
Status BuildAxisPlan(const ResizeConfig& cfg, int64_t in, int64_t out, double scale, double roi0, double roi1,
                     AxisPlan& p) {
  p.in = in;
  p.out = out;
  // Same test as ONNX's reference: an axis left alone is not resampled at all.
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); };
  const bool roi_trivial = cfg.coord != Coord::kTfCropAndResize || (roi0 == 0.0 && close(roi1, 1.0));
  p.identity = close(scale, 1.0) && in == out && roi_trivial;
  if (p.identity && cfg.mode != Mode::kNearest) return Status::Ok();
  if (out > 0 && in <= 0) return Status::InvalidArgument("cannot resize an empty dimension to " + std::to_string(out));
  const bool tf = cfg.coord == Coord::kTfCropAndResize;
  p.extrap.assign(static_cast<size_t>(out), 0);
  const double lim = static_cast<double>(in) + 8;  // keeps coordinates in int64 range; taps clamp anyway
  if (cfg.mode == Mode::kNearest) {
    p.taps = 1;
    p.idx.resize(static_cast<size_t>(out));
    for (int64_t y = 0; y < out; ++y) {
      if (p.identity) {
        p.idx[y] = y;
        continue;
      }
      double x = SourceCoord(cfg.coord, static_cast<double>(y), scale, in, out, roi0, roi1);
      if (tf && (x < 0 || x > static_cast<double>(in - 1))) p.extrap[y] = 1;
      if (!(x > -lim)) x = -lim;  // also maps NaN
      if (x > lim) x = lim;
      int64_t i = NearestIndex(x, cfg.nearest, scale < 1);
      p.idx[y] = std::clamp<int64_t>(i, 0, in - 1);
    }
    p.identity = false;
    return Status::Ok();
  }
  const double s = cfg.antialias ? std::min(scale, 1.0) : 1.0;
  int64_t start_off;
  if (cfg.mode == Mode::kLinear)
    start_off = cfg.antialias ? static_cast<int64_t>(std::floor(-1 / s)) + 1 : 0;
  else
    start_off = cfg.antialias ? static_cast<int64_t>(std::floor(-2 / s)) + 1 : -1;
  const int64_t n = 2 - 2 * start_off;
  if (n <= 0 || n > 4 * in + 16)
    return Status::InvalidArgument("scale " + std::to_string(scale) + " is too small for antialiased resize of length " +
                                   std::to_string(in));
  p.taps = static_cast<int>(n);
  p.idx.resize(static_cast<size_t>(out * n));
  p.w.resize(static_cast<size_t>(out * n));
  const double lim2 = lim + static_cast<double>(n);
  for (int64_t y = 0; y < out; ++y) {
    double x = SourceCoord(cfg.coord, static_cast<double>(y), scale, in, out, roi0, roi1);
    if (tf && (x < 0 || x > static_cast<double>(in - 1))) p.extrap[y] = 1;
    if (!(x > -lim2)) x = -lim2;
    if (x > lim2) x = lim2;
    const double f = std::floor(x);
    const int64_t start = static_cast<int64_t>(f) - n / 2 + (x == f ? 0 : 1);
    double* w = &p.w[y * n];
    int64_t* idx = &p.idx[y * n];
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = start + k;
      const double d = (static_cast<double>(i) - x) * s;
      w[k] = cfg.mode == Mode::kLinear ? std::max(0.0, 1 - std::fabs(d)) : CubicKernel(d, cfg.cubic_a);
      sum += w[k];
    }
    if (cfg.antialias && sum != 0)
      for (int64_t k = 0; k < n; ++k) w[k] /= sum;
    if (cfg.exclude_outside) {
      sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = start + k;
        if (i < 0 || i >= in) w[k] = 0;
        sum += w[k];
      }
      if (sum == 0) sum = 1;
      for (int64_t k = 0; k < n; ++k) w[k] /= sum;
    }
    for (int64_t k = 0; k < n; ++k) idx[k] = std::clamp<int64_t>(start + k, 0, in - 1);
  }
  return Status::Ok();
}

// One interpolation pass along an axis: src is [outer, in, inner], dst is [outer, out, inner].
template <typename C>
void InterpolatePass(const C* src, C* dst, int64_t outer, int64_t inner, const AxisPlan& p, C extrap) {
  const int64_t n = p.taps;
  for (int64_t o = 0; o < outer; ++o) {
    const C* s = src + o * p.in * inner;
    C* d0 = dst + o * p.out * inner;
    for (int64_t y = 0; y < p.out; ++y) {
      C* d = d0 + y * inner;
      if (p.extrap[y]) {
        std::fill(d, d + inner, extrap);
        continue;
      }
      std::fill(d, d + inner, C(0));
      for (int64_t k = 0; k < n; ++k) {
        const C w = static_cast<C>(p.w[y * n + k]);
        if (w == C(0)) continue;
        const C* sk = s + p.idx[y * n + k] * inner;
        for (int64_t i = 0; i < inner; ++i) d[i] += w * sk[i];
      }
    }
  }
}

// Nearest: a gather of whole elements. extrap_elem (one element of T) fills extrapolated spots.
template <typename T>
void NearestGather(const T* src, T* dst, const Shape& in_shape, const Shape& out_shape, const std::vector<AxisPlan>& plans,
                   const T* extrap_elem) {
  const int r = static_cast<int>(in_shape.size());
  const int64_t total = ShapeElementCount(out_shape);
  if (total <= 0) return;
  if (r == 0) {
    dst[0] = src[0];
    return;
  }
  const std::vector<int64_t> in_strides = StridesOf(in_shape);
  // Per-axis source offsets; -1 marks extrapolation.
  std::vector<std::vector<int64_t>> off(r);
  for (int a = 0; a < r; ++a) {
    off[a].resize(static_cast<size_t>(out_shape[a]));
    for (int64_t y = 0; y < out_shape[a]; ++y)
      off[a][y] = plans[a].extrap.empty() || !plans[a].extrap[y] ? plans[a].idx[y] * in_strides[a] : -1;
  }
  std::vector<int64_t> pos(r, 0);
  std::vector<int64_t> base(r + 1, 0);  // base[a]: offset from axes < a; -1 if extrapolated
  auto recompute = [&](int from) {
    for (int a = from; a < r - 1; ++a) {
      int64_t o = off[a][pos[a]];
      base[a + 1] = (base[a] < 0 || o < 0) ? -1 : base[a] + o;
    }
  };
  recompute(0);
  const int64_t last = out_shape[r - 1];
  const std::vector<int64_t>& lo = off[r - 1];
  for (int64_t i = 0; i < total; i += last) {
    const int64_t b = base[r - 1];
    T* d = dst + i;
    if (b < 0) {
      for (int64_t k = 0; k < last; ++k) d[k] = *extrap_elem;
    } else {
      for (int64_t k = 0; k < last; ++k) d[k] = lo[k] < 0 ? *extrap_elem : src[b + lo[k]];
    }
    int a = r - 2;
    for (; a >= 0; --a) {
      if (++pos[a] < out_shape[a]) break;
      pos[a] = 0;
    }
    if (a < 0) break;
    recompute(a);
  }
}

Status ParseConfig(const KernelInfo& info, bool upsample, ResizeConfig& cfg) {
  cfg.upsample = upsample;
  cfg.opset = info.opset();
  const std::string mode = info.GetString("mode", "nearest");
  if (mode == "nearest") cfg.mode = Mode::kNearest;
  else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") cfg.mode = Mode::kLinear;
  else if (mode == "cubic" && !upsample && cfg.opset >= 11) cfg.mode = Mode::kCubic;
  else return info.Invalid("unsupported mode '" + mode + "'");
  if (upsample || cfg.opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates, legacy nearest rounding.
    cfg.coord = Coord::kAsymmetric;
    cfg.nearest = NearestMode::kLegacy;
    if (upsample && info.opset() < 9) {
      cfg.attr_scales = info.GetFloats("scales");
      if (cfg.attr_scales.empty()) return info.Invalid("attribute 'scales' is required");
    } else {
      cfg.scales_input = 1;
    }
    return Status::Ok();
  }
  const std::string ctm = info.GetString("coordinate_transformation_mode", "half_pixel");
  if (ctm == "half_pixel") cfg.coord = Coord::kHalfPixel;
  else if (ctm == "half_pixel_symmetric" && cfg.opset >= 19) cfg.coord = Coord::kHalfPixelSymmetric;
  else if (ctm == "pytorch_half_pixel") cfg.coord = Coord::kPytorchHalfPixel;
  else if (ctm == "align_corners") cfg.coord = Coord::kAlignCorners;
  else if (ctm == "asymmetric") cfg.coord = Coord::kAsymmetric;
  else if (ctm == "tf_crop_and_resize") cfg.coord = Coord::kTfCropAndResize;
  else if (ctm == "tf_half_pixel_for_nn" && cfg.opset < 13) cfg.coord = Coord::kTfHalfPixelForNn;
  else return info.Invalid("unsupported coordinate_transformation_mode '" + ctm + "'");
  const std::string nm = info.GetString("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor") cfg.nearest = NearestMode::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil") cfg.nearest = NearestMode::kRoundPreferCeil;
  else if (nm == "floor") cfg.nearest = NearestMode::kFloor;
  else if (nm == "ceil") cfg.nearest = NearestMode::kCeil;
  else return info.Invalid("unsupported nearest_mode '" + nm + "'");
  cfg.cubic_a = info.GetFloat("cubic_coeff_a", -0.75f);
  int64_t eo = info.GetInt("exclude_outside", 0);
  if (eo != 0 && eo != 1) return info.Invalid("exclude_outside must be 0 or 1, got " + std::to_string(eo));
  cfg.exclude_outside = eo == 1;
  cfg.extrapolation = info.GetFloat("extrapolation_value", 0.0f);
  if (cfg.opset >= 18) {
    int64_t aa = info.GetInt("antialias", 0);
    if (aa != 0 && aa != 1) return info.Invalid("antialias must be 0 or 1, got " + std::to_string(aa));
    cfg.antialias = aa == 1 && cfg.mode != Mode::kNearest;
    const std::string pol = info.GetString("keep_aspect_ratio_policy", "stretch");
    if (pol == "stretch") cfg.policy = Policy::kStretch;
    else if (pol == "not_larger") cfg.policy = Policy::kNotLarger;
    else if (pol == "not_smaller") cfg.policy = Policy::kNotSmaller;
    else return info.Invalid("unsupported keep_aspect_ratio_policy '" + pol + "'");
    if (info.has_attr("axes")) {
      cfg.has_axes = true;
      cfg.axes = info.GetInts("axes");
    }
  }
  cfg.roi_input = 1;
  cfg.scales_input = 2;
  cfg.sizes_input = 3;
  return Status::Ok();
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(ResizeConfig cfg) : cfg_(std::move(cfg)) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    const int r = x->rank();
    const Shape& in_shape = x->shape();

    // Axes being resized, in processing order.
    std::vector<int> axes;
    if (cfg_.has_axes) {
      std::set<int> seen;
      for (int64_t a : cfg_.axes) {
        if (a < -r || a >= r)
          return ctx.Invalid("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
        int aa = static_cast<int>(a < 0 ? a + r : a);
        if (!seen.insert(aa).second) return ctx.Invalid("axis " + std::to_string(a) + " is repeated in 'axes'");
        axes.push_back(aa);
      }
    } else {
      for (int a = 0; a < r; ++a) axes.push_back(a);
    }
    const size_t na = axes.size();

    // Scales or sizes.
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    if (!cfg_.attr_scales.empty()) {
      scales.assign(cfg_.attr_scales.begin(), cfg_.attr_scales.end());
    } else {
      const Tensor* st = cfg_.scales_input >= 0 ? ctx.input(cfg_.scales_input) : nullptr;
      const Tensor* sz = cfg_.sizes_input >= 0 ? ctx.input(cfg_.sizes_input) : nullptr;
      if (st && st->size() == 0) st = nullptr;
      if (sz && sz->size() == 0) sz = nullptr;
      if (st && sz) return ctx.Invalid("only one of 'scales' and 'sizes' may be given");
      if (st) {
        IL_ASSIGN_OR_RETURN(scales, ReadDoubles(*st, "Resize scales"));
      } else if (sz) {
        IL_ASSIGN_OR_RETURN(sizes, ReadInt64s(*sz, "Resize sizes"));
      } else {
        return ctx.Invalid("one of 'scales' and 'sizes' must be given");
      }
    }
    if (!scales.empty() && scales.size() != na)
      return ctx.Invalid("expected " + std::to_string(na) + " scales, got " + std::to_string(scales.size()));
    if (!sizes.empty() && sizes.size() != na)
      return ctx.Invalid("expected " + std::to_string(na) + " sizes, got " + std::to_string(sizes.size()));

    // Region of interest (tf_crop_and_resize only).
    std::vector<double> roi_start(r, 0.0), roi_end(r, 1.0);
    if (cfg_.coord == Coord::kTfCropAndResize && cfg_.roi_input >= 0) {
      const Tensor* rt = ctx.input(cfg_.roi_input);
      if (rt && rt->size() > 0) {
        if (rt->size() != static_cast<int64_t>(2 * na))
          return ctx.Invalid("expected roi of " + std::to_string(2 * na) + " values, got " + std::to_string(rt->size()));
        IL_ASSIGN_OR_RETURN(std::vector<double> roi, ReadDoubles(*rt, "Resize roi"));
        for (size_t i = 0; i < na; ++i) {
          roi_start[axes[i]] = roi[i];
          roi_end[axes[i]] = roi[na + i];
        }
      }
    }

    // Output shape and per-axis scales.
    Shape out_shape = in_shape;
    std::vector<double> axis_scale(r, 1.0);
    if (!scales.empty()) {
      for (size_t i = 0; i < na; ++i) {
        const double s = scales[i];
        if (!(s > 0) || !std::isfinite(s)) return ctx.Invalid("scales must be positive, got " + std::to_string(s));
        const double o = std::floor(s * static_cast<double>(in_shape[axes[i]]));
        if (o > 4e18) return ctx.Invalid("output dimension overflows");
        axis_scale[axes[i]] = s;
        out_shape[axes[i]] = static_cast<int64_t>(o);
      }
    } else {
      for (size_t i = 0; i < na; ++i) {
        if (sizes[i] < 0) return ctx.Invalid("sizes must be non-negative, got " + std::to_string(sizes[i]));
        if (in_shape[axes[i]] == 0 && sizes[i] != 0)
          return ctx.Invalid("cannot resize an empty dimension to " + std::to_string(sizes[i]));
      }
      if (cfg_.policy == Policy::kStretch) {
        for (size_t i = 0; i < na; ++i) {
          const int a = axes[i];
          out_shape[a] = sizes[i];
          axis_scale[a] = in_shape[a] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in_shape[a]);
        }
      } else {
        double s = cfg_.policy == Policy::kNotLarger ? INFINITY : -INFINITY;
        for (size_t i = 0; i < na; ++i) {
          const int a = axes[i];
          if (in_shape[a] == 0) continue;
          const double si = static_cast<double>(sizes[i]) / static_cast<double>(in_shape[a]);
          s = cfg_.policy == Policy::kNotLarger ? std::min(s, si) : std::max(s, si);
        }
        if (!std::isfinite(s)) s = 1.0;
        for (size_t i = 0; i < na; ++i) {
          const int a = axes[i];
          axis_scale[a] = s;
          out_shape[a] = static_cast<int64_t>(s * static_cast<double>(in_shape[a]) + 0.5);
        }
      }
    }

    // Per-axis plans.
    std::vector<AxisPlan> plans(r);
    for (int a = 0; a < r; ++a) {
      Status st = BuildAxisPlan(cfg_, in_shape[a], out_shape[a], axis_scale[a], roi_start[a], roi_end[a], plans[a]);
      if (!st.ok()) return ctx.Invalid(st.message());
    }

    if (cfg_.mode == Mode::kNearest) return ComputeNearest(ctx, *x, out_shape, plans);
    return ComputeInterpolated(ctx, *x, out_shape, plans, axes);
  }

 private:
  Status ComputeNearest(KernelContext& ctx, const Tensor& x, const Shape& out_shape, const std::vector<AxisPlan>& plans) const {
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x.dtype(), out_shape));
    if (out.size() == 0) {
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
    bool any_extrap = false;
    for (const auto& p : plans)
      for (uint8_t e : p.extrap) any_extrap |= e != 0;
    Tensor extrap_elem;
    if (any_extrap) {
      auto c = CastTensor(Tensor::Scalar(static_cast<float>(cfg_.extrapolation)), x.dtype());
      if (!c.ok()) return ctx.Invalid("cannot convert extrapolation_value to " + std::string(DataTypeName(x.dtype())));
      extrap_elem = std::move(c).value();
    }
    if (x.dtype() == DataType::kString) {
      std::string empty;
      NearestGather<std::string>(x.strings(), out.strings(), x.shape(), out_shape, plans,
                                 any_extrap ? extrap_elem.strings() : &empty);
    } else {
      IL_RETURN_IF_ERROR(DispatchBySize(
          x.dtype(),
          [&](auto tag) {
            using T = typename decltype(tag)::type;
            T zero{};
            NearestGather<T>(x.data<T>(), out.data<T>(), x.shape(), out_shape, plans,
                             any_extrap ? extrap_elem.data<T>() : &zero);
            return Status::Ok();
          },
          "Resize"));
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }

  Status ComputeInterpolated(KernelContext& ctx, const Tensor& x, const Shape& out_shape, const std::vector<AxisPlan>& plans,
                             const std::vector<int>& axes) const {
    if (!IsInterpolatable(x.dtype()))
      return UnsupportedType("Resize (linear/cubic)", x.dtype());
    std::vector<int> todo;
    for (int a : axes)
      if (!plans[a].identity) todo.push_back(a);
    if (todo.empty()) {
      ctx.SetOutput(0, x);
      return Status::Ok();
    }
    const DataType ct = ComputeTypeFor(x.dtype());
    if (ct == DataType::kFloat) return Run<float>(ctx, x, out_shape, plans, todo);
    return Run<double>(ctx, x, out_shape, plans, todo);
  }

  template <typename C>
  Status Run(KernelContext& ctx, const Tensor& x, const Shape& out_shape, const std::vector<AxisPlan>& plans,
             const std::vector<int>& todo) const {
    const DataType ct = std::is_same_v<C, float> ? DataType::kFloat : DataType::kDouble;
    Tensor cur;
    if (x.dtype() == ct) {
      cur = x;
    } else {
      IL_ASSIGN_OR_RETURN(cur, LoadAsCompute(ctx, x, ct, "Resize"));
    }
    Shape shape = x.shape();
    for (int a : todo) {
      Shape next_shape = shape;
      next_shape[a] = out_shape[a];
      IL_ASSIGN_OR_RETURN(Tensor next, ctx.Allocate(ct, next_shape));
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < a; ++i) outer *= shape[i];
      for (size_t i = a + 1; i < shape.size(); ++i) inner *= shape[i];
      if (next.size() > 0)
        InterpolatePass<C>(cur.data<C>(), next.data<C>(), outer, inner, plans[a], static_cast<C>(cfg_.extrapolation));
      cur = std::move(next);
      shape = std::move(next_shape);
    }
    if (x.dtype() == ct) {
      ctx.SetOutput(0, std::move(cur));
      return Status::Ok();
    }
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x.dtype(), out_shape));
    IL_RETURN_IF_ERROR(StoreFromCompute<C>(cur.data<C>(), out, "Resize"));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }

  ResizeConfig cfg_;
};

KernelFactory MakeResizeFactory(bool upsample) {
  return [upsample](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    ResizeConfig cfg;
    IL_RETURN_IF_ERROR(ParseConfig(info, upsample, cfg));
    return std::unique_ptr<Kernel>(std::make_unique<ResizeKernel>(std::move(cfg)));
  };
}

}  // namespace

void RegisterResizeKernels(KernelRegistry& r) {
  r.Register("", "Resize", 10, MakeResizeFactory(false));
  r.Register("", "Upsample", 7, MakeResizeFactory(true));
}

}  // namespace inferloop
