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

#include "base/status_macros.h"
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

// The node's inputs; the optional ones (B, sequence_lens, initial_h, and LSTM's initial_c and P)
// are null when not given.
struct RnnInputs {
  const Tensor *X = nullptr, *W = nullptr, *R = nullptr, *B = nullptr, *lens = nullptr, *h0 = nullptr, *c0 = nullptr,
               *P = nullptr;
};

// X is (seq, batch, I) (layout 0) or (batch, seq, I) (layout 1); D directions of H hidden units
// with G gates each (GH = G * H rows of W and R per direction).
struct RnnDims {
  int64_t seq = 0, batch = 0, I = 0, D = 1, H = 0, G = 1, GH = 0;
  Shape state_shape;  // initial_h, initial_c, Y_h and Y_c
};

// The inputs in the compute type C; the optional ones are undefined when not given.
struct RnnComputeInputs {
  Tensor x, w, r, b, h0, c0, p;
};

// One direction's parameters: W (GH x I), R (GH x H), the biases Wb and Rb (GH each), the
// peepholes P (3 * H), and the direction's activations.
template <typename C>
struct DirectionParams {
  const C *W, *R, *Wb, *Rb, *P;
  const Activation* act;
};

// clip's saturation (none when clip is 0).
template <typename C>
struct Clipper {
  C clip;
  C operator()(C v) const { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; }
};

// The outputs in C (Yc only for LSTM).
struct RnnOutputs {
  Tensor Y, Yh, Yc;
};

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
  // Scratch space of one time step: the gates g (GH), and H-vectors for GRU's reset gate.
  template <typename C>
  struct StepScratch {
    std::vector<C> g, rh, hr;
  };

  template <typename C>
  Status Run(KernelContext& ctx) const;
  Status CheckShapes(KernelContext& ctx, const RnnInputs& in, RnnDims* dims) const;
  static Result<std::vector<int64_t>> SequenceLengths(KernelContext& ctx, const Tensor* lens_t, const RnnDims& dims);
  template <typename C>
  static Status ToCompute(const RnnInputs& in, RnnComputeInputs* c);
  template <typename C>
  void RunDirection(int64_t d, const RnnInputs& in, const RnnComputeInputs& ic, const RnnDims& dims,
                    const std::vector<int64_t>& lens, C* xw, std::vector<C>& h, std::vector<C>& c, StepScratch<C>& s,
                    RnnOutputs& out) const;
  template <typename C>
  void Step(const C* xg, const DirectionParams<C>& p, int64_t H, Clipper<C> clipped, C* hb, C* cb,
            StepScratch<C>& s) const;
  template <typename C>
  void GruStep(const C* xg, const DirectionParams<C>& p, int64_t H, Clipper<C> clipped, C* hb, StepScratch<C>& s) const;
  template <typename C>
  void LstmStep(const C* xg, const DirectionParams<C>& p, int64_t H, Clipper<C> clipped, C* hb, C* cb,
                StepScratch<C>& s) const;

  RnnAttrs a_;
};

