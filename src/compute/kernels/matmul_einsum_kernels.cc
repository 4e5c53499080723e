// Einsum (part of the matmul kernel family).
//
// The equation is parsed once when the kernel is created. At run time the ellipsis is expanded
// (its dims broadcast like numpy), every distinct label becomes one loop dimension, and the
// result is computed directly: for each output element, the sum over all contracted labels of
// the product of the operands. Repeated labels within one operand (diagonals) simply add their
// strides together. Two-operand equations without diagonals or broadcasting (matmul-like
// contractions, the common case) instead run as permute + batched GEMM + permute.
#include <algorithm>
#include <cctype>
#include <string>
#include <type_traits>
#include <vector>

#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernels/matmul_internal.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace matmul {
namespace {

constexpr int kNumLetters = 52;  // 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (ASCII order)

struct Term {
  std::vector<int> labels;  // letter ids in order, without the ellipsis
  int ellipsis_pos = -1;    // number of labels before "...", or -1 if none
};

struct Equation {
  std::vector<Term> inputs;
  bool explicit_output = false;
  Term output;
};

int LetterId(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

// Parses one term; error message or "".
std::string ParseTerm(const std::string& s, Term* t) {
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (s.compare(i, 3, "...") != 0) return "'.' must be part of an ellipsis '...' in term '" + s + "'";
      if (t->ellipsis_pos >= 0) return "more than one ellipsis in term '" + s + "'";
      t->ellipsis_pos = static_cast<int>(t->labels.size());
      i += 2;
      continue;
    }
    int id = LetterId(c);
    if (id < 0) return std::string("invalid character '") + c + "' in term '" + s + "'";
    t->labels.push_back(id);
  }
  return "";
}

std::string ParseEquation(const std::string& raw, Equation* eq) {
  std::string s;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  std::string lhs = s, rhs;
  size_t arrow = s.find("->");
  if (arrow != std::string::npos) {
    lhs = s.substr(0, arrow);
    rhs = s.substr(arrow + 2);
    eq->explicit_output = true;
    if (rhs.find("->") != std::string::npos) return "more than one '->'";
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    std::string part = lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    Term t;
    std::string err = ParseTerm(part, &t);
    if (!err.empty()) return err;
    eq->inputs.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (eq->explicit_output) {
    std::string err = ParseTerm(rhs, &eq->output);
    if (!err.empty()) return err;
    std::vector<bool> seen(kNumLetters, false), in_inputs(kNumLetters, false);
    for (const Term& t : eq->inputs)
      for (int l : t.labels) in_inputs[l] = true;
    for (int l : eq->output.labels) {
      if (seen[l]) return "output label repeated";
      if (!in_inputs[l]) return "output label does not appear in any input";
      seen[l] = true;
    }
  } else {
    // Implicit output: ellipsis dims first, then the labels seen exactly once, in ASCII order.
    std::vector<int> count(kNumLetters, 0);
    bool any_ellipsis = false;
    for (const Term& t : eq->inputs) {
      for (int l : t.labels) ++count[l];
      any_ellipsis = any_ellipsis || t.ellipsis_pos >= 0;
    }
    if (any_ellipsis) eq->output.ellipsis_pos = 0;
    for (int l = 0; l < kNumLetters; ++l)
      if (count[l] == 1) eq->output.labels.push_back(l);
  }
  return "";
}

// The per-call loop structure: dims are global ids (letters, then ellipsis dims).
struct Loops {
  std::vector<int64_t> out_sizes, con_sizes;
  std::vector<std::vector<int64_t>> out_strides, con_strides;  // [operand][dim]
  Shape out_shape;
};

template <typename T>
void EinsumTyped(const Loops& L, const std::vector<const T*>& ops, T* out) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  const size_t n_ops = ops.size();
  const int n_out = static_cast<int>(L.out_sizes.size());
  const int n_con = static_cast<int>(L.con_sizes.size());
  int64_t out_count = 1, con_count = 1;
  for (int64_t s : L.out_sizes) out_count *= s;
  for (int64_t s : L.con_sizes) con_count *= s;
  if (out_count <= 0) return;
  std::vector<int64_t> oidx(n_out, 0), base(n_ops, 0), cidx(std::max(n_con, 1), 0), coff(n_ops, 0);
  const int64_t last = n_con > 0 ? L.con_sizes[n_con - 1] : 1;
  std::vector<int64_t> last_stride(n_ops, 0);
  if (n_con > 0)
    for (size_t k = 0; k < n_ops; ++k) last_stride[k] = L.con_strides[k][n_con - 1];
  for (int64_t o = 0; o < out_count; ++o) {
    Acc acc = Acc(0);
    if (con_count > 0) {
      std::fill(cidx.begin(), cidx.end(), 0);
      std::fill(coff.begin(), coff.end(), 0);
      for (int64_t c = 0; c < con_count; c += last) {
        for (int64_t t = 0; t < last; ++t) {
          Acc prod = Acc(1);
          for (size_t k = 0; k < n_ops; ++k) prod *= static_cast<Acc>(ops[k][base[k] + coff[k] + t * last_stride[k]]);
          acc += prod;
        }
        for (int d = n_con - 2; d >= 0; --d) {
          ++cidx[d];
          for (size_t k = 0; k < n_ops; ++k) coff[k] += L.con_strides[k][d];
          if (cidx[d] < L.con_sizes[d]) break;
          for (size_t k = 0; k < n_ops; ++k) coff[k] -= L.con_strides[k][d] * L.con_sizes[d];
          cidx[d] = 0;
        }
      }
    }
    out[o] = static_cast<T>(acc);
    for (int d = n_out - 1; d >= 0; --d) {
      ++oidx[d];
      for (size_t k = 0; k < n_ops; ++k) base[k] += L.out_strides[k][d];
      if (oidx[d] < L.out_sizes[d]) break;
      for (size_t k = 0; k < n_ops; ++k) base[k] -= L.out_strides[k][d] * L.out_sizes[d];
      oidx[d] = 0;
    }
  }
}

