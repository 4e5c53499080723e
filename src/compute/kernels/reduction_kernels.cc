// Registration of the reduction kernel family: Reduce* here; ArgMax/ArgMin/CumSum/TopK in
// reduction_arg_kernels.cc; Softmax/LogSoftmax/Hardmax in reduction_softmax_kernels.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/broadcast.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/reduction_internal.h"
#include "compute/simd/float_kernels.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

using reduction::SafeCast;

enum class ReduceOp { kL1, kL2, kLogSum, kLogSumExp, kMax, kMean, kMin, kProd, kSum, kSumSquare };

struct ReduceConfig {
  ReduceOp op;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool axes_from_input = false;      // opsets where axes is the optional second input
  std::vector<int64_t> attr_axes;    // opsets where axes is an attribute
};

// Accumulator for sum-like reductions: double for floating types, 64-bit for integers
// (wrapping like the element type when cast back).
template <typename T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// The reduction plan for one call: which dims are reduced and where each input element lands.
struct ReducePlan {
  Shape out_shape;                  // final output shape (keepdims applied)
  std::vector<int64_t> out_strides; // per input dim: stride in the output, 0 for reduced dims
  int64_t out_count = 1;
  int64_t reduce_count = 1;         // elements reduced into each output
};

ReducePlan MakePlan(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan p;
  const int r = static_cast<int>(in.size());
  p.out_strides.assign(r, 0);
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    if (reduced[d]) {
      p.reduce_count *= in[d];
    } else {
      p.out_strides[d] = stride;
      stride *= in[d];
    }
  }
  p.out_count = stride;
  for (int d = 0; d < r; ++d) {
    if (!reduced[d]) p.out_shape.push_back(in[d]);
    else if (keepdims) p.out_shape.push_back(1);
  }
  return p;
}

// Iterates every input element: f(input_index, output_index).
template <typename F>
void ForEachReduced(const Shape& in, const ReducePlan& p, F&& f) {
  if (in.empty()) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  ForEachBroadcast2(in, p.out_strides, p.out_strides, [&](int64_t i, int64_t io, int64_t) { f(i, io); });
}

