// Registration of the control flow kernel family: If, Loop, Scan, SequenceMap.
//
// Bodies are compiled by the runtime (KernelInfo::subgraph) and run with
// KernelContext::RunSubgraph, which makes the caller's scope visible to the body.
#include <algorithm>
#include <limits>

#include "base/status_macros.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/flow_util.h"

namespace inferloop {
namespace {

using flow::Describe;

Result<const Subgraph*> RequireGraph(const KernelInfo& info, const char* name) {
  const Subgraph* g = info.subgraph(name);
  if (!g) return info.Invalid(std::string("graph attribute '") + name + "' is required");
  return g;
}

// The declared dtype/shape of a body output, used to shape a scan output when the body
// never ran (zero iterations). Unknown dims become 0.
void DeclaredTensorType(const GraphValue& gv, DataType* dtype, Shape* shape) {
  *dtype = gv.type.elem_type != DataType::kUndefined ? gv.type.elem_type : DataType::kFloat;
  shape->clear();
  if (gv.type.kind == TypeInfo::Kind::kTensor && gv.type.has_shape)
    for (const Dim& d : gv.type.dims) shape->push_back(d.value >= 0 ? d.value : 0);
}

Result<Tensor> ScalarInt64(KernelContext& ctx, int64_t v) {
  IL_ASSIGN_OR_RETURN(Tensor t, ctx.Allocate(DataType::kInt64, {}));
  t.data<int64_t>()[0] = v;
  return t;
}

Result<Tensor> ScalarBool(KernelContext& ctx, bool v) {
  IL_ASSIGN_OR_RETURN(Tensor t, ctx.Allocate(DataType::kBool, {}));
  t.data<uint8_t>()[0] = v ? 1 : 0;
  return t;
}

// ---------------------------------------------------------------------------------------------
// If

class IfKernel : public Kernel {
 public:
  IfKernel(const Subgraph* then_g, const Subgraph* else_g) : then_(then_g), else_(else_g) {}
  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* c, ctx.RequireInput(0));
    bool cond;
    Status st = flow::ReadBoolScalar(*c, "cond", &cond);
    if (!st.ok()) return ctx.Invalid(st.message());
    const Subgraph* g = cond ? then_ : else_;
    IL_ASSIGN_OR_RETURN(std::vector<Value> outs, ctx.RunSubgraph(*g, {}));
    if (static_cast<int>(outs.size()) < ctx.num_outputs())
      return ctx.Invalid(std::string(cond ? "then_branch" : "else_branch") + " produced " + std::to_string(outs.size()) +
                         " outputs, the node has " + std::to_string(ctx.num_outputs()));
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(outs[i]));
    return Status::Ok();
  }

 private:
  const Subgraph* then_;
  const Subgraph* else_;
};

Result<std::unique_ptr<Kernel>> MakeIf(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const Subgraph* then_g, RequireGraph(info, "then_branch"));
  IL_ASSIGN_OR_RETURN(const Subgraph* else_g, RequireGraph(info, "else_branch"));
  if (!info.has_input(0)) return info.Invalid("input 'cond' is required");
  for (const auto& [name, g] : {std::pair{"then_branch", then_g}, std::pair{"else_branch", else_g}}) {
    if (g->num_inputs() != 0)
      return info.Invalid(std::string(name) + " must have no inputs, it declares " + std::to_string(g->num_inputs()));
    if (static_cast<int>(g->num_outputs()) != info.num_outputs())
      return info.Invalid(std::string(name) + " has " + std::to_string(g->num_outputs()) + " outputs, the node has " +
                          std::to_string(info.num_outputs()));
  }
  return std::unique_ptr<Kernel>(new IfKernel(then_g, else_g));
}

// ---------------------------------------------------------------------------------------------
// Loop

class LoopKernel : public Kernel {
 public:
  LoopKernel(const Subgraph* body, int n_carried, int n_scan) : body_(body), n_(n_carried), k_(n_scan) {}

