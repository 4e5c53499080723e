// Registration of the sequence kernel family: Sequence*, SplitToSequence, ConcatFromSequence,
// Optional, OptionalHasElement, OptionalGetElement.
//
// A sequence is Value::MakeSequence(tensors, elem_type); an optional is "transparent": a
// present optional is just its tensor/sequence Value, an empty one is Value::None().
#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/flow_util.h"

namespace inferloop {
namespace {

using flow::Describe;

Result<const Value*> RequireSequence(KernelContext& ctx, int i, const char* what) {
  const Value* v = ctx.input_value(i);
  if (!v || !v->is_sequence()) return ctx.Invalid(std::string(what) + " must be a sequence, got " + Describe(v));
  return v;
}

// The element type of a sequence; falls back to its first element when undeclared.
DataType SeqType(const Value& v) {
  if (v.sequence_elem_type() != DataType::kUndefined) return v.sequence_elem_type();
  return v.sequence().empty() ? DataType::kUndefined : v.sequence()[0].dtype();
}

// Reads optional position input i; `allow_end` allows position == size (insertion).
Status ReadPosition(KernelContext& ctx, int i, int64_t size, bool allow_end, int64_t def, int64_t* pos) {
  const Value* pv = ctx.input_value(i);
  if (!pv || pv->is_none()) {
    *pos = def;
    return Status::Ok();
  }
  if (!pv->is_tensor()) return ctx.Invalid("position must be a tensor, got " + Describe(pv));
  int64_t p;
  Status st = flow::ReadIndexScalar(pv->tensor(), "position", &p);
  if (!st.ok()) return ctx.Invalid(st.message());
  const int64_t hi = allow_end ? size : size - 1;
  if (p < -size || p > hi)
    return ctx.Invalid("position " + std::to_string(p) + " is out of range [" + std::to_string(-size) + ", " + std::to_string(hi) +
                       "] for a sequence of " + std::to_string(size) + " elements");
  *pos = p < 0 ? p + size : p;
  return Status::Ok();
}

Status CheckElemType(KernelContext& ctx, const Value& seq, const Tensor& t) {
  DataType st = SeqType(seq);
  if (st != DataType::kUndefined && st != t.dtype())
    return ctx.Invalid(std::string("tensor of type ") + DataTypeName(t.dtype()) + " cannot join a sequence of " + DataTypeName(st));
  return Status::Ok();
}

// Concatenates tensors along an existing axis (new_axis=false) or stacks them along a new one.
Result<Tensor> ConcatTensors(KernelContext& ctx, const std::vector<Tensor>& parts, int64_t axis_attr, bool new_axis) {
  if (parts.empty()) return ctx.Invalid("cannot concatenate an empty sequence");
  const Tensor& first = parts[0];
  const int64_t rank = first.rank();
  int64_t axis;
  if (!flow::NormalizeAxis(axis_attr, new_axis ? rank + 1 : rank, &axis))
    return ctx.Invalid("axis " + std::to_string(axis_attr) + " is out of range for tensors of rank " + std::to_string(rank) +
                       (new_axis ? " with new_axis=1" : ""));
  if (new_axis) {
    auto r = flow::Stack(ctx, parts, static_cast<int>(axis), "ConcatFromSequence");
    if (!r.ok()) return ctx.Invalid(r.status().message());
    return r;
  }
  Shape out_shape = first.shape();
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    if (p.dtype() != first.dtype())
      return ctx.Invalid("sequence element " + std::to_string(i) + " is " + DataTypeName(p.dtype()) + ", expected " +
                         DataTypeName(first.dtype()));
    bool ok = p.rank() == rank;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || p.dim(static_cast<int>(d)) == first.dim(static_cast<int>(d));
    if (!ok)
      return ctx.Invalid("sequence element " + std::to_string(i) + " has shape " + ShapeToString(p.shape()) +
                         ", which does not match element 0's " + ShapeToString(first.shape()) + " outside axis " + std::to_string(axis));
    total += p.dim(static_cast<int>(axis));
  }
  out_shape[axis] = total;
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(first.dtype(), out_shape));
  int64_t pos = 0;
  for (const Tensor& p : parts) {
    const int64_t len = p.dim(static_cast<int>(axis));
    flow::PlaceAxis(p, out, static_cast<int>(axis), pos, len);
    pos += len;
  }
  return out;
}

Result<DataType> DtypeAttr(const KernelInfo& info, const char* name, DataType def) {
  if (!info.has_attr(name)) return def;
  int64_t v = info.GetInt(name, 0);
  if (!IsKnownDataType(static_cast<int32_t>(v)) || v == 0) return info.Invalid(std::string("unknown ") + name + " " + std::to_string(v));
  return static_cast<DataType>(v);
}

// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt, SequenceLength.
void RegisterSequenceBasics(KernelRegistry& r) {
  r.Register("", "SequenceEmpty", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    IL_ASSIGN_OR_RETURN(DataType dt, DtypeAttr(info, "dtype", DataType::kFloat));
    return MakeKernel([dt](KernelContext& ctx) -> Status {
      ctx.SetOutput(0, Value::MakeSequence({}, dt));
      return Status::Ok();
    });
  });

  r.Register("", "SequenceConstruct", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    if (info.num_inputs() < 1) return info.Invalid("needs at least one input");
    return MakeKernel([](KernelContext& ctx) -> Status {
      std::vector<Tensor> elems;
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor* t = ctx.input(i);
        if (!t) return ctx.Invalid("input " + std::to_string(i) + " must be a tensor, got " + Describe(ctx.input_value(i)));
        if (!elems.empty() && t->dtype() != elems[0].dtype())
          return ctx.Invalid("input " + std::to_string(i) + " is " + DataTypeName(t->dtype()) + ", but input 0 is " +
                             DataTypeName(elems[0].dtype()));
        elems.push_back(*t);
      }
      DataType dt = elems[0].dtype();
      ctx.SetOutput(0, Value::MakeSequence(std::move(elems), dt));
      return Status::Ok();
    });
  });

  r.Register("", "SequenceInsert", 11, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Value* seq, RequireSequence(ctx, 0, "input_sequence"));
      IL_ASSIGN_OR_RETURN(const Tensor* t, ctx.RequireInput(1));
      IL_RETURN_IF_ERROR(CheckElemType(ctx, *seq, *t));
      const int64_t n = static_cast<int64_t>(seq->sequence().size());
      int64_t pos;
      IL_RETURN_IF_ERROR(ReadPosition(ctx, 2, n, true, n, &pos));
      std::vector<Tensor> elems = seq->sequence();
      elems.insert(elems.begin() + pos, *t);
      DataType dt = SeqType(*seq) == DataType::kUndefined ? t->dtype() : SeqType(*seq);
      ctx.SetOutput(0, Value::MakeSequence(std::move(elems), dt));
      return Status::Ok();
    });
  });

  r.Register("", "SequenceErase", 11, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Value* seq, RequireSequence(ctx, 0, "input_sequence"));
      const int64_t n = static_cast<int64_t>(seq->sequence().size());
      if (n == 0) return ctx.Invalid("cannot erase from an empty sequence");
      int64_t pos;
      IL_RETURN_IF_ERROR(ReadPosition(ctx, 1, n, false, n - 1, &pos));
      std::vector<Tensor> elems = seq->sequence();
      elems.erase(elems.begin() + pos);
      ctx.SetOutput(0, Value::MakeSequence(std::move(elems), SeqType(*seq)));
      return Status::Ok();
    });
  });

  r.Register("", "SequenceAt", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    if (!info.has_input(1)) return info.Invalid("position input is required");
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Value* seq, RequireSequence(ctx, 0, "input_sequence"));
      const int64_t n = static_cast<int64_t>(seq->sequence().size());
      if (!ctx.input(1)) return ctx.Invalid("position must be a tensor, got " + Describe(ctx.input_value(1)));
      int64_t pos;
      IL_RETURN_IF_ERROR(ReadPosition(ctx, 1, n, false, 0, &pos));
      ctx.SetOutput(0, seq->sequence()[pos]);
      return Status::Ok();
    });
  });

  r.Register("", "SequenceLength", 11, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Value* seq, RequireSequence(ctx, 0, "input_sequence"));
      IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kInt64, {}));
      out.data<int64_t>()[0] = static_cast<int64_t>(seq->sequence().size());
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    });
  });
}

