// Small helpers shared by the image (Resize, GridSample, ...) and signal (DFT, STFT, ...) kernels:
// reading small parameter tensors, and moving whole tensors to/from a float compute type.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace image_internal {

// Every element of a numeric (or float16/bfloat16) tensor as double.
inline Result<std::vector<double>> ReadDoubles(const Tensor& t, const char* what) {
  std::vector<double> out(static_cast<size_t>(t.size()));
  if (t.dtype() == DataType::kFloat16) {
    for (int64_t i = 0; i < t.size(); ++i) out[i] = HalfToFloat(t.data<uint16_t>()[i]);
    return out;
  }
  if (t.dtype() == DataType::kBFloat16) {
    for (int64_t i = 0; i < t.size(); ++i) out[i] = BFloat16ToFloat(t.data<uint16_t>()[i]);
    return out;
  }
  Status st = DispatchNumeric(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.size(); ++i) out[i] = static_cast<double>(p[i]);
        return Status::Ok();
      },
      what);
  if (!st.ok()) return st;
  return out;
}

// Every element of an integer tensor as int64.
inline Result<std::vector<int64_t>> ReadInt64s(const Tensor& t, const char* what) {
  std::vector<int64_t> out(static_cast<size_t>(t.size()));
  if (t.dtype() == DataType::kUInt64) {
    for (int64_t i = 0; i < t.size(); ++i) {
      uint64_t v = t.data<uint64_t>()[i];
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Status::InvalidArgument(std::string(what) + ": value out of int64 range");
      out[i] = static_cast<int64_t>(v);
    }
    return out;
  }
  Status st = DispatchInteger(
      t.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
        return Status::Ok();
      },
      what);
  if (!st.ok()) return st;
  return out;
}

// A scalar (or single-element) integer tensor.
inline Result<int64_t> ReadScalarInt(const Tensor& t, const char* what) {
  if (t.size() != 1)
    return Status::InvalidArgument(std::string(what) + ": expected a scalar, got shape " + ShapeToString(t.shape()));
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInt64s(t, what));
  return v[0];
}

// A scalar (or single-element) numeric tensor as double.
inline Result<double> ReadScalarDouble(const Tensor& t, const char* what) {
  if (t.size() != 1)
    return Status::InvalidArgument(std::string(what) + ": expected a scalar, got shape " + ShapeToString(t.shape()));
  IL_ASSIGN_OR_RETURN(std::vector<double> v, ReadDoubles(t, what));
  return v[0];
}

// The compute type used for interpolation of a given element type: float for float, float16
// and bfloat16; double for double and for integers (so rounding back matches a float64 reference).
inline DataType ComputeTypeFor(DataType t) {
  switch (t) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return DataType::kFloat;
    default:
      return DataType::kDouble;
  }
}

inline bool IsInterpolatable(DataType t) {
  switch (t) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

// Rounds half to even and saturates to T's range (numpy round + clip, as ONNX's reference does).
template <typename T, typename C>
inline T SaturateRound(C v) {
  if (std::isnan(v)) return T(0);
  C r = std::nearbyint(v);
  if (r <= static_cast<C>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (r >= static_cast<C>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

// Writes n compute-type values into `out` (already allocated with n elements) converting to
// out's dtype: float types by rounding to nearest, integers by round-half-even + saturation.
template <typename C>
inline Status StoreFromCompute(const C* src, Tensor& out, const char* what) {
  const int64_t n = out.size();
  switch (out.dtype()) {
    case DataType::kFloat16:
      for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(src[i]));
      return Status::Ok();
    case DataType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(src[i]));
      return Status::Ok();
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = static_cast<float>(src[i]);
      return Status::Ok();
    case DataType::kDouble:
      for (int64_t i = 0; i < n; ++i) out.data<double>()[i] = static_cast<double>(src[i]);
      return Status::Ok();
    default:
      return DispatchInteger(
          out.dtype(),
          [&](auto tag) {
            using T = typename decltype(tag)::type;
            T* p = out.data<T>();
            for (int64_t i = 0; i < n; ++i) p[i] = SaturateRound<T>(src[i]);
            return Status::Ok();
          },
          what);
  }
}

// Converts every element of a numeric (or float16/bfloat16) tensor into dst[0..size).
template <typename C>
inline Status ConvertToCompute(const Tensor& x, C* dst, const char* what) {
  const int64_t n = x.size();
  if (x.dtype() == DataType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(HalfToFloat(x.data<uint16_t>()[i]));
    return Status::Ok();
  }
  if (x.dtype() == DataType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(BFloat16ToFloat(x.data<uint16_t>()[i]));
    return Status::Ok();
  }
  return DispatchNumeric(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = x.data<T>();
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(p[i]);
        return Status::Ok();
      },
      what);
}

// Copies a tensor into a freshly allocated tensor of compute type `ct` (float or double).
inline Result<Tensor> LoadAsCompute(KernelContext& ctx, const Tensor& x, DataType ct, const char* what) {
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(ct, x.shape()));
  Status st = ct == DataType::kFloat ? ConvertToCompute(x, out.data<float>(), what)
                                     : ConvertToCompute(x, out.data<double>(), what);
  if (!st.ok()) return st;
  return out;
}

// Row-major strides of a shape.
inline std::vector<int64_t> StridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

}  // namespace image_internal
}  // namespace inferloop