struct GemmDims {
  std::vector<int> batch, m, n, k;  // global dims of each class
};

// dst (contiguous, in the order of `sizes`) = src read with `strides`.
template <typename T>
void GatherStrided(const T* src, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, T* dst) {
  if (sizes.empty()) {
    dst[0] = src[0];
    return;
  }
  ForEachBroadcast2(sizes, strides, strides, [&](int64_t i, int64_t is, int64_t) { dst[i] = src[is]; });
}

// Two-operand einsum as permute + batched GEMM + permute.
template <typename T>
Status EinsumGemm(KernelContext& ctx, const GemmDims& gd, const std::vector<int64_t>& size,
                  const std::vector<std::vector<int64_t>>& gstrides, const std::vector<int>& out_dims, const T* a,
                  const T* b, Tensor* out) {
  auto prod = [&](const std::vector<int>& dims) {
    int64_t p = 1;
    for (int g : dims) p *= size[g];
    return p;
  };
  const int64_t nb = prod(gd.batch), M = prod(gd.m), N = prod(gd.n), K = prod(gd.k);
  if (out->size() == 0) return Status::Ok();
  const DataType dt = out->dtype();
  // A as [batch, M, K], B as [batch, K, N].
  auto pack = [&](const T* src, const std::vector<int64_t>& gs, const std::vector<int>& d1,
                  const std::vector<int>& d2, Tensor* dst) -> Status {
    std::vector<int64_t> sizes, strides;
    for (const auto* dims : {&gd.batch, &d1, &d2})
      for (int g : *dims) {
        sizes.push_back(size[g]);
        strides.push_back(gs[g]);
      }
    IL_ASSIGN_OR_RETURN(*dst, ctx.Allocate(dt, sizes));
    if (dst->size() > 0) GatherStrided<T>(src, sizes, strides, dst->data<T>());
    return Status::Ok();
  };
  Tensor pa, pb, pc;
  IL_RETURN_IF_ERROR(pack(a, gstrides[0], gd.m, gd.k, &pa));
  IL_RETURN_IF_ERROR(pack(b, gstrides[1], gd.k, gd.n, &pb));
  IL_ASSIGN_OR_RETURN(pc, ctx.Allocate(dt, {nb, M, N}));
  for (int64_t i = 0; i < nb; ++i)
    GemmNN<T>(M, N, K, pa.data<T>() + i * M * K, K, pb.data<T>() + i * K * N, N, pc.data<T>() + i * M * N, N);
  // pc holds [batch..., m..., n...]; write it out in the output's label order.
  std::vector<int64_t> cstride(size.size(), 0);
  int64_t st = 1;
  for (const auto* dims : {&gd.n, &gd.m, &gd.batch})
    for (auto it = dims->rbegin(); it != dims->rend(); ++it) {
      cstride[*it] = st;
      st *= size[*it];
    }
  std::vector<int64_t> sizes, strides;
  for (int g : out_dims) {
    sizes.push_back(size[g]);
    strides.push_back(cstride[g]);
  }
  GatherStrided<T>(pc.data<T>(), sizes, strides, out->data<T>());
  return Status::Ok();
}