template <typename T>
Status ReduceTyped(KernelContext& ctx, const ReduceConfig& cfg, const Tensor& x, const ReducePlan& p,
                   DataType out_dtype, bool is_bool, Tensor* result) {
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(out_dtype, p.out_shape));
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const Shape& in = x.shape();
  const int64_t n_out = p.out_count;
  const double count = static_cast<double>(p.reduce_count);

  switch (cfg.op) {
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      const bool is_max = cfg.op == ReduceOp::kMax;
      T init;
      if (is_bool) {
        init = is_max ? T(0) : T(1);
      } else if constexpr (std::is_floating_point_v<T>) {
        init = is_max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
      } else {
        init = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
      }
      std::fill(po, po + n_out, init);
      if (is_max) {
        ForEachReduced(in, p, [&](int64_t i, int64_t o) {
          T v = px[i];
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(v) || v > po[o]) po[o] = v;
          } else {
            if (v > po[o]) po[o] = v;
          }
        });
      } else {
        ForEachReduced(in, p, [&](int64_t i, int64_t o) {
          T v = px[i];
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(v) || v < po[o]) po[o] = v;
          } else {
            if (v < po[o]) po[o] = v;
          }
        });
      }
      break;
    }
    case ReduceOp::kLogSumExp: {
      std::vector<double> mx(n_out, -std::numeric_limits<double>::infinity());
      std::vector<double> sum(n_out, 0.0);
      ForEachReduced(in, p, [&](int64_t i, int64_t o) {
        double v = static_cast<double>(px[i]);
        if (std::isnan(v) || v > mx[o]) mx[o] = v;
      });
      for (double& m : mx)
        if (std::isinf(m)) m = 0.0;  // all -inf (or +inf present): no shift needed
      ForEachReduced(in, p, [&](int64_t i, int64_t o) { sum[o] += std::exp(static_cast<double>(px[i]) - mx[o]); });
      for (int64_t o = 0; o < n_out; ++o) po[o] = SafeCast<T>(mx[o] + std::log(sum[o]));
      break;
    }
    case ReduceOp::kProd: {
      using Acc = SumAcc<T>;
      std::vector<Acc> acc(n_out, Acc(1));
      ForEachReduced(in, p, [&](int64_t i, int64_t o) { acc[o] *= static_cast<Acc>(px[i]); });
      for (int64_t o = 0; o < n_out; ++o) po[o] = static_cast<T>(acc[o]);
      break;
    }
    default: {
      // Sum-like: L1, L2, LogSum, Mean, Sum, SumSquare.
      using Acc = SumAcc<T>;
      std::vector<Acc> acc(n_out, Acc(0));
      switch (cfg.op) {
        case ReduceOp::kL1:
          ForEachReduced(in, p, [&](int64_t i, int64_t o) {
            Acc v = static_cast<Acc>(px[i]);
            if constexpr (std::is_signed_v<Acc>) acc[o] += v < 0 ? -v : v;
            else acc[o] += v;
          });
          break;
        case ReduceOp::kL2:
        case ReduceOp::kSumSquare:
          ForEachReduced(in, p, [&](int64_t i, int64_t o) {
            Acc v = static_cast<Acc>(px[i]);
            acc[o] += v * v;
          });
          break;
        default:
          ForEachReduced(in, p, [&](int64_t i, int64_t o) { acc[o] += static_cast<Acc>(px[i]); });
          break;
      }
      for (int64_t o = 0; o < n_out; ++o) {
        switch (cfg.op) {
          case ReduceOp::kL2: po[o] = SafeCast<T>(std::sqrt(static_cast<double>(acc[o]))); break;
          case ReduceOp::kLogSum: po[o] = SafeCast<T>(std::log(static_cast<double>(acc[o]))); break;
          case ReduceOp::kMean:
            if constexpr (std::is_floating_point_v<T>) {
              po[o] = static_cast<T>(static_cast<double>(acc[o]) / count);
            } else {
              po[o] = p.reduce_count == 0 ? T(0) : static_cast<T>(acc[o] / static_cast<Acc>(p.reduce_count));
            }
            break;
          default: po[o] = static_cast<T>(acc[o]); break;
        }
      }
      break;
    }
  }
  *result = std::move(out);
  return Status::Ok();
}

Status ReadAxes(KernelContext& ctx, const Tensor& t, std::vector<int64_t>* axes) {
  if (t.rank() > 1) return ctx.Invalid("axes must be a 1-D tensor, got shape " + ShapeToString(t.shape()));
  axes->clear();
  if (t.dtype() == DataType::kInt64) {
    axes->assign(t.data<int64_t>(), t.data<int64_t>() + t.size());
  } else if (t.dtype() == DataType::kInt32) {
    for (int64_t i = 0; i < t.size(); ++i) axes->push_back(t.data<int32_t>()[i]);
  } else {
    return ctx.Invalid(std::string("axes must be int64, got ") + DataTypeName(t.dtype()));
  }
  return Status::Ok();
}