Status RnnKernel::CheckShapes(KernelContext& ctx, const RnnInputs& in, RnnDims* dims) const {
  const DataType dt = in.X->dtype();
  for (const Tensor* t : {in.W, in.R, in.B, in.h0, in.c0, in.P})
    if (t && t->dtype() != dt)
      return ctx.Invalid(std::string("W, R, B, initial_h, initial_c and P must have X's dtype ") + DataTypeName(dt) + ", got " +
                         DataTypeName(t->dtype()));
  if (in.X->rank() != 3) return ctx.Invalid("X must be 3-D, got " + ShapeToString(in.X->shape()));
  dims->seq = a_.layout1 ? in.X->dim(1) : in.X->dim(0);
  dims->batch = a_.layout1 ? in.X->dim(0) : in.X->dim(1);
  const int64_t I = dims->I = in.X->dim(2);
  const int64_t D = dims->D = a_.dirs;
  if (in.R->rank() != 3) return ctx.Invalid("R must be 3-D, got " + ShapeToString(in.R->shape()));
  const int64_t H = dims->H = a_.hidden > 0 ? a_.hidden : in.R->dim(2);
  dims->G = a_.gates;
  const int64_t GH = dims->GH = dims->G * H;
  if (in.W->shape() != Shape{D, GH, I})
    return ctx.Invalid("W expected shape " + ShapeToString({D, GH, I}) + ", got " + ShapeToString(in.W->shape()));
  if (in.R->shape() != Shape{D, GH, H})
    return ctx.Invalid("R expected shape " + ShapeToString({D, GH, H}) + ", got " + ShapeToString(in.R->shape()));
  if (in.B && in.B->shape() != Shape{D, 2 * GH})
    return ctx.Invalid("B expected shape " + ShapeToString({D, 2 * GH}) + ", got " + ShapeToString(in.B->shape()));
  if (in.P && in.P->shape() != Shape{D, 3 * H})
    return ctx.Invalid("P expected shape " + ShapeToString({D, 3 * H}) + ", got " + ShapeToString(in.P->shape()));
  const Shape& state_shape = dims->state_shape = a_.layout1 ? Shape{dims->batch, D, H} : Shape{D, dims->batch, H};
  if (in.h0 && in.h0->shape() != state_shape)
    return ctx.Invalid("initial_h expected shape " + ShapeToString(state_shape) + ", got " + ShapeToString(in.h0->shape()));
  if (in.c0 && in.c0->shape() != state_shape)
    return ctx.Invalid("initial_c expected shape " + ShapeToString(state_shape) + ", got " + ShapeToString(in.c0->shape()));
  return Status::Ok();
}

