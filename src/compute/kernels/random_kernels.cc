// Registration of the random kernel family: RandomUniform(Like), RandomNormal(Like), Bernoulli,
// Multinomial.
//
// Generator: std::mt19937. With a `seed` attribute each run starts from that seed, so a seeded
// node gives the same values every run (and Compute stays const and thread-safe). Without one,
// every run draws a fresh seed. Values are not numpy's, so expected outputs produced with
// numpy's generator cannot be matched.
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/flow_util.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

struct SeedSpec {
  bool has_seed = false;
  uint32_t seed = 0;
};

SeedSpec ReadSeed(const KernelInfo& info) {
  SeedSpec s;
  if (info.has_attr("seed")) {
    const float f = info.GetFloat("seed", 0.0f);
    if (!std::isnan(f)) {
      s.has_seed = true;
      s.seed = static_cast<uint32_t>(static_cast<int64_t>(f));
    }
  }
  return s;
}

std::mt19937 MakeGenerator(const SeedSpec& s) {
  if (s.has_seed) return std::mt19937(s.seed);
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::seed_seq seq{rd(), rd(), static_cast<uint32_t>(t), static_cast<uint32_t>(t >> 32),
                    static_cast<uint32_t>(counter.fetch_add(1, std::memory_order_relaxed))};
  return std::mt19937(seq);
}

bool IsRandomFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Fills a float-like tensor from a generator of doubles.
template <typename Gen>
void FillFloat(Tensor& out, Gen&& gen) {
  const int64_t n = out.size();
  switch (out.dtype()) {
    case DataType::kFloat: for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = static_cast<float>(gen()); break;
    case DataType::kDouble: for (int64_t i = 0; i < n; ++i) out.data<double>()[i] = gen(); break;
    case DataType::kFloat16: for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(gen())); break;
    case DataType::kBFloat16: for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(gen())); break;
    default: break;
  }
}

// Output dtype: the `dtype` attribute, else `fallback` (kUndefined: take the input's at run time).
Result<DataType> ReadDtype(const KernelInfo& info, DataType fallback) {
  if (!info.has_attr("dtype")) return fallback;
  const int64_t v = info.GetInt("dtype", 0);
  if (v == 0) return fallback;
  if (!IsKnownDataType(static_cast<int32_t>(v))) return info.Invalid("unknown dtype " + std::to_string(v));
  return static_cast<DataType>(v);
}

enum class Dist { kUniform, kNormal };

