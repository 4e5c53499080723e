// Shared machinery of the elementwise kernel family (elementwise_*.cc).
//
// Element access goes through small "traits" structs: S is the stored type, C the type the
// arithmetic runs in, Load/Store convert. float16/bfloat16 are stored as raw uint16 bits and
// computed in float, one element at a time (no temporary tensors); bool is stored as one byte
// and computed as bool. For every other dtype S == C and Load/Store are the identity, so the
// plain loops below vectorize where the operation allows.
//
// Integer semantics (documented behaviour, never UB):
//  * Add/Sub/Mul/Neg/Abs wrap around (two's complement), like numpy.
//  * Div/Mod by zero give 0 (numpy's result); INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 is 0.
//  * Float -> integer conversions (Pow with an integer base and float exponent, Shrink on
//    integers) saturate to the type's range; NaN becomes 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/broadcast.h"
#include "compute/dispatch.h"
#include "compute/kernel.h"
#include "compute/kernel_registry.h"
#include "compute/simd/float_kernels.h"

namespace inferloop {
namespace elementwise {

template <typename T>
struct Plain {
  using S = T;
  using C = T;
  static C Load(S v) { return v; }
  static S Store(C v) { return v; }
};
struct Half {
  using S = uint16_t;
  using C = float;
  static C Load(S v) { return HalfToFloat(v); }
  static S Store(C v) { return FloatToHalf(v); }
};
struct BHalf {
  using S = uint16_t;
  using C = float;
  static C Load(S v) { return BFloat16ToFloat(v); }
  static S Store(C v) { return FloatToBFloat16(v); }
};
struct Bool {
  using S = uint8_t;
  using C = bool;
  static C Load(S v) { return v != 0; }
  static S Store(C v) { return v ? 1 : 0; }
};

template <typename Tr>
inline constexpr bool kIsFloatTraits = std::is_floating_point_v<typename Tr::C>;

// ---- dispatch over dtypes, passing TypeTag<Traits> ----

// float, double, float16, bfloat16.
template <typename F>
Status DispatchFloatLike(DataType t, F&& f, const char* what) {
  switch (t) {
    case DataType::kFloat: return f(TypeTag<Plain<float>>{});
    case DataType::kDouble: return f(TypeTag<Plain<double>>{});
    case DataType::kFloat16: return f(TypeTag<Half>{});
    case DataType::kBFloat16: return f(TypeTag<BHalf>{});
    default: return UnsupportedType(what, t);
  }
}

// Fixed-width integers.
template <typename F>
Status DispatchInt(DataType t, F&& f, const char* what) {
  switch (t) {
    case DataType::kInt8: return f(TypeTag<Plain<int8_t>>{});
    case DataType::kInt16: return f(TypeTag<Plain<int16_t>>{});
    case DataType::kInt32: return f(TypeTag<Plain<int32_t>>{});
    case DataType::kInt64: return f(TypeTag<Plain<int64_t>>{});
    case DataType::kUInt8: return f(TypeTag<Plain<uint8_t>>{});
    case DataType::kUInt16: return f(TypeTag<Plain<uint16_t>>{});
    case DataType::kUInt32: return f(TypeTag<Plain<uint32_t>>{});
    case DataType::kUInt64: return f(TypeTag<Plain<uint64_t>>{});
    default: return UnsupportedType(what, t);
  }
}

// Every integer and floating dtype (including float16/bfloat16).
template <typename F>
Status DispatchAllNumeric(DataType t, F&& f, const char* what) {
  switch (t) {
    case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: case DataType::kBFloat16:
      return DispatchFloatLike(t, std::forward<F>(f), what);
    default: return DispatchInt(t, std::forward<F>(f), what);
  }
}

// ---- integer helpers without undefined behaviour ----

template <typename T>
using WideUnsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
inline T AddOp(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(WideUnsigned<T>(a) + WideUnsigned<T>(b));
  else return a + b;
}
template <typename T>
inline T SubOp(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(WideUnsigned<T>(a) - WideUnsigned<T>(b));
  else return a - b;
}
template <typename T>
inline T MulOp(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(WideUnsigned<T>(a) * WideUnsigned<T>(b));
  else return a * b;
}
template <typename T>
inline T NegOp(T a) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(WideUnsigned<T>(0) - WideUnsigned<T>(a));
  else return -a;
}
// Truncating division; x/0 -> 0, INT_MIN/-1 -> INT_MIN.
template <typename T>
inline T DivOp(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return NegOp(a);
    }
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}
// NaN-propagating max/min (numpy maximum/minimum).
template <typename T>
inline T MaxOp(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}
template <typename T>
inline T MinOp(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

// double -> integer, saturating; NaN -> 0.
template <typename T>
inline T SaturateCast(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();  // hi may round up past max: >= guards it
    return static_cast<T>(v);
  }
}

// ---- elementwise loops ----