// sequence_lens, or seq for every batch entry when not given.
Result<std::vector<int64_t>> RnnKernel::SequenceLengths(KernelContext& ctx, const Tensor* lens_t, const RnnDims& dims) {
  const int64_t batch = dims.batch, seq = dims.seq;
  std::vector<int64_t> lens(batch, seq);
  if (!lens_t) return lens;
  if (lens_t->shape() != Shape{batch} || (lens_t->dtype() != DataType::kInt32 && lens_t->dtype() != DataType::kInt64))
    return ctx.Invalid("sequence_lens must be int32 of shape " + ShapeToString({batch}) + ", got " +
                       DataTypeName(lens_t->dtype()) + ShapeToString(lens_t->shape()));
  for (int64_t b = 0; b < batch; ++b) {
    lens[b] = lens_t->dtype() == DataType::kInt32 ? lens_t->data<int32_t>()[b] : lens_t->data<int64_t>()[b];
    if (lens[b] < 0 || lens[b] > seq)
      return ctx.Invalid("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " out of range [0, " +
                         std::to_string(seq) + "]");
  }
  return lens;
}

template <typename C>
Status RnnKernel::ToCompute(const RnnInputs& in, RnnComputeInputs* c) {
  IL_ASSIGN_OR_RETURN(c->x, AsCompute<C>(*in.X));
  IL_ASSIGN_OR_RETURN(c->w, AsCompute<C>(*in.W));
  IL_ASSIGN_OR_RETURN(c->r, AsCompute<C>(*in.R));
  if (in.B) { IL_ASSIGN_OR_RETURN(c->b, AsCompute<C>(*in.B)); }
  if (in.h0) { IL_ASSIGN_OR_RETURN(c->h0, AsCompute<C>(*in.h0)); }
  if (in.c0) { IL_ASSIGN_OR_RETURN(c->c0, AsCompute<C>(*in.c0)); }
  if (in.P) { IL_ASSIGN_OR_RETURN(c->p, AsCompute<C>(*in.P)); }
  return Status::Ok();
}

// One time step of one batch entry: hb (and LSTM's cb) from the projected input xg (GH) and hb.
template <typename C>
void RnnKernel::Step(const C* xg, const DirectionParams<C>& p, int64_t H, Clipper<C> clipped, C* hb, C* cb,
                     StepScratch<C>& s) const {
  if (a_.cell == Cell::kRnn) {
    MatMulABt(hb, p.R, s.g.data(), 1, H, H);
    for (int64_t k = 0; k < H; ++k) hb[k] = p.act[0](clipped(xg[k] + s.g[k] + p.Rb[k]));
  } else if (a_.cell == Cell::kGru) {
    GruStep(xg, p, H, clipped, hb, s);
  } else {
    LstmStep(xg, p, H, clipped, hb, cb, s);
  }
}

template <typename C>
void RnnKernel::GruStep(const C* xg, const DirectionParams<C>& p, int64_t H, Clipper<C> clipped, C* hb,
                        StepScratch<C>& s) const {
  std::vector<C>& g = s.g;
  std::vector<C>& hr = s.hr;
  // z and r gates.
  MatMulABt(hb, p.R, g.data(), 1, 2 * H, H);
  for (int64_t k = 0; k < 2 * H; ++k) g[k] = p.act[0](clipped(xg[k] + g[k] + p.Rb[k]));
  const C* z = g.data();
  const C* r = g.data() + H;
  const C* Rh = p.R + 2 * H * H;
  if (a_.linear_before_reset) {
    MatMulABt(hb, Rh, hr.data(), 1, H, H);
    for (int64_t k = 0; k < H; ++k) hr[k] = p.act[1](clipped(xg[2 * H + k] + r[k] * (hr[k] + p.Rb[2 * H + k])));
  } else {
    for (int64_t k = 0; k < H; ++k) s.rh[k] = r[k] * hb[k];
    MatMulABt(s.rh.data(), Rh, hr.data(), 1, H, H);
    for (int64_t k = 0; k < H; ++k) hr[k] = p.act[1](clipped(xg[2 * H + k] + hr[k] + p.Rb[2 * H + k]));
  }
  for (int64_t k = 0; k < H; ++k) hb[k] = (C(1) - z[k]) * hr[k] + z[k] * hb[k];
}

template <typename C>
void RnnKernel::LstmStep(const C* xg, const DirectionParams<C>& p, int64_t H, Clipper<C> clipped, C* hb, C* cb,
                         StepScratch<C>& s) const {
  // Gates i, o, f, c; peepholes i, o, f.
  const int64_t GH = 4 * H;
  std::vector<C>& g = s.g;
  const C* Pd = p.P;
  const Activation* act = p.act;
  MatMulABt(hb, p.R, g.data(), 1, GH, H);
  for (int64_t k = 0; k < GH; ++k) g[k] += xg[k] + p.Rb[k];
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

// Direction d over the whole sequence: projects the input into xw (seq * batch x GH), starts from
// initial_h/initial_c (h and c: batch x H) and writes Y's steps and the final Y_h/Y_c.
template <typename C>
void RnnKernel::RunDirection(int64_t d, const RnnInputs& in, const RnnComputeInputs& ic, const RnnDims& dims,
                             const std::vector<int64_t>& lens, C* xw, std::vector<C>& h, std::vector<C>& c,
                             StepScratch<C>& s, RnnOutputs& out) const {
  const bool lstm = a_.cell == Cell::kLstm;
  const int64_t seq = dims.seq, batch = dims.batch, I = dims.I, D = dims.D, H = dims.H, GH = dims.GH;
  auto y_off = [&](int64_t t, int64_t b) {
    return a_.layout1 ? ((b * seq + t) * D + d) * H : ((t * D + d) * batch + b) * H;
  };
  auto state_off = [&](int64_t b) { return a_.layout1 ? (b * D + d) * H : (d * batch + b) * H; };
  auto x_row = [&](int64_t t, int64_t b) { return a_.layout1 ? b * seq + t : t * batch + b; };
  const std::vector<C> zero_b(2 * GH, C(0)), zero_p(3 * H, C(0));
  const bool rev = a_.reverse || d == 1;
  DirectionParams<C> p;
  p.W = ic.w.data<C>() + d * GH * I;
  p.R = ic.r.data<C>() + d * GH * H;
  p.Wb = in.B ? ic.b.data<C>() + d * 2 * GH : zero_b.data();
  p.Rb = p.Wb + GH;
  p.P = in.P ? ic.p.data<C>() + d * 3 * H : zero_p.data();
  p.act = &a_.acts[d * a_.acts_per_dir];
  const Clipper<C> clipped{static_cast<C>(a_.clip)};

  // Input projection for every (t, b), indexed by X's row.
  MatMulABt(ic.x.data<C>(), p.W, xw, seq * batch, GH, I);
  for (int64_t r = 0; r < seq * batch; ++r)
    for (int64_t k = 0; k < GH; ++k) xw[r * GH + k] += p.Wb[k];
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < H; ++k) {
      h[b * H + k] = in.h0 ? ic.h0.data<C>()[state_off(b) + k] : C(0);
      if (lstm) c[b * H + k] = in.c0 ? ic.c0.data<C>()[state_off(b) + k] : C(0);
    }
  }
  C* yd = out.Y.data<C>();
  for (int64_t st = 0; st < seq; ++st) {
    for (int64_t b = 0; b < batch; ++b) {
      if (st >= lens[b]) continue;
      const int64_t t = rev ? lens[b] - 1 - st : st;
      C* hb = h.data() + b * H;
      Step(xw + x_row(t, b) * GH, p, H, clipped, hb, lstm ? c.data() + b * H : nullptr, s);
      std::copy(hb, hb + H, yd + y_off(t, b));
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, out.Yh.data<C>() + state_off(b));
    if (lstm) std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, out.Yc.data<C>() + state_off(b));
  }
}