  Status Compute(KernelContext& ctx) const override {
    bool has_max = false;
    int64_t max_trip = std::numeric_limits<int64_t>::max();
    if (const Value* mv = ctx.input_value(0); mv && !mv->is_none()) {
      if (!mv->is_tensor()) return ctx.Invalid("trip count M must be a tensor, got " + Describe(mv));
      Status st = flow::ReadIndexScalar(mv->tensor(), "trip count M", &max_trip);
      if (!st.ok()) return ctx.Invalid(st.message());
      has_max = true;
    }
    bool cond = true;
    if (const Value* cv = ctx.input_value(1); cv && !cv->is_none()) {
      if (!cv->is_tensor()) return ctx.Invalid("cond must be a tensor, got " + Describe(cv));
      Status st = flow::ReadBoolScalar(cv->tensor(), "cond", &cond);
      if (!st.ok()) return ctx.Invalid(st.message());
    }
    std::vector<Value> carried(n_);
    for (int i = 0; i < n_; ++i)
      if (const Value* v = ctx.input_value(2 + i)) carried[i] = *v;
    std::vector<std::vector<Tensor>> scans(k_);

    for (int64_t it = 0; (!has_max || it < max_trip) && cond; ++it) {
      std::vector<Value> in;
      in.reserve(2 + n_);
      IL_ASSIGN_OR_RETURN(Tensor iter_t, ScalarInt64(ctx, it));
      IL_ASSIGN_OR_RETURN(Tensor cond_t, ScalarBool(ctx, cond));
      in.emplace_back(std::move(iter_t));
      in.emplace_back(std::move(cond_t));
      for (Value& v : carried) in.push_back(std::move(v));
      IL_ASSIGN_OR_RETURN(std::vector<Value> outs, ctx.RunSubgraph(*body_, std::move(in)));
      if (outs.size() != static_cast<size_t>(1 + n_ + k_))
        return ctx.Invalid("body produced " + std::to_string(outs.size()) + " outputs, expected " + std::to_string(1 + n_ + k_));
      if (!outs[0].is_tensor()) return ctx.Invalid("body output 'cond' must be a bool tensor, got " + Describe(&outs[0]));
      Status st = flow::ReadBoolScalar(outs[0].tensor(), "body output 'cond'", &cond);
      if (!st.ok()) return ctx.Invalid(st.message());
      for (int i = 0; i < n_; ++i) carried[i] = std::move(outs[1 + i]);
      for (int k = 0; k < k_; ++k) {
        Value& v = outs[1 + n_ + k];
        if (!v.is_tensor())
          return ctx.Invalid("scan output " + std::to_string(k) + " must be a tensor in every iteration, got " + Describe(&v) +
                             " in iteration " + std::to_string(it));
        if (!scans[k].empty() && (v.tensor().shape() != scans[k][0].shape() || v.tensor().dtype() != scans[k][0].dtype()))
          return ctx.Invalid("scan output " + std::to_string(k) + " is " + Describe(&v) + " in iteration " + std::to_string(it) +
                             " but was " + DataTypeName(scans[k][0].dtype()) + " " + ShapeToString(scans[k][0].shape()) +
                             " in iteration 0");
        scans[k].push_back(std::move(v.tensor()));
      }
    }

    for (int i = 0; i < n_ && i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(carried[i]));
    for (int k = 0; k < k_ && n_ + k < ctx.num_outputs(); ++k) {
      if (!ctx.output_wanted(n_ + k)) continue;
      Tensor out;
      if (scans[k].empty()) {
        DataType dt;
        Shape shape;
        DeclaredTensorType(body_->output(1 + n_ + k), &dt, &shape);
        shape.insert(shape.begin(), 0);
        IL_ASSIGN_OR_RETURN(out, ctx.Allocate(dt, shape));
      } else {
        IL_ASSIGN_OR_RETURN(out, flow::Stack(ctx, scans[k], 0, "Loop scan output"));
      }
      ctx.SetOutput(n_ + k, std::move(out));
    }
    return Status::Ok();
  }

 private:
  const Subgraph* body_;
  int n_, k_;
};