// RandomUniform / RandomNormal (shape attribute) and their *Like variants (shape of input 0).
Result<std::unique_ptr<Kernel>> MakeRandom(const KernelInfo& info, Dist dist, bool like) {
  const SeedSpec seed = ReadSeed(info);
  IL_ASSIGN_OR_RETURN(DataType dt, ReadDtype(info, like ? DataType::kUndefined : DataType::kFloat));
  if (dt != DataType::kUndefined && !IsRandomFloatType(dt))
    return info.Invalid(std::string("dtype must be float16, bfloat16, float or double, got ") + DataTypeName(dt));
  double a, b;  // uniform: low, high; normal: mean, scale
  if (dist == Dist::kUniform) {
    a = info.GetFloat("low", 0.0f);
    b = info.GetFloat("high", 1.0f);
    if (!(a <= b)) return info.Invalid("low (" + std::to_string(a) + ") must not exceed high (" + std::to_string(b) + ")");
  } else {
    a = info.GetFloat("mean", 0.0f);
    b = info.GetFloat("scale", 1.0f);
    if (!(b >= 0)) return info.Invalid("scale must be non-negative, got " + std::to_string(b));
  }
  Shape shape;
  if (!like) {
    if (!info.has_attr("shape")) return info.Invalid("attribute 'shape' is required");
    shape = info.GetInts("shape");
    for (int64_t d : shape)
      if (d < 0) return info.Invalid("shape " + ShapeToString(shape) + " has a negative dimension");
  }
  return MakeKernel([=](KernelContext& ctx) -> Status {
    DataType out_dt = dt;
    Shape out_shape = shape;
    if (like) {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      out_shape = x->shape();
      if (out_dt == DataType::kUndefined) out_dt = x->dtype();
      if (!IsRandomFloatType(out_dt))
        return ctx.Invalid(std::string("output dtype must be float16, bfloat16, float or double, got ") + DataTypeName(out_dt) +
                           " (set the dtype attribute)");
    }
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(out_dt, out_shape));
    std::mt19937 gen = MakeGenerator(seed);
    if (dist == Dist::kUniform) {
      std::uniform_real_distribution<double> u(a, b);
      FillFloat(out, [&] { return a == b ? a : u(gen); });
    } else {
      std::normal_distribution<double> nd(a, b > 0 ? b : 1.0);
      FillFloat(out, [&] { return b > 0 ? nd(gen) : a; });
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

// Writes 0/1 into element i of a tensor of any numeric or bool dtype.
void SetBit(Tensor& out, int64_t i, bool v) {
  switch (out.dtype()) {
    case DataType::kFloat16: out.data<uint16_t>()[i] = FloatToHalf(v ? 1.0f : 0.0f); return;
    case DataType::kBFloat16: out.data<uint16_t>()[i] = FloatToBFloat16(v ? 1.0f : 0.0f); return;
    case DataType::kBool: out.data<uint8_t>()[i] = v; return;
    default:
      (void)DispatchNumeric(out.dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        out.data<T>()[i] = v ? T(1) : T(0);
        return Status::Ok();
      });
  }
}

bool IsBernoulliOutType(DataType t) {
  switch (t) {
    case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: case DataType::kBFloat16: case DataType::kBool:
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
      return true;
    default: return false;
  }
}

Result<std::unique_ptr<Kernel>> MakeBernoulli(const KernelInfo& info) {
  const SeedSpec seed = ReadSeed(info);
  IL_ASSIGN_OR_RETURN(DataType dt, ReadDtype(info, DataType::kUndefined));
  if (dt != DataType::kUndefined && !IsBernoulliOutType(dt))
    return info.Invalid(std::string("dtype ") + DataTypeName(dt) + " is not a numeric or bool type");
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (!IsRandomFloatType(x->dtype()))
      return ctx.Invalid(std::string("input must be float16, bfloat16, float or double, got ") + DataTypeName(x->dtype()));
    const DataType out_dt = dt == DataType::kUndefined ? x->dtype() : dt;
    IL_ASSIGN_OR_RETURN(Tensor p, CastTensor(*x, DataType::kDouble));
    const double* pd = p.data<double>();
    for (int64_t i = 0; i < p.size(); ++i)
      if (!(pd[i] >= 0.0 && pd[i] <= 1.0))
        return ctx.Invalid("probability at index " + std::to_string(i) + " is " + std::to_string(pd[i]) + ", outside [0, 1]");
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(out_dt, x->shape()));
    std::mt19937 gen = MakeGenerator(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int64_t i = 0; i < p.size(); ++i) SetBit(out, i, u(gen) < pd[i]);
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

Result<std::unique_ptr<Kernel>> MakeMultinomial(const KernelInfo& info) {
  const SeedSpec seed = ReadSeed(info);
  IL_ASSIGN_OR_RETURN(DataType dt, ReadDtype(info, DataType::kInt32));
  if (dt != DataType::kInt32 && dt != DataType::kInt64)
    return info.Invalid(std::string("dtype must be int32 or int64, got ") + DataTypeName(dt));
  const int64_t samples = info.GetInt("sample_size", 1);
  if (samples < 0) return info.Invalid("sample_size must be non-negative, got " + std::to_string(samples));
  return MakeKernel([=](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (!IsRandomFloatType(x->dtype()))
      return ctx.Invalid(std::string("input must be float16, bfloat16, float or double, got ") + DataTypeName(x->dtype()));
    if (x->rank() != 2) return ctx.Invalid("input must be 2-D [batch_size, class_size], got shape " + ShapeToString(x->shape()));
    const int64_t batch = x->dim(0), classes = x->dim(1);
    if (classes < 1 && samples > 0) return ctx.Invalid("class_size must be at least 1");
    IL_ASSIGN_OR_RETURN(Tensor lp, CastTensor(*x, DataType::kDouble));
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(dt, {batch, samples}));
    std::mt19937 gen = MakeGenerator(seed);
    std::vector<double> w(classes);
    for (int64_t b = 0; b < batch; ++b) {
      const double* row = lp.data<double>() + b * classes;
      double mx = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, row[c]);
      if (std::isnan(mx) || (std::isinf(mx) && mx > 0)) return ctx.Invalid("row " + std::to_string(b) + " has NaN or +inf log-probabilities");
      if (std::isinf(mx)) return ctx.Invalid("row " + std::to_string(b) + " has no class with non-zero probability");
      for (int64_t c = 0; c < classes; ++c) w[c] = std::exp(row[c] - mx);
      std::discrete_distribution<int64_t> d(w.begin(), w.end());
      for (int64_t s = 0; s < samples; ++s) {
        const int64_t v = d(gen);
        if (dt == DataType::kInt32) out.data<int32_t>()[b * samples + s] = static_cast<int32_t>(v);
        else out.data<int64_t>()[b * samples + s] = v;
      }
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  });
}

}  // namespace

void RegisterRandomKernels(KernelRegistry& r) {
  r.Register("", "RandomUniform", 1, [](const KernelInfo& i) { return MakeRandom(i, Dist::kUniform, false); });
  r.Register("", "RandomNormal", 1, [](const KernelInfo& i) { return MakeRandom(i, Dist::kNormal, false); });
  r.Register("", "RandomUniformLike", 1, [](const KernelInfo& i) { return MakeRandom(i, Dist::kUniform, true); });
  r.Register("", "RandomNormalLike", 1, [](const KernelInfo& i) { return MakeRandom(i, Dist::kNormal, true); });
  r.Register("", "Bernoulli", 15, MakeBernoulli);
  r.Register("", "Multinomial", 7, MakeMultinomial);
}

}  // namespace inferloop