// Calls f(out_index, off_a, off_b, off_c) for every element of `out`, like ForEachBroadcast2.
template <typename F>
void ForEachBroadcast3(const Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                       const std::vector<int64_t>& sc, F&& f) {
  const int r = static_cast<int>(out.size());
  const int64_t n = ShapeElementCount(out);
  if (n <= 0) return;
  if (r == 0) { f(0, 0, 0, 0); return; }
  std::vector<int64_t> idx(r, 0);
  int64_t oa = 0, ob = 0, oc = 0;
  const int64_t inner = out[r - 1], ia = sa[r - 1], ib = sb[r - 1], ic = sc[r - 1];
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t k = 0; k < inner; ++k) f(i + k, oa + k * ia, ob + k * ib, oc + k * ic);
    for (int d = r - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      oc += sc[d];
      if (idx[d] < out[d]) break;
      oa -= sa[d] * out[d];
      ob -= sb[d] * out[d];
      oc -= sc[d] * out[d];
      idx[d] = 0;
    }
  }
}

// Contiguous maps over restrict-qualified pointers, in fixed-size blocks: GCC's -O2 cost model
// only vectorizes loops whose trip count is a known multiple of the vector width and that need
// no alias checks, so the block body vectorizes and the tail runs scalar.
inline constexpr int64_t kMapBlock = 16;

template <typename TI, typename TO, typename F>
void Map1(const typename TI::S* __restrict px, typename TO::S* __restrict po, int64_t n, F& f) {
  int64_t i = 0;
  for (; i + kMapBlock <= n; i += kMapBlock)
    for (int64_t j = 0; j < kMapBlock; ++j) po[i + j] = TO::Store(f(TI::Load(px[i + j])));
  for (; i < n; ++i) po[i] = TO::Store(f(TI::Load(px[i])));
}

template <typename TA, typename TB, typename TO, typename F>
void Map2(const typename TA::S* __restrict pa, const typename TB::S* __restrict pb, typename TO::S* __restrict po,
          int64_t n, F& f) {
  int64_t i = 0;
  for (; i + kMapBlock <= n; i += kMapBlock)
    for (int64_t j = 0; j < kMapBlock; ++j) po[i + j] = TO::Store(f(TA::Load(pa[i + j]), TB::Load(pb[i + j])));
  for (; i < n; ++i) po[i] = TO::Store(f(TA::Load(pa[i]), TB::Load(pb[i])));
}

// Row-wise broadcasting of two operands. Dims of size 1 are dropped and adjacent dims merged
// where both operands stay contiguous (or both broadcast) across them, so e.g. [N,C,H,W] + [C,1,1]
// becomes rows of H*W. Calls row(out_off, a_off, b_off, len, a_step, b_step) for every row.
template <typename Row>
void ForEachBroadcastRow2(const Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, Row&& row) {
  const int64_t total = ShapeElementCount(out);
  if (total <= 0) return;
  std::vector<int64_t> dims, da, db;  // coalesced, outermost first
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!dims.empty() && da.back() == sa[d] * out[d] && db.back() == sb[d] * out[d]) {
      dims.back() *= out[d];
      da.back() = sa[d];
      db.back() = sb[d];
    } else {
      dims.push_back(out[d]);
      da.push_back(sa[d]);
      db.push_back(sb[d]);
    }
  }
  if (dims.empty()) { row(0, 0, 0, 1, 0, 0); return; }
  const int r = static_cast<int>(dims.size());
  const int64_t inner = dims[r - 1], ia = da[r - 1], ib = db[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < total; i += inner) {
    row(i, oa, ob, inner, ia, ib);
    for (int d = r - 2; d >= 0; --d) {
      ++idx[d];
      oa += da[d];
      ob += db[d];
      if (idx[d] < dims[d]) break;
      oa -= da[d] * dims[d];
      ob -= db[d] * dims[d];
      idx[d] = 0;
    }
  }
}

// out[i] = TO::Store(f(TI::Load(x[i]))) into a new tensor of dtype out_type, set as output 0.
template <typename TI, typename TO, typename F>
Status ApplyUnary(KernelContext& ctx, const Tensor& x, DataType out_type, F&& f) {
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(out_type, x.shape()));
  Map1<TI, TO>(x.data<typename TI::S>(), out.data<typename TO::S>(), x.size(), f);
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// Broadcasting binary loop into `out` (already allocated with the broadcast shape).
// Contiguous rows run through Map1/Map2 (vectorizable); a broadcast operand is hoisted.
template <typename TA, typename TB, typename TO, typename F>
void BinaryLoop(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  const auto* pa = a.data<typename TA::S>();
  const auto* pb = b.data<typename TB::S>();
  auto* po = out.data<typename TO::S>();
  const Shape& os = out.shape();
  // Same shape or a single-element operand: flat loops, no stride bookkeeping (or allocation).
  const int64_t n = out.size();
  if (a.size() == n && b.size() == n) {
    Map2<TA, TB, TO>(pa, pb, po, n, f);
    return;
  }
  if (b.size() == 1 && a.size() == n) {
    const auto vb = TB::Load(pb[0]);
    auto g = [&f, &vb](const auto& x) { return f(x, vb); };
    Map1<TA, TO>(pa, po, n, g);
    return;
  }
  if (a.size() == 1 && b.size() == n) {
    const auto va = TA::Load(pa[0]);
    auto g = [&f, &va](const auto& y) { return f(va, y); };
    Map1<TB, TO>(pb, po, n, g);
    return;
  }
  ForEachBroadcastRow2(os, BroadcastStrides(a.shape(), os), BroadcastStrides(b.shape(), os),
                       [&](int64_t o, int64_t ia, int64_t ib, int64_t len, int64_t sa, int64_t sb) {
                         if (sa == 1 && sb == 1) {
                           Map2<TA, TB, TO>(pa + ia, pb + ib, po + o, len, f);
                         } else if (sa == 1 && sb == 0) {
                           const auto vb = TB::Load(pb[ib]);
                           auto g = [&f, &vb](const auto& x) { return f(x, vb); };
                           Map1<TA, TO>(pa + ia, po + o, len, g);
                         } else if (sa == 0 && sb == 1) {
                           const auto va = TA::Load(pa[ia]);
                           auto g = [&f, &va](const auto& y) { return f(va, y); };
                           Map1<TB, TO>(pb + ib, po + o, len, g);
                         } else {
                           for (int64_t k = 0; k < len; ++k)
                             po[o + k] = TO::Store(f(TA::Load(pa[ia + k * sa]), TB::Load(pb[ib + k * sb])));
                         }
                       });
}