Status ComputeReduce(KernelContext& ctx, const ReduceConfig& cfg) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  std::vector<int64_t> axes;
  if (cfg.axes_from_input) {
    if (const Tensor* a = ctx.input(1)) IL_RETURN_IF_ERROR(ReadAxes(ctx, *a, &axes));
  } else {
    axes = cfg.attr_axes;
  }
  const int64_t rank = x->rank();
  if (axes.empty()) {
    if (cfg.noop_with_empty_axes) {
      ctx.SetOutput(0, *x);
      return Status::Ok();
    }
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    int64_t ax = a;
    if (!reduction::NormalizeAxis(ax, rank))
      return ctx.Invalid("axis " + std::to_string(a) + " is out of range for input of rank " + std::to_string(rank));
    if (reduced[ax]) return ctx.Invalid("axis " + std::to_string(a) + " is repeated in axes");
    reduced[ax] = true;
  }
  ReducePlan plan = MakePlan(x->shape(), reduced, cfg.keepdims);
  const DataType dt = x->dtype();

  // float32 Sum/Mean over trailing axes (rows of contiguous elements): vectorized.
  if (dt == DataType::kFloat && (cfg.op == ReduceOp::kSum || cfg.op == ReduceOp::kMean) && rank > 0) {
    int64_t k = rank;
    while (k > 0 && reduced[k - 1]) --k;
    bool suffix = true;
    for (int64_t d = 0; d < k; ++d) suffix = suffix && !reduced[d];
    const int64_t rows = plan.out_count, n = plan.reduce_count;
    if (suffix && n > 0) {
      IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(dt, plan.out_shape));
      simd::SumRows(ctx.thread_pool(), x->data<float>(), rows, n,
                    cfg.op == ReduceOp::kMean ? 1.0 / static_cast<double>(n) : 1.0, out.data<float>());
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    }
  }

  if (IsFloat16Like(dt)) {
    IL_ASSIGN_OR_RETURN(Tensor xf, ToFloat32(*x));
    Tensor rf;
    IL_RETURN_IF_ERROR(ReduceTyped<float>(ctx, cfg, xf, plan, DataType::kFloat, false, &rf));
    IL_ASSIGN_OR_RETURN(Tensor out, CastTensor(rf, dt));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }
  Tensor out;
  if (dt == DataType::kBool) {
    if (cfg.op != ReduceOp::kMax && cfg.op != ReduceOp::kMin)
      return UnsupportedType(ctx.node().op_type.c_str(), dt);
    IL_RETURN_IF_ERROR(ReduceTyped<uint8_t>(ctx, cfg, *x, plan, dt, true, &out));
  } else {
    IL_RETURN_IF_ERROR(DispatchNumeric(
        dt,
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          return ReduceTyped<T>(ctx, cfg, *x, plan, dt, false, &out);
        },
        ctx.node().op_type.c_str()));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// Registers a Reduce* op. `input_axes_since`: the opset where axes became an input.
void RegisterReduce(KernelRegistry& r, const char* name, ReduceOp op, int input_axes_since) {
  r.Register("", name, 1, [op, input_axes_since](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    ReduceConfig cfg;
    cfg.op = op;
    cfg.keepdims = info.GetInt("keepdims", 1) != 0;
    cfg.axes_from_input = info.opset() >= input_axes_since;
    if (cfg.axes_from_input) {
      cfg.noop_with_empty_axes = info.GetInt("noop_with_empty_axes", 0) != 0;
      if (info.has_attr("axes")) return info.Invalid("axes is an input (not an attribute) since opset " +
                                                      std::to_string(input_axes_since));
    } else {
      cfg.attr_axes = info.GetInts("axes");
      if (info.has_input(1)) return info.Invalid("axes must be an attribute before opset " +
                                                 std::to_string(input_axes_since));
    }
    return MakeKernel([cfg](KernelContext& ctx) { return ComputeReduce(ctx, cfg); });
  });
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& r) {
  RegisterReduce(r, "ReduceL1", ReduceOp::kL1, 18);
  RegisterReduce(r, "ReduceL2", ReduceOp::kL2, 18);
  RegisterReduce(r, "ReduceLogSum", ReduceOp::kLogSum, 18);
  RegisterReduce(r, "ReduceLogSumExp", ReduceOp::kLogSumExp, 18);
  RegisterReduce(r, "ReduceMax", ReduceOp::kMax, 18);
  RegisterReduce(r, "ReduceMean", ReduceOp::kMean, 18);
  RegisterReduce(r, "ReduceMin", ReduceOp::kMin, 18);
  RegisterReduce(r, "ReduceProd", ReduceOp::kProd, 18);
  RegisterReduce(r, "ReduceSum", ReduceOp::kSum, 13);
  RegisterReduce(r, "ReduceSumSquare", ReduceOp::kSumSquare, 18);
  reduction::RegisterArgCumTopKKernels(r);
  reduction::RegisterSoftmaxKernels(r);
}

}  // namespace inferloop