Result<std::unique_ptr<Kernel>> MakeLoop(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const Subgraph* body, RequireGraph(info, "body"));
  if (info.num_inputs() < 2) return info.Invalid("needs inputs M and cond (either may be empty)");
  const int n = info.num_inputs() - 2;
  if (static_cast<int>(body->num_inputs()) != n + 2)
    return info.Invalid("body has " + std::to_string(body->num_inputs()) + " inputs, expected " + std::to_string(n + 2) +
                        " (iteration_num, cond and " + std::to_string(n) + " loop-carried values)");
  const int k = static_cast<int>(body->num_outputs()) - 1 - n;
  if (k < 0)
    return info.Invalid("body has " + std::to_string(body->num_outputs()) + " outputs, expected at least " + std::to_string(1 + n) +
                        " (cond and " + std::to_string(n) + " loop-carried values)");
  if (info.num_outputs() > n + k)
    return info.Invalid("node has " + std::to_string(info.num_outputs()) + " outputs, the body yields only " + std::to_string(n) +
                        " loop-carried values and " + std::to_string(k) + " scan outputs");
  return std::unique_ptr<Kernel>(new LoopKernel(body, n, k));
}

// ---------------------------------------------------------------------------------------------
// Scan

struct ScanConfig {
  const Subgraph* body = nullptr;
  int n_state = 0, m_scan = 0, k_out = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;  // in_axes may be negative until resolved
};

// One run of the scan loop (opset 9 semantics) over scan inputs whose scan axis has length `len`.
// Scan outputs are returned stacked along their axes.
Status RunScanCore(KernelContext& ctx, const ScanConfig& c, std::vector<Value> states, const std::vector<Tensor>& inputs,
                   const std::vector<int>& in_axes, int64_t len, std::vector<Value>* final_states, std::vector<Tensor>* scan_outs) {
  std::vector<std::vector<Tensor>> parts(c.k_out);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value> in;
    in.reserve(c.n_state + c.m_scan);
    for (Value& s : states) in.push_back(std::move(s));
    for (int j = 0; j < c.m_scan; ++j) {
      const int64_t pos = c.in_dirs[j] ? len - 1 - t : t;
      IL_ASSIGN_OR_RETURN(Tensor slice, flow::SliceAxis(ctx, inputs[j], in_axes[j], pos, 1, false));
      in.emplace_back(std::move(slice));
    }
    IL_ASSIGN_OR_RETURN(std::vector<Value> outs, ctx.RunSubgraph(*c.body, std::move(in)));
    if (outs.size() != static_cast<size_t>(c.n_state + c.k_out))
      return ctx.Invalid("body produced " + std::to_string(outs.size()) + " outputs, expected " + std::to_string(c.n_state + c.k_out));
    states.assign(outs.begin(), outs.begin() + c.n_state);
    for (int k = 0; k < c.k_out; ++k) {
      Value& v = outs[c.n_state + k];
      if (!v.is_tensor()) return ctx.Invalid("scan output " + std::to_string(k) + " must be a tensor, got " + Describe(&v));
      if (!parts[k].empty() && (v.tensor().shape() != parts[k][0].shape() || v.tensor().dtype() != parts[k][0].dtype()))
        return ctx.Invalid("scan output " + std::to_string(k) + " is " + Describe(&v) + " in iteration " + std::to_string(t) +
                           " but was " + DataTypeName(parts[k][0].dtype()) + " " + ShapeToString(parts[k][0].shape()) +
                           " in iteration 0");
      parts[k].push_back(std::move(v.tensor()));
    }
  }
  *final_states = std::move(states);
  scan_outs->clear();
  for (int k = 0; k < c.k_out; ++k) {
    DataType dt;
    Shape elem_shape;
    if (parts[k].empty()) {
      DeclaredTensorType(c.body->output(c.n_state + k), &dt, &elem_shape);
    } else {
      dt = parts[k][0].dtype();
      elem_shape = parts[k][0].shape();
    }
    const int64_t r = static_cast<int64_t>(elem_shape.size());
    int64_t axis;
    if (!flow::NormalizeAxis(c.out_axes[k], r + 1, &axis))
      return ctx.Invalid("scan_output_axes[" + std::to_string(k) + "] = " + std::to_string(c.out_axes[k]) +
                         " is out of range for a scan output of rank " + std::to_string(r + 1));
    if (c.out_dirs[k]) std::reverse(parts[k].begin(), parts[k].end());
    Tensor out;
    if (parts[k].empty()) {
      elem_shape.insert(elem_shape.begin() + axis, 0);
      IL_ASSIGN_OR_RETURN(out, ctx.Allocate(dt, elem_shape));
    } else {
      IL_ASSIGN_OR_RETURN(out, flow::Stack(ctx, parts[k], static_cast<int>(axis), "Scan output"));
    }
    scan_outs->push_back(std::move(out));
  }
  return Status::Ok();
}

