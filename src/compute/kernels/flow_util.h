// Small helpers shared by the control-flow, sequence, ml, training and random kernels:
// scalar reads, element copies that work for every dtype (strings included) and
// slicing / stacking along one axis.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "compute/kernel.h"

namespace inferloop {
namespace flow {

// Reads a one-element int32/int64 tensor.
inline Status ReadIndexScalar(const Tensor& t, const char* what, int64_t* out) {
  if (t.size() != 1) return Status::InvalidArgument(std::string(what) + " must hold one element, got shape " + ShapeToString(t.shape()));
  if (t.dtype() == DataType::kInt64) *out = t.data<int64_t>()[0];
  else if (t.dtype() == DataType::kInt32) *out = t.data<int32_t>()[0];
  else return Status::InvalidArgument(std::string(what) + " must be int32 or int64, got " + DataTypeName(t.dtype()));
  return Status::Ok();
}

// Reads a one-element bool tensor.
inline Status ReadBoolScalar(const Tensor& t, const char* what, bool* out) {
  if (t.size() != 1) return Status::InvalidArgument(std::string(what) + " must hold one element, got shape " + ShapeToString(t.shape()));
  if (t.dtype() != DataType::kBool) return Status::InvalidArgument(std::string(what) + " must be bool, got " + DataTypeName(t.dtype()));
  *out = t.data<uint8_t>()[0] != 0;
  return Status::Ok();
}

// Copies n elements src[src_off..) -> dst[dst_off..). Same dtype assumed (checked by callers).
inline void CopyElements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DataType::kString) {
    const std::string* s = src.strings() + src_off;
    std::string* d = dst.strings() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + dst_off * es, static_cast<const char*>(src.raw_data()) + src_off * es, n * es);
}

inline int64_t Prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

// Normalizes axis in [-rank, rank) (or [-rank-1, rank] when `extra`); false when out of range.
inline bool NormalizeAxis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

// src[..., start:start+len, ...] along `axis`; drops the axis when !keep_dim (len must be 1).
inline Result<Tensor> SliceAxis(KernelContext& ctx, const Tensor& src, int axis, int64_t start, int64_t len, bool keep_dim) {
  const Shape& s = src.shape();
  Shape out_shape = s;
  if (keep_dim) out_shape[axis] = len;
  else out_shape.erase(out_shape.begin() + axis);
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(src.dtype(), out_shape));
  const int64_t outer = Prod(s, 0, axis), dim = s[axis], inner = Prod(s, axis + 1, s.size());
  for (int64_t o = 0; o < outer; ++o) CopyElements(src, (o * dim + start) * inner, out, o * len * inner, len * inner);
  return out;
}

// Writes `part` (shape = out shape with `axis` of length `len`, or without `axis` when
// !has_axis, len 1) into out[..., start:start+len, ...].
inline void PlaceAxis(const Tensor& part, Tensor& out, int axis, int64_t start, int64_t len) {
  const Shape& s = out.shape();
  const int64_t outer = Prod(s, 0, axis), dim = s[axis], inner = Prod(s, axis + 1, s.size());
  for (int64_t o = 0; o < outer; ++o) CopyElements(part, o * len * inner, out, (o * dim + start) * inner, len * inner);
}

// Stacks same-shape, same-dtype tensors along a new axis `axis` (0..rank).
inline Result<Tensor> Stack(KernelContext& ctx, const std::vector<Tensor>& parts, int axis, const char* what) {
  if (parts.empty()) return Status::InvalidArgument(std::string(what) + ": nothing to stack");
  const Tensor& first = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].dtype() != first.dtype() || parts[i].shape() != first.shape())
      return Status::InvalidArgument(std::string(what) + ": element " + std::to_string(i) + " has " +
                                     DataTypeName(parts[i].dtype()) + ShapeToString(parts[i].shape()) + ", expected " +
                                     DataTypeName(first.dtype()) + ShapeToString(first.shape()) + " like element 0");
  }
  Shape out_shape = first.shape();
  out_shape.insert(out_shape.begin() + axis, static_cast<int64_t>(parts.size()));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(first.dtype(), out_shape));
  for (size_t i = 0; i < parts.size(); ++i) PlaceAxis(parts[i], out, axis, static_cast<int64_t>(i), 1);
  return out;
}

// A description of a value for messages: "tensor float[2,3]", "sequence", "empty optional".
inline std::string Describe(const Value* v) {
  if (!v || v->is_none()) return "an empty optional";
  if (v->is_sequence()) return "a sequence";
  return std::string("a ") + DataTypeName(v->tensor().dtype()) + " tensor " + ShapeToString(v->tensor().shape());
}

}  // namespace flow
}  // namespace inferloop
