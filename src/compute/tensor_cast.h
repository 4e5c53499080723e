// Element type conversion of whole tensors, shared by Cast and by kernels that compute
// float16/bfloat16/float8 in float32.
//
// Semantics follow ONNX Cast (and its reference implementation where the spec leaves gaps):
// - floating -> floating: round to nearest even, once (double -> float16 does not go through
//   float32); out of range gives +-inf, or for float8 types see `saturate`.
// - floating -> integer: truncation toward zero, then the low bits are kept (wrap), as numpy /
//   ml_dtypes do on x86; NaN, infinities and values beyond int64 give the bit pattern of
//   INT64_MIN wrapped (0 for every type narrower than 64 bits). The spec calls this undefined.
// - integer -> integer (including int4/uint4/int2/uint2): the low bits are kept (two's
//   complement wrap), e.g. 200 (int16) -> -56 (int8), 9 -> int4 -7.
// - anything -> bool: zero (and -0.0) is false, everything else (NaN included) true.
// - numbers -> string: integers in decimal, bool as "1"/"0", floating values with the fewest
//   digits that read back to the same value, positional unless the exponent is below -4 or at
//   least 9 (float) / 17 (double) like printf's %g ("0.1", "314.15926", "1000000", "1e-07",
//   "1e+20"), and "NaN", "INF", "-INF".
// - string -> numbers: leading/trailing blanks ignored; "NaN", "INF", "+INF", "-INF",
//   "Infinity" in any case; decimal or scientific text ("1e-5", "1E8"); for integer targets
//   integer text is read exactly and other numeric text is converted like a double
//   ("100.5" -> 100). string -> bool: "true"/"false" in any case, else a number != 0.
//   Text that is not a number is an InvalidArgument error.
#pragma once

#include "base/float_types.h"
#include "inferloop/tensor.h"

namespace inferloop {

struct CastOptions {
  // Float8 targets: out-of-range values and infinities become the largest finite value
  // (true, ONNX's default) or inf/NaN (false). Also applies to float8e8m0.
  bool saturate = true;
  // float8e8m0 targets only.
  E8M0Rounding round_mode = E8M0Rounding::kUp;
};

// Converts every element to `to`. saturate applies to float8 targets (ONNX Cast semantics).
// Numbers <-> strings follow ONNX Cast (decimal text; "NaN", "INF", "-INF").
Result<Tensor> CastTensor(const Tensor& src, DataType to, bool saturate = true);
Result<Tensor> CastTensor(const Tensor& src, DataType to, const CastOptions& options);

// Converts `src` into `dst`, which must already have the target dtype and the same element
// count (for kernels that allocate the output themselves, within the session's limits).
Status CastInto(const Tensor& src, Tensor& dst, const CastOptions& options = {});

// Shortcut: a float32 copy of a float16/bfloat16/float8/double tensor, or `src` itself if float.
Result<Tensor> ToFloat32(const Tensor& src);

}  // namespace inferloop