// The numpy broadcast of two shapes (without BroadcastShapes' vector of shapes): false when
// they do not broadcast.
inline bool BroadcastTwo(const Shape& a, const Shape& b, Shape* out) {
  const size_t r = a.size() > b.size() ? a.size() : b.size();
  out->assign(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da == db || db == 1) (*out)[k] = da;
    else if (da == 1) (*out)[k] = db;
    else return false;
  }
  return true;
}

// BroadcastTwo, or BroadcastShapes' error.
inline Result<Shape> BroadcastShape2(const Shape& a, const Shape& b) {
  Shape out;
  if (BroadcastTwo(a, b, &out)) return out;
  return BroadcastShapes({a, b});
}

template <typename TA, typename TB, typename TO, typename F>
Status ApplyBinary(KernelContext& ctx, const Tensor& a, const Tensor& b, DataType out_type, F&& f) {
  IL_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShape2(a.shape(), b.shape()));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(out_type, std::move(out_shape)));
  BinaryLoop<TA, TB, TO>(a, b, out, std::forward<F>(f));
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// Float32 fast paths (compute/simd): vectorized and split over the run's thread pool.

// y = op(x) for a float32 x, set as output 0.
inline Status FloatUnary(KernelContext& ctx, const Tensor& x, simd::UnaryOp op, simd::UnaryArgs args = {}) {
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(DataType::kFloat, x.shape()));
  simd::Unary(ctx.thread_pool(), op, x.data<float>(), out.data<float>(), x.size(), args);
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// y = op(a, b) with numpy broadcasting for float32 a and b, set as output 0. Shapes that do not
// broadcast get the same error as ApplyBinary.
inline Status FloatBinary(KernelContext& ctx, const Tensor& a, const Tensor& b, simd::BinaryOp op,
                          float (*scalar_op)(float, float)) {
  IL_ASSIGN_OR_RETURN(Shape out_shape, BroadcastShape2(a.shape(), b.shape()));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateUninit(DataType::kFloat, std::move(out_shape)));
  const Shape& os = out.shape();
  if (!simd::BinaryBroadcast(ctx.thread_pool(), op, a.data<float>(), a.shape().data(), a.rank(), b.data<float>(),
                             b.shape().data(), b.rank(), out.data<float>(), os.data(), out.rank()))
    BinaryLoop<Plain<float>, Plain<float>, Plain<float>>(a, b, out, scalar_op);
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// Pre-opset-7 "legacy" broadcasting of binary ops (attributes broadcast, axis): B's shape is
// matched to a contiguous run of A's dims starting at `axis` (default: the trailing dims).
struct LegacyBroadcast {
  bool legacy = false;     // opset < 7
  bool broadcast = false;  // broadcast attribute
  bool has_axis = false;
  int64_t axis = 0;
  static LegacyBroadcast FromInfo(const KernelInfo& info, int first_modern_opset = 7);
  // Reshapes *b for legacy broadcasting (into `holder`), or checks shapes when broadcast=0.
  Status Apply(const KernelContext& ctx, const Tensor& a, const Tensor*& b, Tensor& holder) const;
};

// Fetches inputs 0 and 1, checks they share a dtype, applies legacy broadcasting.
Status GetBinaryInputs(const KernelContext& ctx, const LegacyBroadcast& lb, const Tensor*& a, const Tensor*& b,
                       Tensor& holder);

// Registration, by file.
void RegisterElementwiseUnary(KernelRegistry& r);       // math, activations, IsInf/IsNaN, Not, BitwiseNot
void RegisterElementwiseBinary(KernelRegistry& r);      // arithmetic, comparison, logic, bitwise, Mod, Pow, PRelu
void RegisterElementwiseMisc(KernelRegistry& r);        // Max/Min/Sum/Mean, Clip, Where, Identity

}  // namespace elementwise
}  // namespace inferloop