template <typename C>
Status RnnKernel::Run(KernelContext& ctx) const {
  const bool lstm = a_.cell == Cell::kLstm;
  RnnInputs in;
  IL_ASSIGN_OR_RETURN(in.X, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(in.W, ctx.RequireInput(1));
  IL_ASSIGN_OR_RETURN(in.R, ctx.RequireInput(2));
  in.B = ctx.input(3);
  in.lens = ctx.input(4);
  in.h0 = ctx.input(5);
  in.c0 = lstm ? ctx.input(6) : nullptr;
  in.P = lstm ? ctx.input(7) : nullptr;
  RnnDims dims;
  IL_RETURN_IF_ERROR(CheckShapes(ctx, in, &dims));
  IL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, SequenceLengths(ctx, in.lens, dims));
  RnnComputeInputs ic;
  IL_RETURN_IF_ERROR(ToCompute<C>(in, &ic));

  const int64_t seq = dims.seq, batch = dims.batch, H = dims.H, GH = dims.GH;
  const Shape y_shape = a_.layout1 ? Shape{batch, seq, dims.D, H} : Shape{seq, dims.D, batch, H};
  RnnOutputs out;
  IL_ASSIGN_OR_RETURN(out.Y, ctx.Allocate(ComputeDtype<C>(), y_shape));
  IL_ASSIGN_OR_RETURN(out.Yh, ctx.Allocate(ComputeDtype<C>(), dims.state_shape));
  if (lstm) { IL_ASSIGN_OR_RETURN(out.Yc, ctx.Allocate(ComputeDtype<C>(), dims.state_shape)); }
  // Scratch for the input projection, through the session's allocator (memory limit).
  IL_ASSIGN_OR_RETURN(Tensor xw_t, ctx.Allocate(ComputeDtype<C>(), {seq * batch, GH}));
  std::vector<C> h(batch * H), c(lstm ? batch * H : 0);
  StepScratch<C> scratch{std::vector<C>(GH), std::vector<C>(H), std::vector<C>(H)};
  for (int64_t d = 0; d < dims.D; ++d) RunDirection(d, in, ic, dims, lens, xw_t.data<C>(), h, c, scratch, out);

  const DataType dt = in.X->dtype();
  auto emit = [&](int i, Tensor t) -> Status {
    if (!ctx.output_wanted(i)) return Status::Ok();
    if (t.dtype() != dt) { IL_ASSIGN_OR_RETURN(t, CastTensor(t, dt)); }
    ctx.SetOutput(i, std::move(t));
    return Status::Ok();
  };
  IL_RETURN_IF_ERROR(emit(0, std::move(out.Y)));
  IL_RETURN_IF_ERROR(emit(1, std::move(out.Yh)));
  if (lstm) IL_RETURN_IF_ERROR(emit(2, std::move(out.Yc)));
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