class ScanKernel : public Kernel {
 public:
  ScanKernel(ScanConfig c, bool batched) : c_(std::move(c)), batched_(batched) {}

  Status Compute(KernelContext& ctx) const override { return batched_ ? ComputeV8(ctx) : ComputeV9(ctx); }

 private:
  // Opset 9+: no batch axis; scan inputs are scanned along scan_input_axes.
  Status ComputeV9(KernelContext& ctx) const {
    std::vector<Value> states(c_.n_state);
    for (int i = 0; i < c_.n_state; ++i) {
      const Value* v = ctx.input_value(i);
      if (!v || !v->is_tensor()) return ctx.Invalid("initial state " + std::to_string(i) + " must be a tensor, got " + Describe(v));
      states[i] = *v;
    }
    std::vector<Tensor> inputs;
    std::vector<int> axes;
    int64_t len = -1;
    for (int j = 0; j < c_.m_scan; ++j) {
      const Value* v = ctx.input_value(c_.n_state + j);
      if (!v || !v->is_tensor()) return ctx.Invalid("scan input " + std::to_string(j) + " must be a tensor, got " + Describe(v));
      const Tensor& t = v->tensor();
      int64_t axis;
      if (!flow::NormalizeAxis(c_.in_axes[j], t.rank(), &axis))
        return ctx.Invalid("scan_input_axes[" + std::to_string(j) + "] = " + std::to_string(c_.in_axes[j]) +
                           " is out of range for scan input of shape " + ShapeToString(t.shape()));
      const int64_t l = t.dim(static_cast<int>(axis));
      if (len >= 0 && l != len)
        return ctx.Invalid("scan input " + std::to_string(j) + " has length " + std::to_string(l) + " along its scan axis, but scan input 0 has " +
                           std::to_string(len));
      len = l;
      inputs.push_back(t);
      axes.push_back(static_cast<int>(axis));
    }
    std::vector<Value> finals;
    std::vector<Tensor> outs;
    IL_RETURN_IF_ERROR(RunScanCore(ctx, c_, std::move(states), inputs, axes, len, &finals, &outs));
    for (int i = 0; i < c_.n_state; ++i) ctx.SetOutput(i, std::move(finals[i]));
    for (int k = 0; k < c_.k_out; ++k) ctx.SetOutput(c_.n_state + k, std::move(outs[k]));
    return Status::Ok();
  }

