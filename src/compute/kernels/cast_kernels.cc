// Registration of the cast kernel family: Cast (opsets 1..25) and CastLike (15..25).
// The conversions themselves live in compute/tensor_cast.cc (CastInto), shared with other
// kernels; see tensor_cast.h for the exact semantics.
#include <cctype>
#include <string>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

bool CastableType(DataType t) {
  return t != DataType::kUndefined && t != DataType::kComplex64 && t != DataType::kComplex128 &&
         IsKnownDataType(static_cast<int32_t>(t));
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Cast-1 names the target type in a string attribute ("FLOAT", "INT64", ...).
bool DataTypeFromName(const std::string& name, DataType* out) {
  const std::string want = Lower(name);
  for (int32_t v = 1; v <= 64; ++v) {
    if (!IsKnownDataType(v)) continue;
    if (Lower(DataTypeName(static_cast<DataType>(v))) == want) {
      *out = static_cast<DataType>(v);
      return true;
    }
  }
  return false;
}

// saturate (opset 19+) and round_mode (opset 24+), shared by Cast and CastLike.
Result<CastOptions> ReadCastOptions(const KernelInfo& info) {
  CastOptions o;
  const int64_t saturate = info.GetInt("saturate", 1);
  if (saturate != 0 && saturate != 1) return info.Invalid("attribute 'saturate' must be 0 or 1, got " + std::to_string(saturate));
  o.saturate = saturate != 0;
  const std::string mode = info.GetString("round_mode", "up");
  if (mode == "up") o.round_mode = E8M0Rounding::kUp;
  else if (mode == "down") o.round_mode = E8M0Rounding::kDown;
  else if (mode == "nearest") o.round_mode = E8M0Rounding::kNearest;
  else return info.Invalid("attribute 'round_mode' must be 'up', 'down' or 'nearest', got '" + mode + "'");
  return o;
}

Status RunCast(KernelContext& ctx, DataType to, const CastOptions& o) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  if (!CastableType(x->dtype())) return ctx.Invalid(std::string("cannot cast from ") + DataTypeName(x->dtype()));
  if (x->dtype() == to) {
    ctx.SetOutput(0, *x);  // tensors are immutable: share the buffer
    return Status::Ok();
  }
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(to, x->shape()));
  Status st = CastInto(*x, out, o);
  if (!st.ok()) return st.WithContext(ctx.node().Describe());
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeCast(const KernelInfo& info) {
  const Attribute* to_attr = info.attr("to");
  if (!to_attr) return info.Invalid("missing required attribute 'to'");
  DataType to;
  if (to_attr->type == Attribute::Type::kInt) {
    if (!IsKnownDataType(static_cast<int32_t>(to_attr->i)) || to_attr->i != static_cast<int32_t>(to_attr->i))
      return info.Invalid("attribute 'to' is not a known data type: " + std::to_string(to_attr->i));
    to = static_cast<DataType>(to_attr->i);
  } else if (to_attr->type == Attribute::Type::kString) {
    if (!DataTypeFromName(to_attr->s, &to)) return info.Invalid("attribute 'to' is not a known data type: '" + to_attr->s + "'");
  } else {
    return info.Invalid("attribute 'to' must be an integer");
  }
  if (!CastableType(to)) return info.Invalid(std::string("cannot cast to ") + DataTypeName(to));
  IL_ASSIGN_OR_RETURN(CastOptions o, ReadCastOptions(info));
  return MakeKernel([to, o](KernelContext& ctx) { return RunCast(ctx, to, o); });
}

Result<std::unique_ptr<Kernel>> MakeCastLike(const KernelInfo& info) {
  if (!info.has_input(1)) return info.Invalid("CastLike needs two inputs (input, target_type)");
  IL_ASSIGN_OR_RETURN(CastOptions o, ReadCastOptions(info));
  return MakeKernel([o](KernelContext& ctx) -> Status {
    IL_ASSIGN_OR_RETURN(const Tensor* like, ctx.RequireInput(1));
    if (!CastableType(like->dtype())) return ctx.Invalid(std::string("cannot cast to ") + DataTypeName(like->dtype()));
    return RunCast(ctx, like->dtype(), o);
  });
}

}  // namespace

void RegisterCastKernels(KernelRegistry& r) {
  r.Register("", "Cast", 1, MakeCast);
  r.Register("", "CastLike", 15, MakeCastLike);
}

}  // namespace inferloop
