// Registration of the rnn kernel family: RNN, GRU, LSTM (ai.onnx 1, 3 (GRU), 7, 14, 22).
//
// All three share one driver: the input projection X*W^T + Wb is computed for every time step
// up front (one matrix product), then each step adds H_{t-1}*R^T and applies the cell. Each batch
// entry follows its own sequence length (sequence_lens); steps past it leave Y zero and Y_h/Y_c
// keep the state after the last valid step. float16/bfloat16 compute in float, double in double.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/float_compute.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

using float_compute::AsCompute;
using float_compute::ComputeDtype;
using float_compute::Dot;

enum class Cell { kRnn, kGru, kLstm };

enum class ActKind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus };

struct Activation {
  ActKind kind = ActKind::kTanh;
  float alpha = 0, beta = 0;

  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (kind) {
      case ActKind::kRelu: return x > 0 ? x : C(0);
      case ActKind::kTanh: return std::tanh(x);
      case ActKind::kSigmoid: return x >= 0 ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
      case ActKind::kAffine: return a * x + b;
      case ActKind::kLeakyRelu: return x >= 0 ? x : a * x;
      case ActKind::kThresholdedRelu: return x > a ? x : C(0);
      case ActKind::kScaledTanh: return a * std::tanh(b * x);
      case ActKind::kHardSigmoid: return std::min(C(1), std::max(C(0), a * x + b));
      case ActKind::kElu: return x >= 0 ? x : a * (std::exp(x) - C(1));
      case ActKind::kSoftsign: return x / (C(1) + std::abs(x));
      case ActKind::kSoftplus: return x > 20 ? x : std::log1p(std::exp(x));
    }
    return x;
  }
};

// Parses an activation name (case-insensitive). uses_alpha/uses_beta and the defaults follow
// the corresponding ONNX operators.
bool ParseActivation(const std::string& name, Activation* act, bool* uses_alpha, bool* uses_beta) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  *uses_alpha = *uses_beta = false;
  act->alpha = act->beta = 0;
  if (n == "relu") act->kind = ActKind::kRelu;
  else if (n == "tanh") act->kind = ActKind::kTanh;
  else if (n == "sigmoid") act->kind = ActKind::kSigmoid;
  else if (n == "affine") { act->kind = ActKind::kAffine; act->alpha = 1; act->beta = 0; *uses_alpha = *uses_beta = true; }
  else if (n == "leakyrelu") { act->kind = ActKind::kLeakyRelu; act->alpha = 0.01f; *uses_alpha = true; }
  else if (n == "thresholdedrelu") { act->kind = ActKind::kThresholdedRelu; act->alpha = 1; *uses_alpha = true; }
  else if (n == "scaledtanh") { act->kind = ActKind::kScaledTanh; act->alpha = 1; act->beta = 1; *uses_alpha = *uses_beta = true; }
  else if (n == "hardsigmoid") { act->kind = ActKind::kHardSigmoid; act->alpha = 0.2f; act->beta = 0.5f; *uses_alpha = *uses_beta = true; }
  else if (n == "elu") { act->kind = ActKind::kElu; act->alpha = 1; *uses_alpha = true; }
  else if (n == "softsign") act->kind = ActKind::kSoftsign;
  else if (n == "softplus") act->kind = ActKind::kSoftplus;
  else return false;
  return true;
}

struct RnnAttrs {
  Cell cell = Cell::kRnn;
  int gates = 1;           // rows of W per hidden unit: 1, 3 or 4
  int acts_per_dir = 1;    // 1, 2 or 3
  int64_t hidden = 0;      // 0: take it from R
  int dirs = 1;
  bool reverse = false;    // direction == "reverse"
  bool layout1 = false;
  float clip = 0;          // 0: no clip
  bool linear_before_reset = false;
  bool input_forget = false;
  std::vector<Activation> acts;  // acts_per_dir * dirs
};

// C[m, n] = sum_k A[m, k] * B[n, k]  (A: M x K, B: N x K, both row-major; C: M x N).
template <typename C>
void MatMulABt(const C* a, const C* b, C* c, int64_t M, int64_t N, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    const C* arow = a + m * K;
    C* crow = c + m * N;
    for (int64_t n = 0; n < N; ++n) crow[n] = Dot(arow, b + n * K, K);
  }
}

class RnnKernel : public Kernel {
 public:
  explicit RnnKernel(RnnAttrs a) : a_(std::move(a)) {}

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    switch (x->dtype()) {
      case DataType::kDouble: return Run<double>(ctx);
      case DataType::kFloat:
      case DataType::kFloat16:
      case DataType::kBFloat16: return Run<float>(ctx);
      default:
        return ctx.Invalid(std::string("X must be float16, bfloat16, float or double, got ") + DataTypeName(x->dtype()));
    }
  }

 private:
  template <typename C>
  Status Run(KernelContext& ctx) const;

  RnnAttrs a_;
};

