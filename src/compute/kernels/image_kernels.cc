// Registration of the image kernel family, plus the smaller image ops: AffineGrid, RoiAlign,
// NonMaxSuppression. Resize/Upsample, GridSample and ImageDecoder live in image_*.cc.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/image_common.h"

namespace inferloop {

void RegisterResizeKernels(KernelRegistry& r);
void RegisterGridSampleKernels(KernelRegistry& r);
void RegisterImageDecoderKernels(KernelRegistry& r);

namespace {

using namespace image_internal;

bool IsFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// ---------------------------------------------------------------------------------------------
// AffineGrid: theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D), size [N, C, H, W] or [N, C, D, H, W].
// Output [N, H, W, 2] or [N, D, H, W, 3]; coordinate order x, y(, z).

Status AffineGridCompute(KernelContext& ctx, bool align_corners) {
  IL_ASSIGN_OR_RETURN(const Tensor* theta, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* size_t_, ctx.RequireInput(1));
  if (!IsFloatType(theta->dtype())) return UnsupportedType("AffineGrid", theta->dtype());
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> size, ReadInt64s(*size_t_, "AffineGrid size"));
  if (size_t_->rank() != 1 || (size.size() != 4 && size.size() != 5))
    return ctx.Invalid("expected size of 4 or 5 values, got shape " + ShapeToString(size_t_->shape()));
  const int S = static_cast<int>(size.size()) - 2;  // 2 or 3 spatial dims
  const int64_t N = size[0];
  if (theta->rank() != 3 || theta->dim(0) != N || theta->dim(1) != S || theta->dim(2) != S + 1)
    return ctx.Invalid("expected theta of shape [" + std::to_string(N) + "," + std::to_string(S) + "," + std::to_string(S + 1) +
                       "], got " + ShapeToString(theta->shape()));
  for (int64_t v : size)
    if (v < 0) return ctx.Invalid("size values must be non-negative, got " + ShapeToString(size));
  Shape out_shape = {N};
  for (int d = 0; d < S; ++d) out_shape.push_back(size[2 + d]);
  out_shape.push_back(S);
  IL_ASSIGN_OR_RETURN(std::vector<double> th, ReadDoubles(*theta, "AffineGrid theta"));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(theta->dtype(), out_shape));
  const int64_t total = out.size();
  if (total == 0) {
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  // Base coordinates along each spatial dim (dims listed outermost first: [D,] H, W).
  std::vector<std::vector<double>> base(S);
  for (int d = 0; d < S; ++d) {
    const int64_t len = size[2 + d];
    base[d].resize(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) {
      if (align_corners) base[d][i] = len > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1) : -1.0;
      else base[d][i] = (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len) - 1.0;
    }
  }
  std::vector<double> res(static_cast<size_t>(total));
  int64_t spatial = 1;
  for (int d = 0; d < S; ++d) spatial *= size[2 + d];
  std::vector<int64_t> pos(S, 0);
  double h[4];
  for (int64_t n = 0; n < N; ++n) {
    const double* t = th.data() + n * S * (S + 1);
    std::fill(pos.begin(), pos.end(), 0);
    for (int64_t p = 0; p < spatial; ++p) {
      // Homogeneous source coordinate: x (innermost), y, (z), 1.
      for (int k = 0; k < S; ++k) h[k] = base[S - 1 - k][pos[S - 1 - k]];
      h[S] = 1.0;
      double* o = res.data() + (n * spatial + p) * S;
      for (int row = 0; row < S; ++row) {
        double acc = 0;
        for (int k = 0; k <= S; ++k) acc += t[row * (S + 1) + k] * h[k];
        o[row] = acc;
      }
      for (int d = S - 1; d >= 0; --d) {
        if (++pos[d] < size[2 + d]) break;
        pos[d] = 0;
      }
    }
  }
  IL_RETURN_IF_ERROR(StoreFromCompute<double>(res.data(), out, "AffineGrid"));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// RoiAlign.

struct RoiAlignConfig {
  bool max_mode = false;
  bool half_pixel = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
};

struct BilinearSample {
  int64_t pos[4];
  double w[4];
};

Status RoiAlignCompute(KernelContext& ctx, const RoiAlignConfig& cfg) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* rois, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(const Tensor* bi, ctx.RequireInput(2));
  if (!IsFloatType(x->dtype())) return UnsupportedType("RoiAlign", x->dtype());
  if (x->rank() != 4) return ctx.Invalid("expected X of rank 4, got shape " + ShapeToString(x->shape()));
  if (rois->rank() != 2 || rois->dim(1) != 4)
    return ctx.Invalid("expected rois of shape [num_rois, 4], got " + ShapeToString(rois->shape()));
  if (bi->rank() != 1 || bi->dim(0) != rois->dim(0))
    return ctx.Invalid("expected batch_indices of shape [" + std::to_string(rois->dim(0)) + "], got " + ShapeToString(bi->shape()));
  const int64_t N = x->dim(0), C = x->dim(1), H = x->dim(2), W = x->dim(3), R = rois->dim(0);
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> batch, ReadInt64s(*bi, "RoiAlign batch_indices"));
  for (int64_t b : batch)
    if (b < 0 || b >= N) return ctx.Invalid("batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(N) + ")");
  IL_ASSIGN_OR_RETURN(std::vector<double> roi, ReadDoubles(*rois, "RoiAlign rois"));
  const DataType ct = x->dtype() == DataType::kDouble ? DataType::kDouble : DataType::kFloat;
  Tensor xc = *x;
  if (x->dtype() != ct) {
    IL_ASSIGN_OR_RETURN(xc, LoadAsCompute(ctx, *x, ct, "RoiAlign"));
  }
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x->dtype(), {R, C, cfg.out_h, cfg.out_w}));
  if (out.size() == 0) {
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  if (H == 0 || W == 0) return ctx.Invalid("cannot pool from an empty input of shape " + ShapeToString(x->shape()));
  std::vector<double> res(static_cast<size_t>(out.size()));
  const int64_t PH = cfg.out_h, PW = cfg.out_w;
  std::vector<BilinearSample> samples;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xd = xc.data<T>();
    for (int64_t n = 0; n < R; ++n) {
      const double off = cfg.half_pixel ? 0.5 : 0.0;
      const double sw = roi[n * 4 + 0] * cfg.spatial_scale - off;
      const double sh = roi[n * 4 + 1] * cfg.spatial_scale - off;
      const double ew = roi[n * 4 + 2] * cfg.spatial_scale - off;
      const double eh = roi[n * 4 + 3] * cfg.spatial_scale - off;
      double rw = ew - sw, rh = eh - sh;
      if (!cfg.half_pixel) {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bh = rh / static_cast<double>(PH), bw = rw / static_cast<double>(PW);
      int64_t gh = cfg.sampling_ratio > 0 ? cfg.sampling_ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(PH)));
      int64_t gw = cfg.sampling_ratio > 0 ? cfg.sampling_ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(PW)));
      if (!std::isfinite(bh) || !std::isfinite(bw)) return ctx.Invalid("roi " + std::to_string(n) + " is not finite");
      gh = std::max<int64_t>(gh, 0);
      gw = std::max<int64_t>(gw, 0);
      if (gh * gw > (int64_t{1} << 20)) return ctx.Invalid("roi " + std::to_string(n) + " needs too many samples per bin");
      const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      // Precompute the bilinear samples of every bin (shared by all channels).
      samples.assign(static_cast<size_t>(PH * PW * gh * gw), BilinearSample{});
      size_t si = 0;
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy) {
            const double yy = sh + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
            for (int64_t ix = 0; ix < gw; ++ix, ++si) {
              const double xx = sw + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
              BilinearSample& s = samples[si];
              if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) continue;
              double y = std::max(yy, 0.0), xv = std::max(xx, 0.0);
              int64_t yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(xv), yh, xh;
              if (yl >= H - 1) {
                yh = yl = H - 1;
                y = static_cast<double>(yl);
              } else {
                yh = yl + 1;
              }
              if (xl >= W - 1) {
                xh = xl = W - 1;
                xv = static_cast<double>(xl);
              } else {
                xh = xl + 1;
              }
              const double ly = y - yl, lx = xv - xl, hy = 1 - ly, hx = 1 - lx;
              s.pos[0] = yl * W + xl;
              s.pos[1] = yl * W + xh;
              s.pos[2] = yh * W + xl;
              s.pos[3] = yh * W + xh;
              s.w[0] = hy * hx;
              s.w[1] = hy * lx;
              s.w[2] = ly * hx;
              s.w[3] = ly * lx;
            }
          }
      const int64_t per_bin = gh * gw;
      for (int64_t c = 0; c < C; ++c) {
        const T* src = xd + (batch[n] * C + c) * H * W;
        double* dst = res.data() + (n * C + c) * PH * PW;
        for (int64_t b = 0; b < PH * PW; ++b) {
          const BilinearSample* s = samples.data() + b * per_bin;
          double v = 0;
          if (!cfg.max_mode) {
            for (int64_t k = 0; k < per_bin; ++k)
              v += s[k].w[0] * src[s[k].pos[0]] + s[k].w[1] * src[s[k].pos[1]] + s[k].w[2] * src[s[k].pos[2]] +
                   s[k].w[3] * src[s[k].pos[3]];
            v /= count;
          } else {
            // Max of the weighted corner values (ONNX/onnxruntime semantics).
            for (int64_t k = 0; k < per_bin; ++k) {
              double m = s[k].w[0] * src[s[k].pos[0]];
              for (int q = 1; q < 4; ++q) m = std::max(m, s[k].w[q] * static_cast<double>(src[s[k].pos[q]]));
              v = k == 0 ? m : std::max(v, m);
            }
          }
          dst[b] = v;
        }
      }
    }
    return Status::Ok();
  };
  if (ct == DataType::kFloat) {
    IL_RETURN_IF_ERROR(run(TypeTag<float>{}));
  } else {
    IL_RETURN_IF_ERROR(run(TypeTag<double>{}));
  }
  IL_RETURN_IF_ERROR(StoreFromCompute<double>(res.data(), out, "RoiAlign"));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression.