Status ComputeEinsum(KernelContext& ctx, const Equation& eq) {
  const size_t n_ops = eq.inputs.size();
  if (static_cast<size_t>(ctx.num_inputs()) != n_ops)
    return ctx.Invalid("the equation has " + std::to_string(n_ops) + " operand(s) but the node has " +
                       std::to_string(ctx.num_inputs()) + " input(s)");
  std::vector<const Tensor*> xs(n_ops);
  for (size_t k = 0; k < n_ops; ++k) {
    IL_ASSIGN_OR_RETURN(xs[k], ctx.RequireInput(static_cast<int>(k)));
    if (xs[k]->dtype() != xs[0]->dtype())
      return ctx.Invalid(std::string("all inputs must have the same dtype, got ") + DataTypeName(xs[0]->dtype()) +
                         " and " + DataTypeName(xs[k]->dtype()));
  }
  // Ellipsis ranks.
  int ell_rank = 0;
  std::vector<int> op_ell(n_ops, 0);
  for (size_t k = 0; k < n_ops; ++k) {
    const Term& t = eq.inputs[k];
    const int rank = xs[k]->rank(), nl = static_cast<int>(t.labels.size());
    if (t.ellipsis_pos >= 0) {
      if (rank < nl)
        return ctx.Invalid("input " + std::to_string(k) + " has rank " + std::to_string(rank) + " but its term has " +
                           std::to_string(nl) + " labels");
      op_ell[k] = rank - nl;
    } else if (rank != nl) {
      return ctx.Invalid("input " + std::to_string(k) + " has rank " + std::to_string(rank) + " but its term has " +
                         std::to_string(nl) + " labels");
    }
    ell_rank = std::max(ell_rank, op_ell[k]);
  }
  const int n_dims = kNumLetters + ell_rank;
  // Global dim of each axis of each operand.
  std::vector<std::vector<int>> axis_dim(n_ops);
  for (size_t k = 0; k < n_ops; ++k) {
    const Term& t = eq.inputs[k];
    for (int i = 0; i < static_cast<int>(t.labels.size()); ++i) {
      if (i == t.ellipsis_pos)
        for (int e = 0; e < op_ell[k]; ++e) axis_dim[k].push_back(kNumLetters + ell_rank - op_ell[k] + e);
      axis_dim[k].push_back(t.labels[i]);
    }
    if (t.ellipsis_pos == static_cast<int>(t.labels.size()))
      for (int e = 0; e < op_ell[k]; ++e) axis_dim[k].push_back(kNumLetters + ell_rank - op_ell[k] + e);
  }
  // Sizes, with numpy broadcasting of size-1 dims.
  std::vector<int64_t> size(n_dims, -1);
  for (size_t k = 0; k < n_ops; ++k) {
    for (size_t a = 0; a < axis_dim[k].size(); ++a) {
      const int g = axis_dim[k][a];
      const int64_t d = xs[k]->dim(static_cast<int>(a));
      if (size[g] == -1 || size[g] == 1) size[g] = d;
      else if (d != size[g] && d != 1)
        return ctx.Invalid("dimension mismatch for " +
                           (g < kNumLetters ? std::string("label '") + (g < 26 ? char('A' + g) : char('a' + g - 26)) + "'"
                                            : std::string("an ellipsis dim")) +
                           ": " + std::to_string(size[g]) + " vs " + std::to_string(d));
    }
  }
  // Output dims.
  std::vector<int> out_dims;
  std::vector<bool> is_out(n_dims, false);
  const Term& ot = eq.output;
  for (int i = 0; i <= static_cast<int>(ot.labels.size()); ++i) {
    if (i == ot.ellipsis_pos)
      for (int e = 0; e < ell_rank; ++e) out_dims.push_back(kNumLetters + e);
    if (i < static_cast<int>(ot.labels.size())) out_dims.push_back(ot.labels[i]);
  }
  for (int g : out_dims) is_out[g] = true;
  std::vector<int> con_dims;
  for (int g = 0; g < n_dims; ++g)
    if (size[g] >= 0 && !is_out[g]) con_dims.push_back(g);

  Loops L;
  for (int g : out_dims) {
    const int64_t s = size[g] < 0 ? 1 : size[g];
    L.out_sizes.push_back(s);
    L.out_shape.push_back(s);
  }
  for (int g : con_dims) L.con_sizes.push_back(size[g]);
  L.out_strides.assign(n_ops, std::vector<int64_t>(out_dims.size(), 0));
  L.con_strides.assign(n_ops, std::vector<int64_t>(con_dims.size(), 0));
  // Two operands without diagonals or broadcasting can run as a batched GEMM.
  bool gemm_ok = n_ops == 2;
  std::vector<std::vector<int64_t>> gstrides(n_ops);
  std::vector<std::vector<bool>> uses(n_ops, std::vector<bool>(n_dims, false));
  for (size_t k = 0; k < n_ops; ++k) {
    std::vector<int64_t>& gstride = gstrides[k];
    gstride.assign(n_dims, 0);
    int64_t st = 1;
    for (int a = xs[k]->rank() - 1; a >= 0; --a) {
      const int g = axis_dim[k][a];
      if (uses[k][g] || xs[k]->dim(a) != size[g]) gemm_ok = false;
      uses[k][g] = true;
      if (!(xs[k]->dim(a) == 1 && size[g] != 1)) gstride[g] += st;  // size-1 dims broadcast
      st *= xs[k]->dim(a);
    }
    for (size_t i = 0; i < out_dims.size(); ++i) L.out_strides[k][i] = gstride[out_dims[i]];
    for (size_t i = 0; i < con_dims.size(); ++i) L.con_strides[k][i] = gstride[con_dims[i]];
  }

  // Labels of each class for the GEMM path: batch (both + output), M (first + output),
  // N (second + output), K (both, summed). A label in one operand only and not in the output
  // would need a pre-reduction: leave that to the direct loop.
  GemmDims gd;
  if (gemm_ok) {
    for (int g : out_dims) {
      if (uses[0][g] && uses[1][g]) gd.batch.push_back(g);
      else if (uses[0][g]) gd.m.push_back(g);
      else gd.n.push_back(g);
    }
    for (int g : con_dims) {
      if (uses[0][g] && uses[1][g]) gd.k.push_back(g);
      else gemm_ok = false;
    }
  }

  const DataType dt = xs[0]->dtype();
  std::vector<Tensor> cs(n_ops);
  for (size_t k = 0; k < n_ops; ++k) {
    if (IsFloat16Like(dt)) {
      IL_ASSIGN_OR_RETURN(cs[k], ToFloat32(*xs[k]));
    } else {
      cs[k] = *xs[k];
    }
  }
  const DataType cdt = cs[0].dtype();
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(cdt, L.out_shape));
  IL_RETURN_IF_ERROR(DispatchNumeric(
      cdt,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (gemm_ok) return EinsumGemm<T>(ctx, gd, size, gstrides, out_dims, cs[0].data<T>(), cs[1].data<T>(), &out);
        std::vector<const T*> ptrs(n_ops);
        for (size_t k = 0; k < n_ops; ++k) ptrs[k] = cs[k].data<T>();
        EinsumTyped<T>(L, ptrs, out.data<T>());
        return Status::Ok();
      },
      "Einsum"));
  if (cdt != dt) {
    IL_ASSIGN_OR_RETURN(out, CastTensor(out, dt));
  }
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

}  // namespace

void RegisterEinsumKernels(KernelRegistry& r) {
  r.Register("", "Einsum", 12, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    if (!info.has_attr("equation")) return info.Invalid("attribute 'equation' is required");
    Equation eq;
    std::string err = ParseEquation(info.GetString("equation", ""), &eq);
    if (!err.empty()) return info.Invalid("bad equation '" + info.GetString("equation", "") + "': " + err);
    if (static_cast<int>(eq.inputs.size()) != info.num_inputs())
      return info.Invalid("the equation has " + std::to_string(eq.inputs.size()) + " operand(s) but the node has " +
                          std::to_string(info.num_inputs()) + " input(s)");
    return MakeKernel([eq = std::move(eq)](KernelContext& ctx) { return ComputeEinsum(ctx, eq); });
  });
}

}  // namespace matmul
}  // namespace inferloop