// SplitToSequence and ConcatFromSequence: between a tensor and a sequence of its parts.
void RegisterSequenceSplitConcat(KernelRegistry& r) {
  r.Register("", "SplitToSequence", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const int64_t axis_attr = info.GetInt("axis", 0);
    const int64_t keepdims = info.GetInt("keepdims", 1);
    if (keepdims != 0 && keepdims != 1) return info.Invalid("keepdims must be 0 or 1, got " + std::to_string(keepdims));
    return MakeKernel([axis_attr, keepdims](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      int64_t axis;
      if (!flow::NormalizeAxis(axis_attr, x->rank(), &axis))
        return ctx.Invalid("axis " + std::to_string(axis_attr) + " is out of range for input of rank " + std::to_string(x->rank()));
      const int64_t dim = x->dim(static_cast<int>(axis));
      std::vector<int64_t> lengths;
      bool keep = true;
      const Value* sv = ctx.input_value(1);
      if (!sv || sv->is_none()) {
        lengths.assign(dim, 1);
        keep = keepdims != 0;
      } else {
        if (!sv->is_tensor()) return ctx.Invalid("split must be a tensor, got " + Describe(sv));
        const Tensor& s = sv->tensor();
        if (s.dtype() != DataType::kInt64 && s.dtype() != DataType::kInt32)
          return ctx.Invalid(std::string("split must be int32 or int64, got ") + DataTypeName(s.dtype()));
        auto at = [&](int64_t i) { return s.dtype() == DataType::kInt64 ? s.data<int64_t>()[i] : s.data<int32_t>()[i]; };
        if (s.rank() == 0) {
          const int64_t len = at(0);
          if (len <= 0) return ctx.Invalid("split must be positive, got " + std::to_string(len));
          for (int64_t p = 0; p < dim; p += len) lengths.push_back(std::min(len, dim - p));
        } else if (s.rank() == 1) {
          int64_t sum = 0;
          for (int64_t i = 0; i < s.size(); ++i) {
            const int64_t len = at(i);
            if (len < 0) return ctx.Invalid("split entries must be non-negative, got " + std::to_string(len));
            lengths.push_back(len);
            sum += len;
          }
          if (sum != dim)
            return ctx.Invalid("split sums to " + std::to_string(sum) + " but the input has " + std::to_string(dim) +
                               " elements along axis " + std::to_string(axis));
        } else {
          return ctx.Invalid("split must be a scalar or 1-D, got shape " + ShapeToString(s.shape()));
        }
      }
      std::vector<Tensor> parts;
      parts.reserve(lengths.size());
      int64_t pos = 0;
      for (int64_t len : lengths) {
        IL_ASSIGN_OR_RETURN(Tensor p, flow::SliceAxis(ctx, *x, static_cast<int>(axis), pos, len, keep));
        parts.push_back(std::move(p));
        pos += len;
      }
      ctx.SetOutput(0, Value::MakeSequence(std::move(parts), x->dtype()));
      return Status::Ok();
    });
  });

  r.Register("", "ConcatFromSequence", 11, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    if (!info.has_attr("axis")) return info.Invalid("attribute 'axis' is required");
    const int64_t axis = info.GetInt("axis", 0);
    const int64_t new_axis = info.GetInt("new_axis", 0);
    if (new_axis != 0 && new_axis != 1) return info.Invalid("new_axis must be 0 or 1, got " + std::to_string(new_axis));
    return MakeKernel([axis, new_axis](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Value* seq, RequireSequence(ctx, 0, "input_sequence"));
      IL_ASSIGN_OR_RETURN(Tensor out, ConcatTensors(ctx, seq->sequence(), axis, new_axis == 1));
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    });
  });
}

// Optional, OptionalHasElement, OptionalGetElement.
void RegisterOptionalKernels(KernelRegistry& r) {
  r.Register("", "Optional", 15, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const Attribute* ta = info.attr("type");
    if (!info.has_input(0) && !ta) return info.Invalid("needs either an input or the 'type' attribute");
    TypeInfo declared;
    if (ta) {
      if (ta->type != Attribute::Type::kTypeProto) return info.Invalid("attribute 'type' must be a TypeProto");
      declared = ta->tp;
    }
    return MakeKernel([declared](KernelContext& ctx) -> Status {
      const Value* v = ctx.input_value(0);
      if (!v || v->is_none()) {
        ctx.SetOutput(0, Value::None());
        return Status::Ok();
      }
      if (declared.kind == TypeInfo::Kind::kTensor && declared.elem_type != DataType::kUndefined &&
          (!v->is_tensor() || v->tensor().dtype() != declared.elem_type))
        return ctx.Invalid(std::string("input is ") + Describe(v) + ", but attribute 'type' says a " +
                           DataTypeName(declared.elem_type) + " tensor");
      if (declared.kind == TypeInfo::Kind::kSequence && !v->is_sequence())
        return ctx.Invalid("input is " + Describe(v) + ", but attribute 'type' says a sequence");
      ctx.SetOutput(0, *v);
      return Status::Ok();
    });
  });

  r.Register("", "OptionalHasElement", 15, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel([](KernelContext& ctx) -> Status {
      const Value* v = ctx.input_value(0);
      IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(DataType::kBool, {}));
      out.data<uint8_t>()[0] = (v && !v->is_none()) ? 1 : 0;
      ctx.SetOutput(0, std::move(out));
      return Status::Ok();
    });
  });

  r.Register("", "OptionalGetElement", 15, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    if (!info.has_input(0)) return info.Invalid("input is required");
    return MakeKernel([](KernelContext& ctx) -> Status {
      const Value* v = ctx.input_value(0);
      if (!v || v->is_none()) return ctx.Invalid("the optional input is empty; it has no element to get");
      ctx.SetOutput(0, *v);
      return Status::Ok();
    });
  });
}

}  // namespace

void RegisterSequenceKernels(KernelRegistry& r) {
  RegisterSequenceBasics(r);
  RegisterSequenceSplitConcat(r);
  RegisterOptionalKernels(r);
}

}  // namespace inferloop