struct Box {
  double x1, y1, x2, y2;  // min/max corners
  double area;
};

Status NmsCompute(KernelContext& ctx, bool center_point_box) {
  IL_ASSIGN_OR_RETURN(const Tensor* boxes_t, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* scores_t, ctx.RequireInput(1));
  if (boxes_t->rank() != 3 || boxes_t->dim(2) != 4)
    return ctx.Invalid("expected boxes of shape [batches, boxes, 4], got " + ShapeToString(boxes_t->shape()));
  if (scores_t->rank() != 3 || scores_t->dim(0) != boxes_t->dim(0) || scores_t->dim(2) != boxes_t->dim(1))
    return ctx.Invalid("expected scores of shape [" + std::to_string(boxes_t->dim(0)) + ", classes, " + std::to_string(boxes_t->dim(1)) +
                       "], got " + ShapeToString(scores_t->shape()));
  if (!IsFloatType(boxes_t->dtype()) || !IsFloatType(scores_t->dtype()))
    return UnsupportedType("NonMaxSuppression", IsFloatType(boxes_t->dtype()) ? scores_t->dtype() : boxes_t->dtype());
  int64_t max_out = 0;
  double iou_th = 0, score_th = 0;
  bool has_score_th = false;
  if (const Tensor* t = ctx.input(2); t && t->size() > 0) {
    IL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInt64s(*t, "max_output_boxes_per_class"));
    max_out = std::max<int64_t>(v[0], 0);
  }
  if (const Tensor* t = ctx.input(3); t && t->size() > 0) {
    IL_ASSIGN_OR_RETURN(std::vector<double> v, ReadDoubles(*t, "iou_threshold"));
    iou_th = v[0];
    if (iou_th < 0 || iou_th > 1) return ctx.Invalid("iou_threshold must be in [0, 1], got " + std::to_string(iou_th));
  }
  if (const Tensor* t = ctx.input(4); t && t->size() > 0) {
    IL_ASSIGN_OR_RETURN(std::vector<double> v, ReadDoubles(*t, "score_threshold"));
    score_th = v[0];
    has_score_th = true;
  }
  const int64_t B = boxes_t->dim(0), NB = boxes_t->dim(1), NC = scores_t->dim(1);
  IL_ASSIGN_OR_RETURN(std::vector<double> bx, ReadDoubles(*boxes_t, "boxes"));
  IL_ASSIGN_OR_RETURN(std::vector<double> sc, ReadDoubles(*scores_t, "scores"));
  std::vector<Box> boxes(static_cast<size_t>(NB));
  std::vector<int64_t> selected;  // triples
  std::vector<int64_t> cand, kept;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < NB; ++i) {
      const double* p = bx.data() + (b * NB + i) * 4;
      Box& q = boxes[i];
      if (center_point_box) {
        q.x1 = p[0] - p[2] / 2;
        q.x2 = p[0] + p[2] / 2;
        q.y1 = p[1] - p[3] / 2;
        q.y2 = p[1] + p[3] / 2;
      } else {
        q.y1 = std::min(p[0], p[2]);
        q.y2 = std::max(p[0], p[2]);
        q.x1 = std::min(p[1], p[3]);
        q.x2 = std::max(p[1], p[3]);
      }
      q.area = (q.x2 - q.x1) * (q.y2 - q.y1);
    }
    for (int64_t c = 0; c < NC; ++c) {
      if (max_out == 0) break;
      const double* s = sc.data() + (b * NC + c) * NB;
      cand.clear();
      for (int64_t i = 0; i < NB; ++i)
        if (!has_score_th || s[i] > score_th) cand.push_back(i);
      // Highest score first; ties by lower box index.
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t bb) { return s[a] > s[bb]; });
      kept.clear();
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box& q = boxes[i];
        bool keep = true;
        for (int64_t k : kept) {
          const Box& o = boxes[k];
          const double ix1 = std::max(q.x1, o.x1), ix2 = std::min(q.x2, o.x2);
          if (ix2 <= ix1) continue;
          const double iy1 = std::max(q.y1, o.y1), iy2 = std::min(q.y2, o.y2);
          if (iy2 <= iy1) continue;
          const double inter = (ix2 - ix1) * (iy2 - iy1);
          const double uni = q.area + o.area - inter;
          if (q.area <= 0 || o.area <= 0 || uni <= 0) continue;
          if (inter / uni > iou_th) {
            keep = false;
            break;
          }
        }
        if (keep) {
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
  }
  const int64_t ns = static_cast<int64_t>(selected.size() / 3);
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt64, {ns, 3}));
  std::copy(selected.begin(), selected.end(), out.data<int64_t>());
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

}  // namespace