template <typename C>
Status RnnKernel::Run(KernelContext& ctx) const {
  const bool lstm = a_.cell == Cell::kLstm;
  IL_ASSIGN_OR_RETURN(const Tensor* X, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* W, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(const Tensor* R, ctx.RequireInput(2));
  const Tensor* Bt = ctx.input(3);
  const Tensor* lens_t = ctx.input(4);
  const Tensor* h0_t = ctx.input(5);
  const Tensor* c0_t = lstm ? ctx.input(6) : nullptr;
  const Tensor* P_t = lstm ? ctx.input(7) : nullptr;
  const DataType dt = X->dtype();
  for (const Tensor* t : {W, R, Bt, h0_t, c0_t, P_t})
    if (t && t->dtype() != dt)
      return ctx.Invalid(std::string("W, R, B, initial_h, initial_c and P must have X's dtype ") + DataTypeName(dt) + ", got " +
                         DataTypeName(t->dtype()));
  if (X->rank() != 3) return ctx.Invalid("X must be 3-D, got " + ShapeToString(X->shape()));
  const int64_t seq = a_.layout1 ? X->dim(1) : X->dim(0);
  const int64_t batch = a_.layout1 ? X->dim(0) : X->dim(1);
  const int64_t I = X->dim(2);
  const int64_t D = a_.dirs;
  if (R->rank() != 3) return ctx.Invalid("R must be 3-D, got " + ShapeToString(R->shape()));
  const int64_t H = a_.hidden > 0 ? a_.hidden : R->dim(2);
  const int64_t G = a_.gates;
  const int64_t GH = G * H;
  if (W->shape() != Shape{D, GH, I})
    return ctx.Invalid("W expected shape " + ShapeToString({D, GH, I}) + ", got " + ShapeToString(W->shape()));
  if (R->shape() != Shape{D, GH, H})
    return ctx.Invalid("R expected shape " + ShapeToString({D, GH, H}) + ", got " + ShapeToString(R->shape()));
  if (Bt && Bt->shape() != Shape{D, 2 * GH})
    return ctx.Invalid("B expected shape " + ShapeToString({D, 2 * GH}) + ", got " + ShapeToString(Bt->shape()));
  if (P_t && P_t->shape() != Shape{D, 3 * H})
    return ctx.Invalid("P expected shape " + ShapeToString({D, 3 * H}) + ", got " + ShapeToString(P_t->shape()));
  const Shape state_shape = a_.layout1 ? Shape{batch, D, H} : Shape{D, batch, H};
  if (h0_t && h0_t->shape() != state_shape)
    return ctx.Invalid("initial_h expected shape " + ShapeToString(state_shape) + ", got " + ShapeToString(h0_t->shape()));
  if (c0_t && c0_t->shape() != state_shape)
    return ctx.Invalid("initial_c expected shape " + ShapeToString(state_shape) + ", got " + ShapeToString(c0_t->shape()));

  std::vector<int64_t> lens(batch, seq);
  if (lens_t) {
    if (lens_t->shape() != Shape{batch} || (lens_t->dtype() != DataType::kInt32 && lens_t->dtype() != DataType::kInt64))
      return ctx.Invalid("sequence_lens must be int32 of shape " + ShapeToString({batch}) + ", got " +
                         DataTypeName(lens_t->dtype()) + ShapeToString(lens_t->shape()));
    for (int64_t b = 0; b < batch; ++b) {
      lens[b] = lens_t->dtype() == DataType::kInt32 ? lens_t->data<int32_t>()[b] : lens_t->data<int64_t>()[b];
      if (lens[b] < 0 || lens[b] > seq)
        return ctx.Invalid("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " out of range [0, " +
                           std::to_string(seq) + "]");
    }
  }

  IL_ASSIGN_OR_RETURN(Tensor xc, AsCompute<C>(*X));
  IL_ASSIGN_OR_RETURN(Tensor wc, AsCompute<C>(*W));
  IL_ASSIGN_OR_RETURN(Tensor rc, AsCompute<C>(*R));
  Tensor bc, h0c, c0c, pc;
  if (Bt) { IL_ASSIGN_OR_RETURN(bc, AsCompute<C>(*Bt)); }
  if (h0_t) { IL_ASSIGN_OR_RETURN(h0c, AsCompute<C>(*h0_t)); }
  if (c0_t) { IL_ASSIGN_OR_RETURN(c0c, AsCompute<C>(*c0_t)); }
  if (P_t) { IL_ASSIGN_OR_RETURN(pc, AsCompute<C>(*P_t)); }

  const Shape y_shape = a_.layout1 ? Shape{batch, seq, D, H} : Shape{seq, D, batch, H};
  IL_ASSIGN_OR_RETURN(Tensor Y, ctx.Allocate(ComputeDtype<C>(), y_shape));
  IL_ASSIGN_OR_RETURN(Tensor Yh, ctx.Allocate(ComputeDtype<C>(), state_shape));
  Tensor Yc;
  if (lstm) { IL_ASSIGN_OR_RETURN(Yc, ctx.Allocate(ComputeDtype<C>(), state_shape)); }

  auto y_off = [&](int64_t t, int64_t d, int64_t b) {
    return a_.layout1 ? ((b * seq + t) * D + d) * H : ((t * D + d) * batch + b) * H;
  };
  auto state_off = [&](int64_t d, int64_t b) { return a_.layout1 ? (b * D + d) * H : (d * batch + b) * H; };
  auto x_row = [&](int64_t t, int64_t b) { return a_.layout1 ? b * seq + t : t * batch + b; };

  const C clip = static_cast<C>(a_.clip);
  auto clipped = [&](C v) { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; };
  const C* xd = xc.data<C>();
  C* yd = Y.data<C>();
  // Scratch for the input projection, through the session's allocator (memory limit).
  IL_ASSIGN_OR_RETURN(Tensor xw_t, ctx.Allocate(ComputeDtype<C>(), {seq * batch, GH}));
  C* xw = xw_t.data<C>();
  std::vector<C> zero_b(2 * GH, C(0)), zero_p(3 * H, C(0));
  std::vector<C> h(batch * H), c(lstm ? batch * H : 0), g(GH), rh(H), hr(H);

  for (int64_t d = 0; d < D; ++d) {
    const bool rev = a_.reverse || d == 1;
    const C* Wd = wc.data<C>() + d * GH * I;
    const C* Rd = rc.data<C>() + d * GH * H;
    const C* Wb = Bt ? bc.data<C>() + d * 2 * GH : zero_b.data();
    const C* Rb = Wb + GH;
    const C* Pd = P_t ? pc.data<C>() + d * 3 * H : zero_p.data();
    const Activation* act = &a_.acts[d * a_.acts_per_dir];

    // Input projection for every (t, b), indexed by X's row.
    MatMulABt(xd, Wd, xw, seq * batch, GH, I);
    for (int64_t r = 0; r < seq * batch; ++r)
      for (int64_t k = 0; k < GH; ++k) xw[r * GH + k] += Wb[k];
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t k = 0; k < H; ++k) {
        h[b * H + k] = h0_t ? h0c.data<C>()[state_off(d, b) + k] : C(0);
        if (lstm) c[b * H + k] = c0_t ? c0c.data<C>()[state_off(d, b) + k] : C(0);
      }
    }

    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t b = 0; b < batch; ++b) {
        if (s >= lens[b]) continue;
        const int64_t t = rev ? lens[b] - 1 - s : s;
        const C* xg = xw + x_row(t, b) * GH;
        C* hb = h.data() + b * H;
        if (a_.cell == Cell::kRnn) {
          MatMulABt(hb, Rd, g.data(), 1, H, H);
          for (int64_t k = 0; k < H; ++k) hb[k] = act[0](clipped(xg[k] + g[k] + Rb[k]));
        } else if (a_.cell == Cell::kGru) {
          // z and r gates.
          MatMulABt(hb, Rd, g.data(), 1, 2 * H, H);
          for (int64_t k = 0; k < 2 * H; ++k) g[k] = act[0](clipped(xg[k] + g[k] + Rb[k]));
          const C* z = g.data();
          const C* r = g.data() + H;
          const C* Rh = Rd + 2 * H * H;
          if (a_.linear_before_reset) {
            MatMulABt(hb, Rh, hr.data(), 1, H, H);
            for (int64_t k = 0; k < H; ++k) hr[k] = act[1](clipped(xg[2 * H + k] + r[k] * (hr[k] + Rb[2 * H + k])));
          } else {
            for (int64_t k = 0; k < H; ++k) rh[k] = r[k] * hb[k];
            MatMulABt(rh.data(), Rh, hr.data(), 1, H, H);
            for (int64_t k = 0; k < H; ++k) hr[k] = act[1](clipped(xg[2 * H + k] + hr[k] + Rb[2 * H + k]));
          }
          for (int64_t k = 0; k < H; ++k) hb[k] = (C(1) - z[k]) * hr[k] + z[k] * hb[k];
        } else {
          // Gates i, o, f, c; peepholes i, o, f.
          MatMulABt(hb, Rd, g.data(), 1, GH, H);
          for (int64_t k = 0; k < GH; ++k) g[k] += xg[k] + Rb[k];
          C* cb = c.data() + b * H;
          for (int64_t k = 0; k < H; ++k) {
            const C it = act[0](clipped(g[k] + Pd[k] * cb[k]));
            const C ft = a_.input_forget ? C(1) - it : act[0](clipped(g[2 * H + k] + Pd[2 * H + k] * cb[k]));
            const C ct = act[1](clipped(g[3 * H + k]));
            const C cnew = ft * cb[k] + it * ct;
            const C ot = act[0](clipped(g[H + k] + Pd[H + k] * cnew));
            cb[k] = cnew;
            hb[k] = ot * act[2](cnew);
          }
        }
        std::copy(hb, hb + H, yd + y_off(t, d, b));
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, Yh.data<C>() + state_off(d, b));
      if (lstm) std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, Yc.data<C>() + state_off(d, b));
    }
  }

  auto emit = [&](int i, Tensor t) -> Status {
    if (!ctx.output_wanted(i)) return Status::Ok();
    if (t.dtype() != dt) { IL_ASSIGN_OR_RETURN(t, CastTensor(t, dt)); }
    ctx.SetOutput(i, std::move(t));
    return Status::Ok();
  };
  IL_RETURN_IF_ERROR(emit(0, std::move(Y)));
  IL_RETURN_IF_ERROR(emit(1, std::move(Yh)));
  if (lstm) IL_RETURN_IF_ERROR(emit(2, std::move(Yc)));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeRnn(const KernelInfo& info, Cell cell) {
  RnnAttrs a;
  a.cell = cell;
  a.gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  a.acts_per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  const std::string dir = info.GetString("direction", "forward");
  if (dir == "forward") a.dirs = 1;
  else if (dir == "reverse") { a.dirs = 1; a.reverse = true; }
  else if (dir == "bidirectional") a.dirs = 2;
  else return info.Invalid("direction must be forward, reverse or bidirectional, got '" + dir + "'");
  if (info.has_attr("hidden_size")) {
    a.hidden = info.GetInt("hidden_size", 0);
    if (a.hidden <= 0) return info.Invalid("hidden_size must be positive, got " + std::to_string(a.hidden));
  }
  const int64_t layout = info.GetInt("layout", 0);
  if (layout != 0 && layout != 1) return info.Invalid("layout must be 0 or 1, got " + std::to_string(layout));
  a.layout1 = layout == 1;
  if (info.has_attr("clip")) {
    a.clip = info.GetFloat("clip", 0);
    if (!(a.clip > 0)) return info.Invalid("clip must be positive, got " + std::to_string(a.clip));
  }
  const int64_t lbr = info.GetInt("linear_before_reset", 0);
  if (lbr != 0 && lbr != 1) return info.Invalid("linear_before_reset must be 0 or 1, got " + std::to_string(lbr));
  a.linear_before_reset = lbr == 1;
  const int64_t input_forget = info.GetInt("input_forget", 0);
  if (input_forget != 0 && input_forget != 1)
    return info.Invalid("input_forget must be 0 or 1, got " + std::to_string(input_forget));
  a.input_forget = input_forget == 1;

  std::vector<std::string> names = info.GetStrings("activations");
  if (names.empty()) {
    if (cell == Cell::kRnn) names = {"Tanh"};
    else if (cell == Cell::kGru) names = {"Sigmoid", "Tanh"};
    else names = {"Sigmoid", "Tanh", "Tanh"};
  }
  const size_t per = static_cast<size_t>(a.acts_per_dir);
  // One set given for a bidirectional node: both directions use it (with its alpha/beta).
  const bool shared_set = names.size() == per && a.dirs == 2;
  if (names.size() != per * a.dirs && !shared_set)
    return info.Invalid("activations must list " + std::to_string(per * a.dirs) + " functions, got " +
                        std::to_string(names.size()));
  const std::vector<float> alphas = info.GetFloats("activation_alpha");
  const std::vector<float> betas = info.GetFloats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) {
    Activation act;
    bool ua, ub;
    if (!ParseActivation(n, &act, &ua, &ub)) return info.Invalid("unsupported activation '" + n + "'");
    if (ua && ai < alphas.size()) act.alpha = alphas[ai++];
    if (ub && bi < betas.size()) act.beta = betas[bi++];
    a.acts.push_back(act);
  }
  if (shared_set) {
    const std::vector<Activation> first = a.acts;
    a.acts.insert(a.acts.end(), first.begin(), first.end());
  }
  return std::unique_ptr<Kernel>(std::make_unique<RnnKernel>(std::move(a)));
}

}  // namespace

void RegisterRnnKernels(KernelRegistry& r) {
  r.Register("", "RNN", 1, [](const KernelInfo& info) { return MakeRnn(info, Cell::kRnn); });
  r.Register("", "GRU", 1, [](const KernelInfo& info) { return MakeRnn(info, Cell::kGru); });
  r.Register("", "LSTM", 1, [](const KernelInfo& info) { return MakeRnn(info, Cell::kLstm); });
}

}  // namespace inferloop
