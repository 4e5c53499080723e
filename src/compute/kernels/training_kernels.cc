// Registration of the training kernel family (domain ai.onnx.preview.training):
// Adagrad, Adam, Momentum (standard and Nesterov). Each takes (R, T, then groups of per-tensor
// inputs) and updates any number of tensors at once; math is done in double.
#include <cmath>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/flow_util.h"

namespace inferloop {
namespace {

constexpr const char* kTraining = "ai.onnx.preview.training";

// Reads R (float/double scalar) and T (int64 scalar).
Status ReadRT(KernelContext& ctx, double* r, int64_t* t) {
  IL_ASSIGN_OR_RETURN(const Tensor* rt, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* tt, ctx.RequireInput(1));
  if (rt->size() != 1) return ctx.Invalid("R must be a scalar, got shape " + ShapeToString(rt->shape()));
  if (rt->dtype() == DataType::kFloat) *r = rt->data<float>()[0];
  else if (rt->dtype() == DataType::kDouble) *r = rt->data<double>()[0];
  else return ctx.Invalid(std::string("R must be float or double, got ") + DataTypeName(rt->dtype()));
  if (tt->size() != 1 || tt->dtype() != DataType::kInt64)
    return ctx.Invalid("T must be an int64 scalar, got " + std::string(DataTypeName(tt->dtype())) + " " + ShapeToString(tt->shape()));
  *t = tt->data<int64_t>()[0];
  return Status::Ok();
}

// Runs `update(i, in_ptrs, out_ptrs)` per element for group g of `groups` tensors per optimized
// tensor (inputs X, G, ... ; `nout` outputs X_new, ...). All of a group's tensors must agree.
template <typename Update>
Status ForEachGroup(KernelContext& ctx, int groups, int nout, Update update) {
  const int n = (ctx.num_inputs() - 2) / groups;
  for (int g = 0; g < n; ++g) {
    std::vector<const Tensor*> ins(groups);
    for (int j = 0; j < groups; ++j) {
      IL_ASSIGN_OR_RETURN(ins[j], ctx.RequireInput(2 + j * n + g));
      if (ins[j]->dtype() != ins[0]->dtype() || ins[j]->shape() != ins[0]->shape())
        return ctx.Invalid("input " + std::to_string(2 + j * n + g) + " is " + DataTypeName(ins[j]->dtype()) +
                           ShapeToString(ins[j]->shape()) + ", expected " + DataTypeName(ins[0]->dtype()) +
                           ShapeToString(ins[0]->shape()) + " like input " + std::to_string(2 + g));
    }
    IL_RETURN_IF_ERROR(DispatchFloating(
        ins[0]->dtype(),
        [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          std::vector<Tensor> outs(nout);
          for (int k = 0; k < nout; ++k) {
            IL_ASSIGN_OR_RETURN(outs[k], ctx.Allocate(ins[0]->dtype(), ins[0]->shape()));
          }
          std::vector<double> in(groups), out(nout);
          for (int64_t i = 0; i < ins[0]->size(); ++i) {
            for (int j = 0; j < groups; ++j) in[j] = static_cast<double>(ins[j]->template data<T>()[i]);
            update(in.data(), out.data());
            for (int k = 0; k < nout; ++k) outs[k].template data<T>()[i] = static_cast<T>(out[k]);
          }
          for (int k = 0; k < nout; ++k) ctx.SetOutput(k * n + g, std::move(outs[k]));
          return Status::Ok();
        },
        "optimizer"));
  }
  return Status::Ok();
}

Status CheckArity(const KernelInfo& info, int groups, int nout) {
  const int rest = info.num_inputs() - 2;
  if (rest <= 0 || rest % groups != 0)
    return info.Invalid("expects R, T and " + std::to_string(groups) + " inputs per optimized tensor; got " +
                        std::to_string(info.num_inputs()) + " inputs");
  const int n = rest / groups;
  if (info.num_outputs() != nout * n)
    return info.Invalid("expects " + std::to_string(nout * n) + " outputs for " + std::to_string(n) + " optimized tensors, got " +
                        std::to_string(info.num_outputs()));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeAdagrad(const KernelInfo& info) {
  IL_RETURN_IF_ERROR(CheckArity(info, 3, 2));
  const double decay = info.GetFloat("decay_factor", 0.0f);
  const double eps = info.GetFloat("epsilon", 1e-6f);
  const double norm = info.GetFloat("norm_coefficient", 0.0f);
  return MakeKernel([=](KernelContext& ctx) -> Status {
    double r;
    int64_t t;
    IL_RETURN_IF_ERROR(ReadRT(ctx, &r, &t));
    const double lr = r / (1.0 + static_cast<double>(t) * decay);
    return ForEachGroup(ctx, 3, 2, [&](const double* in, double* out) {
      const double x = in[0], g = norm * x + in[1];
      const double h = in[2] + g * g;
      out[0] = x - lr * g / (std::sqrt(h) + eps);
      out[1] = h;
    });
  });
}

Result<std::unique_ptr<Kernel>> MakeAdam(const KernelInfo& info) {
  IL_RETURN_IF_ERROR(CheckArity(info, 4, 3));
  const double alpha = info.GetFloat("alpha", 0.9f);
  const double beta = info.GetFloat("beta", 0.999f);
  const double eps = info.GetFloat("epsilon", 1e-6f);
  const double norm = info.GetFloat("norm_coefficient", 0.0f);
  const double norm_post = info.GetFloat("norm_coefficient_post", 0.0f);
  return MakeKernel([=](KernelContext& ctx) -> Status {
    double r;
    int64_t t;
    IL_RETURN_IF_ERROR(ReadRT(ctx, &r, &t));
    double lr = r;
    if (t > 0) {
      const double td = static_cast<double>(t);
      lr = r * std::sqrt(1.0 - std::pow(beta, td)) / (1.0 - std::pow(alpha, td));
    }
    return ForEachGroup(ctx, 4, 3, [&](const double* in, double* out) {
      const double x = in[0], g = norm * x + in[1];
      const double v = alpha * in[2] + (1.0 - alpha) * g;
      const double h = beta * in[3] + (1.0 - beta) * g * g;
      const double xn = x - lr * v / (std::sqrt(h) + eps);
      out[0] = (1.0 - norm_post) * xn;
      out[1] = v;
      out[2] = h;
    });
  });
}

Result<std::unique_ptr<Kernel>> MakeMomentum(const KernelInfo& info) {
  IL_RETURN_IF_ERROR(CheckArity(info, 3, 2));
  for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!info.has_attr(a)) return info.Invalid(std::string("attribute '") + a + "' is required");
  const double alpha = info.GetFloat("alpha", 0.0f);
  const double beta = info.GetFloat("beta", 0.0f);
  const double norm = info.GetFloat("norm_coefficient", 0.0f);
  const std::string mode = info.GetString("mode", "");
  if (mode != "standard" && mode != "nesterov") return info.Invalid("mode must be 'standard' or 'nesterov', got '" + mode + "'");
  const bool nesterov = mode == "nesterov";
  return MakeKernel([=](KernelContext& ctx) -> Status {
    double r;
    int64_t t;
    IL_RETURN_IF_ERROR(ReadRT(ctx, &r, &t));
    const double b = t > 0 ? beta : 1.0;  // the gradient's coefficient is 1 at the first step
    return ForEachGroup(ctx, 3, 2, [&](const double* in, double* out) {
      const double x = in[0], g = norm * x + in[1];
      const double v = alpha * in[2] + b * g;
      out[0] = nesterov ? x - r * (g + alpha * v) : x - r * v;
      out[1] = v;
    });
  });
}

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  r.Register(kTraining, "Adagrad", 1, MakeAdagrad);
  r.Register(kTraining, "Adam", 1, MakeAdam);
  r.Register(kTraining, "Momentum", 1, MakeMomentum);
}

}  // namespace inferloop