void RegisterImageKernels(KernelRegistry& r) {
  RegisterResizeKernels(r);
  RegisterGridSampleKernels(r);
  RegisterImageDecoderKernels(r);

  r.Register("", "AffineGrid", 20, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const int64_t ac = info.GetInt("align_corners", 0);
    if (ac != 0 && ac != 1) return info.Invalid("align_corners must be 0 or 1, got " + std::to_string(ac));
    return MakeKernel([ac](KernelContext& ctx) { return AffineGridCompute(ctx, ac == 1); });
  });

  r.Register("", "RoiAlign", 10, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    RoiAlignConfig cfg;
    const std::string mode = info.GetString("mode", "avg");
    if (mode != "avg" && mode != "max") return info.Invalid("mode must be 'avg' or 'max', got '" + mode + "'");
    cfg.max_mode = mode == "max";
    if (info.opset() >= 16) {
      const std::string ctm = info.GetString("coordinate_transformation_mode", "half_pixel");
      if (ctm != "half_pixel" && ctm != "output_half_pixel")
        return info.Invalid("coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', got '" + ctm + "'");
      cfg.half_pixel = ctm == "half_pixel";
    }
    cfg.out_h = info.GetInt("output_height", 1);
    cfg.out_w = info.GetInt("output_width", 1);
    cfg.sampling_ratio = info.GetInt("sampling_ratio", 0);
    cfg.spatial_scale = info.GetFloat("spatial_scale", 1.0f);
    if (cfg.out_h <= 0 || cfg.out_w <= 0)
      return info.Invalid("output_height and output_width must be positive, got " + std::to_string(cfg.out_h) + "x" +
                          std::to_string(cfg.out_w));
    if (cfg.sampling_ratio < 0) return info.Invalid("sampling_ratio must be >= 0, got " + std::to_string(cfg.sampling_ratio));
    if (cfg.sampling_ratio > 4096) return info.Invalid("sampling_ratio is too large: " + std::to_string(cfg.sampling_ratio));
    return MakeKernel([cfg](KernelContext& ctx) { return RoiAlignCompute(ctx, cfg); });
  });

  r.Register("", "NonMaxSuppression", 10, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const int64_t cpb = info.GetInt("center_point_box", 0);
    if (cpb != 0 && cpb != 1) return info.Invalid("center_point_box must be 0 or 1, got " + std::to_string(cpb));
    return MakeKernel([cpb](KernelContext& ctx) { return NmsCompute(ctx, cpb == 1); });
  });
}

}  // namespace inferloop