  // Opset 8: input 0 is sequence_lens; states are [batch, ...], scan inputs [batch, seq, ...].
  Status ComputeV8(KernelContext& ctx) const {
    const int base = 1;
    int64_t batch = -1, max_len = -1;
    std::vector<Tensor> states, inputs;
    for (int i = 0; i < c_.n_state + c_.m_scan; ++i) {
      const Value* v = ctx.input_value(base + i);
      if (!v || !v->is_tensor()) return ctx.Invalid("input " + std::to_string(base + i) + " must be a tensor, got " + Describe(v));
      const Tensor& t = v->tensor();
      const bool is_scan = i >= c_.n_state;
      if (t.rank() < (is_scan ? 2 : 1))
        return ctx.Invalid("input " + std::to_string(base + i) + " has shape " + ShapeToString(t.shape()) + "; expected [batch, " +
                           (is_scan ? "sequence, ...]" : "...]"));
      if (batch >= 0 && t.dim(0) != batch)
        return ctx.Invalid("input " + std::to_string(base + i) + " has batch size " + std::to_string(t.dim(0)) + ", expected " +
                           std::to_string(batch));
      batch = t.dim(0);
      if (is_scan) {
        if (max_len >= 0 && t.dim(1) != max_len)
          return ctx.Invalid("scan input " + std::to_string(i - c_.n_state) + " has sequence length " + std::to_string(t.dim(1)) +
                             ", expected " + std::to_string(max_len));
        max_len = t.dim(1);
        inputs.push_back(t);
      } else {
        states.push_back(t);
      }
    }
    std::vector<int64_t> lens(batch, max_len);
    if (const Value* sl = ctx.input_value(0); sl && !sl->is_none()) {
      if (!sl->is_tensor() || (sl->tensor().dtype() != DataType::kInt64 && sl->tensor().dtype() != DataType::kInt32))
        return ctx.Invalid("sequence_lens must be an int64 tensor, got " + Describe(sl));
      const Tensor& s = sl->tensor();
      if (s.size() != batch)
        return ctx.Invalid("sequence_lens has " + std::to_string(s.size()) + " entries, expected one per batch entry (" +
                           std::to_string(batch) + ")");
      for (int64_t b = 0; b < batch; ++b) {
        lens[b] = s.dtype() == DataType::kInt64 ? s.data<int64_t>()[b] : s.data<int32_t>()[b];
        if (lens[b] < 0 || lens[b] > max_len)
          return ctx.Invalid("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " is outside [0, " +
                             std::to_string(max_len) + "]");
      }
    }
    std::vector<Tensor> final_out(c_.n_state), scan_out(c_.k_out);
    const std::vector<int> axes(c_.m_scan, 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Value> st;
      for (const Tensor& t : states) {
        IL_ASSIGN_OR_RETURN(Tensor s, flow::SliceAxis(ctx, t, 0, b, 1, false));
        st.emplace_back(std::move(s));
      }
      std::vector<Tensor> ins;
      for (const Tensor& t : inputs) {
        IL_ASSIGN_OR_RETURN(Tensor s, flow::SliceAxis(ctx, t, 0, b, 1, false));
        if (lens[b] != max_len) {
          IL_ASSIGN_OR_RETURN(s, flow::SliceAxis(ctx, s, 0, 0, lens[b], true));
        }
        ins.push_back(std::move(s));
      }
      std::vector<Value> finals;
      std::vector<Tensor> outs;
      IL_RETURN_IF_ERROR(RunScanCore(ctx, c_, std::move(st), ins, axes, lens[b], &finals, &outs));
      for (int i = 0; i < c_.n_state; ++i) {
        if (!finals[i].is_tensor()) return ctx.Invalid("final state " + std::to_string(i) + " is " + Describe(&finals[i]));
        const Tensor& f = finals[i].tensor();
        if (b == 0) {
          Shape s = f.shape();
          s.insert(s.begin(), batch);
          IL_ASSIGN_OR_RETURN(final_out[i], ctx.Allocate(f.dtype(), s));
        }
        Shape want(final_out[i].shape().begin() + 1, final_out[i].shape().end());
        if (f.shape() != want || f.dtype() != final_out[i].dtype())
          return ctx.Invalid("final state " + std::to_string(i) + " differs in shape or type between batch entries");
        flow::PlaceAxis(f, final_out[i], 0, b, 1);
      }
      for (int k = 0; k < c_.k_out; ++k) {
        const Tensor& o = outs[k];  // [len_b, ...]
        if (b == 0) {
          Shape s = o.shape();
          s[0] = max_len;
          s.insert(s.begin(), batch);
          IL_ASSIGN_OR_RETURN(scan_out[k], ctx.Allocate(o.dtype(), s));
        }
        Shape want(scan_out[k].shape().begin() + 2, scan_out[k].shape().end());
        Shape got(o.shape().begin() + 1, o.shape().end());
        if (got != want || o.dtype() != scan_out[k].dtype())
          return ctx.Invalid("scan output " + std::to_string(k) + " differs in shape or type between batch entries");
        // Rows past len_b stay zero.
        const int64_t row = flow::Prod(want, 0, want.size());
        flow::CopyElements(o, 0, scan_out[k], b * max_len * row, o.size());
      }
    }
    if (batch == 0) {
      for (int i = 0; i < c_.n_state; ++i) final_out[i] = states[i];
      for (int k = 0; k < c_.k_out; ++k) {
        DataType dt;
        Shape s;
        DeclaredTensorType(c_.body->output(c_.n_state + k), &dt, &s);
        s.insert(s.begin(), {int64_t{0}, max_len});
        IL_ASSIGN_OR_RETURN(scan_out[k], ctx.Allocate(dt, s));
      }
    }
    for (int i = 0; i < c_.n_state; ++i) ctx.SetOutput(i, std::move(final_out[i]));
    for (int k = 0; k < c_.k_out; ++k) ctx.SetOutput(c_.n_state + k, std::move(scan_out[k]));
    return Status::Ok();
  }

  ScanConfig c_;
  bool batched_;
};

Status CheckFlags(const KernelInfo& info, const char* name, const std::vector<int64_t>& v) {
  for (int64_t d : v)
    if (d != 0 && d != 1) return info.Invalid(std::string(name) + " entries must be 0 (forward) or 1 (reverse), got " + std::to_string(d));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MakeScan(const KernelInfo& info) {
  ScanConfig c;
  IL_ASSIGN_OR_RETURN(c.body, RequireGraph(info, "body"));
  if (!info.has_attr("num_scan_inputs")) return info.Invalid("attribute 'num_scan_inputs' is required");
  c.m_scan = static_cast<int>(info.GetInt("num_scan_inputs", 0));
  const bool batched = info.opset() < 9;
  const int first = batched ? 1 : 0;
  if (c.m_scan < 1) return info.Invalid("num_scan_inputs must be at least 1, got " + std::to_string(c.m_scan));
  c.n_state = info.num_inputs() - first - c.m_scan;
  if (c.n_state < 0)
    return info.Invalid("num_scan_inputs is " + std::to_string(c.m_scan) + " but the node has only " +
                        std::to_string(info.num_inputs() - first) + " state and scan inputs");
  if (static_cast<int>(c.body->num_inputs()) != c.n_state + c.m_scan)
    return info.Invalid("body has " + std::to_string(c.body->num_inputs()) + " inputs, expected " + std::to_string(c.n_state + c.m_scan));
  c.k_out = static_cast<int>(c.body->num_outputs()) - c.n_state;
  if (c.k_out < 0)
    return info.Invalid("body has " + std::to_string(c.body->num_outputs()) + " outputs, fewer than the " + std::to_string(c.n_state) +
                        " state variables");
  if (info.num_outputs() != c.n_state + c.k_out)
    return info.Invalid("node has " + std::to_string(info.num_outputs()) + " outputs, expected " + std::to_string(c.n_state + c.k_out));
  for (int i = first; i < info.num_inputs(); ++i)
    if (!info.has_input(i)) return info.Invalid("input " + std::to_string(i) + " must not be omitted");
  if (batched) {
    c.in_dirs = info.GetInts("directions", std::vector<int64_t>(c.m_scan, 0));
    c.in_axes.assign(c.m_scan, 0);
    c.out_axes.assign(c.k_out, 0);
    c.out_dirs.assign(c.k_out, 0);
  } else {
    c.in_dirs = info.GetInts("scan_input_directions", std::vector<int64_t>(c.m_scan, 0));
    c.in_axes = info.GetInts("scan_input_axes", std::vector<int64_t>(c.m_scan, 0));
    c.out_dirs = info.GetInts("scan_output_directions", std::vector<int64_t>(c.k_out, 0));
    c.out_axes = info.GetInts("scan_output_axes", std::vector<int64_t>(c.k_out, 0));
  }
  auto check_len = [&](const char* name, const std::vector<int64_t>& v, int want) -> Status {
    if (static_cast<int>(v.size()) != want)
      return info.Invalid(std::string(name) + " has " + std::to_string(v.size()) + " entries, expected " + std::to_string(want));
    return Status::Ok();
  };
  IL_RETURN_IF_ERROR(check_len(batched ? "directions" : "scan_input_directions", c.in_dirs, c.m_scan));
  IL_RETURN_IF_ERROR(check_len("scan_input_axes", c.in_axes, c.m_scan));
  IL_RETURN_IF_ERROR(check_len("scan_output_directions", c.out_dirs, c.k_out));
  IL_RETURN_IF_ERROR(check_len("scan_output_axes", c.out_axes, c.k_out));
  IL_RETURN_IF_ERROR(CheckFlags(info, "scan input directions", c.in_dirs));
  IL_RETURN_IF_ERROR(CheckFlags(info, "scan_output_directions", c.out_dirs));
  return std::unique_ptr<Kernel>(new ScanKernel(std::move(c), batched));
}

// ---------------------------------------------------------------------------------------------
// SequenceMap

class SequenceMapKernel : public Kernel {
 public:
  explicit SequenceMapKernel(const Subgraph* body) : body_(body) {}

  Status Compute(KernelContext& ctx) const override {
    const Value* s0 = ctx.input_value(0);
    if (!s0 || !s0->is_sequence()) return ctx.Invalid("input 0 must be a sequence, got " + Describe(s0));
    const size_t len = s0->sequence().size();
    std::vector<const Value*> ins;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Value* v = ctx.input_value(i);
      if (!v || v->is_none()) return ctx.Invalid("input " + std::to_string(i) + " is missing");
      if (v->is_sequence() && v->sequence().size() != len)
        return ctx.Invalid("input sequence " + std::to_string(i) + " has " + std::to_string(v->sequence().size()) +
                           " elements, but input 0 has " + std::to_string(len));
      ins.push_back(v);
    }
    const int n_out = ctx.num_outputs();
    std::vector<std::vector<Tensor>> results(n_out);
    for (size_t e = 0; e < len; ++e) {
      std::vector<Value> in;
      in.reserve(ins.size());
      for (const Value* v : ins) in.push_back(v->is_sequence() ? Value(v->sequence()[e]) : *v);
      IL_ASSIGN_OR_RETURN(std::vector<Value> outs, ctx.RunSubgraph(*body_, std::move(in)));
      if (static_cast<int>(outs.size()) != n_out)
        return ctx.Invalid("body produced " + std::to_string(outs.size()) + " outputs, expected " + std::to_string(n_out));
      for (int k = 0; k < n_out; ++k) {
        if (!outs[k].is_tensor())
          return ctx.Invalid("body output " + std::to_string(k) + " must be a tensor, got " + Describe(&outs[k]));
        if (!results[k].empty() && outs[k].tensor().dtype() != results[k][0].dtype())
          return ctx.Invalid("body output " + std::to_string(k) + " changes type between elements");
        results[k].push_back(std::move(outs[k].tensor()));
      }
    }
    for (int k = 0; k < n_out; ++k) {
      DataType dt = results[k].empty() ? body_->output(k).type.elem_type : results[k][0].dtype();
      if (dt == DataType::kUndefined) dt = DataType::kFloat;
      ctx.SetOutput(k, Value::MakeSequence(std::move(results[k]), dt));
    }
    return Status::Ok();
  }

 private:
  const Subgraph* body_;
};

Result<std::unique_ptr<Kernel>> MakeSequenceMap(const KernelInfo& info) {
  IL_ASSIGN_OR_RETURN(const Subgraph* body, RequireGraph(info, "body"));
  if (info.num_inputs() < 1 || !info.has_input(0)) return info.Invalid("input_sequence is required");
  if (static_cast<int>(body->num_inputs()) != info.num_inputs())
    return info.Invalid("body has " + std::to_string(body->num_inputs()) + " inputs, the node has " + std::to_string(info.num_inputs()));
  if (static_cast<int>(body->num_outputs()) != info.num_outputs())
    return info.Invalid("body has " + std::to_string(body->num_outputs()) + " outputs, the node has " + std::to_string(info.num_outputs()));
  return std::unique_ptr<Kernel>(new SequenceMapKernel(body));
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) {
  r.Register("", "If", 1, MakeIf);
  r.Register("", "Loop", 1, MakeLoop);
  r.Register("", "Scan", 8, MakeScan);
  r.Register("", "SequenceMap", 17, MakeSequenceMap);
}

}  // namespace inferloop
