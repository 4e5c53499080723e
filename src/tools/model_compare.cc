#include "tools/model_compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "base/json_string.h"
#include "compute/tensor_cast.h"
#include "graph/onnx_loader.h"
#include "graph/tensor_file.h"
#include "graph/topological_sort.h"
#include "runtime/session_internal.h"

namespace inferloop {

namespace fs = std::filesystem;

// ---- statistics ----

void StatsAccumulator::Add(const double* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[i];
    if (!std::isfinite(x)) {
      ++nonfinite_;
      continue;
    }
    if (count_ == 0 || x < min_) min_ = x;
    if (count_ == 0 || x > max_) max_ = x;
    sum_ += x;
    sq_ += x * x;
    ++count_;
  }
}

ValueStats StatsAccumulator::Get() const {
  ValueStats s;
  s.count = count_;
  s.nonfinite = nonfinite_;
  if (count_ == 0) return s;
  s.min = min_;
  s.max = max_;
  s.mean = sum_ / static_cast<double>(count_);
  s.std = std::sqrt(std::max(0.0, sq_ / static_cast<double>(count_) - s.mean * s.mean));
  return s;
}

void ErrorAccumulator::Add(const double* a, const double* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // The same NaN/inf on both sides agrees; anything else is a divergence.
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) nonfinite_ = true;
      continue;
    }
    dot_ += x * y;
    na_ += x * x;
    nb_ += y * y;
    const double d = std::fabs(x - y);
    max_abs_ = std::max(max_abs_, d);
    const double m = std::max(std::fabs(x), std::fabs(y));
    if (m > 0) max_rel_ = std::max(max_rel_, d / m);
  }
}

ErrorStats ErrorAccumulator::Get() const {
  ErrorStats e;
  if (nonfinite_) {
    e.cosine = std::numeric_limits<double>::quiet_NaN();
    e.max_abs = e.max_rel = std::numeric_limits<double>::infinity();
    return e;
  }
  if (na_ == 0 && nb_ == 0) e.cosine = 1.0;
  else if (na_ == 0 || nb_ == 0) e.cosine = 0.0;
  else e.cosine = std::clamp(dot_ / (std::sqrt(na_) * std::sqrt(nb_)), -1.0, 1.0);
  e.max_abs = max_abs_;
  e.max_rel = max_rel_;
  return e;
}

Result<std::vector<double>> TensorToDoubles(const Tensor& t) {
  if (t.dtype() == DataType::kString) return Status::InvalidArgument("string tensors have no numeric statistics");
  IL_ASSIGN_OR_RETURN(Tensor d, CastTensor(t, DataType::kDouble));
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.size());
}

Status ChannelStatsAccumulator::Add(const Tensor& t) {
  if (t.rank() != 4) return Status::InvalidArgument("per-channel statistics need an NCHW (rank-4) tensor, got " + ShapeToString(t.shape()));
  const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
  if (channels_.empty()) channels_.resize(static_cast<size_t>(c));
  if (static_cast<int64_t>(channels_.size()) != c)
    return Status::InvalidArgument("channel count " + std::to_string(c) + " differs from the earlier " + std::to_string(channels_.size()));
  IL_ASSIGN_OR_RETURN(std::vector<double> v, TensorToDoubles(t));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k) channels_[k].Add(v.data() + (i * c + k) * hw, hw);
  return Status::Ok();
}

std::vector<ValueStats> ChannelStatsAccumulator::Get() const {
  std::vector<ValueStats> out;
  for (const auto& a : channels_) out.push_back(a.Get());
  return out;
}

// ---- data ----

namespace {

Result<NamedValue> LoadNamedTensorFile(const fs::path& p) {
  std::string name;
  IL_ASSIGN_OR_RETURN(Tensor t, LoadTensorFile(p.string(), &name));
  return NamedValue(std::move(name), Value(std::move(t)));
}

Result<Sample> LoadSampleDir(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && IsTensorFile(e.path().string())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Sample s;
  std::set<std::string> seen;
  for (const auto& f : files) {
    IL_ASSIGN_OR_RETURN(NamedValue nv, LoadNamedTensorFile(f));
    if (!seen.insert(nv.first).second)
      return Status::InvalidArgument(dir.string() + ": two files give input '" + nv.first + "'");
    s.push_back(std::move(nv));
  }
  return s;
}

}  // namespace

Result<std::vector<Sample>> LoadSamples(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::InvalidArgument("data '" + dir + "' is not a folder (expected <input>.npy/.pb files or folders of them)");
  bool direct = false;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && IsTensorFile(e.path().string())) direct = true;
    if (e.is_directory()) subdirs.push_back(e.path());
  }
  std::vector<Sample> samples;
  if (direct) {
    IL_ASSIGN_OR_RETURN(Sample s, LoadSampleDir(dir));
    samples.push_back(std::move(s));
    return samples;
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& d : subdirs) {
    IL_ASSIGN_OR_RETURN(Sample s, LoadSampleDir(d));
    if (!s.empty()) samples.push_back(std::move(s));
  }
  if (samples.empty()) return Status::InvalidArgument("data '" + dir + "' holds no .npy or .pb tensor files");
  return samples;
}

// ---- capture ----

namespace {

// The main graph's nodes in a topological order that keeps the file's order where it already is
// one (ONNX requires it; some exporters do not comply). Nodes whose inputs never become
// available (a cycle, a name from nowhere) follow in file order: compiling the plan reports them.
std::vector<const Node*> NodesInOrder(const Graph& g) {
  std::set<std::string> known = {""};
  for (const auto& in : g.inputs) known.insert(in.name);
  for (const auto& [name, t] : g.initializers) known.insert(name);
  std::map<std::string, int> producer;  // the first node defining each name
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs) producer.emplace(o, static_cast<int>(i));
  std::vector<std::vector<int>> preds(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs) {
      if (known.count(in)) continue;
      auto it = producer.find(in);
      preds[i].push_back(it != producer.end() ? it->second : static_cast<int>(i));  // from nowhere: never ready
    }
  const auto sorted = StableTopologicalOrder(preds);
  std::vector<const Node*> order;
  for (int i : sorted.order) order.push_back(&g.nodes[i]);
  for (int i : sorted.unordered) order.push_back(&g.nodes[i]);
  return order;
}

}  // namespace

Result<std::unique_ptr<CapturingModel>> CapturingModel::Load(const std::string& path, const std::vector<std::string>& only) {
  IL_ASSIGN_OR_RETURN(Model m, LoadModelFromFile(path));
  auto cm = std::unique_ptr<CapturingModel>(new CapturingModel());
  std::set<std::string> outputs, wanted(only.begin(), only.end()), taken;
  for (const auto& o : m.graph.outputs) {
    outputs.insert(o.name);
    cm->graph_outputs_.push_back(o.name);
  }
  std::set<std::string> inits;
  for (const auto& [name, t] : m.graph.initializers) inits.insert(name);
  std::vector<GraphValue> extra;
  for (const Node* np : NodesInOrder(m.graph))
    for (const std::string& o : np->outputs) {
      if (o.empty() || inits.count(o) || !taken.insert(o).second) continue;
      if (!wanted.empty() && !wanted.count(o) && !outputs.count(o)) continue;
      cm->names_.push_back(o);
      if (!outputs.count(o)) extra.push_back(GraphValue{o, TypeInfo{}});
    }
  // Graph outputs no node defines (an input or initializer passed through) come last.
  for (const auto& o : cm->graph_outputs_)
    if (!taken.count(o)) cm->names_.push_back(o);
  for (auto& gv : extra) m.graph.outputs.push_back(std::move(gv));
  SessionOptions so;
  so.optimization_level = 0;  // keep the file's names: no fusion, no folding
  auto s = Session::CreateFromModel(std::move(m), so);
  if (!s.ok()) return s.status().WithContext(path);
  cm->session_ = std::move(s).value();
  return cm;
}

bool CapturingModel::is_graph_output(const std::string& name) const {
  return std::find(graph_outputs_.begin(), graph_outputs_.end(), name) != graph_outputs_.end();
}

Result<std::vector<std::pair<std::string, Tensor>>> CapturingModel::Run(const Sample& sample) const {
  std::vector<NamedValue> feeds;
  for (const ValueInfo& vi : session_->inputs()) {
    auto it = std::find_if(sample.begin(), sample.end(), [&](const NamedValue& nv) { return nv.first == vi.name; });
    if (it != sample.end()) feeds.push_back(*it);
  }
  if (feeds.empty() && !session_->inputs().empty()) {
    std::string need, have;
    for (const auto& vi : session_->inputs()) need += (need.empty() ? "" : ", ") + vi.ToString();
    for (const auto& nv : sample) have += (have.empty() ? "" : ", ") + nv.first;
    return Status::InvalidArgument("no data file matches an input of the model; it needs " + need +
                                   " (data files are named <input>.npy / <input>.pb); the data has: " +
                                   (have.empty() ? "nothing" : have));
  }
  IL_ASSIGN_OR_RETURN(std::vector<NamedValue> result, session_->Run(feeds));
  std::map<std::string, Tensor> by_name;
  for (auto& [name, v] : result)
    if (v.is_tensor()) by_name[name] = v.tensor();
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& n : names_) {
    auto it = by_name.find(n);
    if (it != by_name.end()) out.emplace_back(n, it->second);
  }
  return out;
}

// ---- comparison ----

namespace {

struct TensorAcc {
  std::string name;
  Shape shape_a, shape_b;
  DataType dtype_a = DataType::kUndefined, dtype_b = DataType::kUndefined;
  bool in_a = false, in_b = false, numeric = true, mismatch = false;
  std::string detail;
  ErrorAccumulator err;
  StatsAccumulator a, b;
};

std::string Describe(DataType t, const Shape& s) { return std::string(DataTypeName(t)) + ShapeToString(s); }

struct InputAcc {
  Shape shape;
  StatsAccumulator all;
  ChannelStatsAccumulator channels;
  bool channels_ok = true;
};

Status AccumulateInputs(const std::vector<Sample>& samples, const std::set<std::string>& names,
                        std::map<std::string, InputAcc>& acc) {
  for (const Sample& s : samples)
    for (const auto& [name, v] : s) {
      if (!names.count(name) || !v.is_tensor() || v.tensor().dtype() == DataType::kString) continue;
      InputAcc& a = acc[name];
      if (a.shape.empty()) a.shape = v.tensor().shape();
      IL_ASSIGN_OR_RETURN(std::vector<double> d, TensorToDoubles(v.tensor()));
      a.all.Add(d.data(), static_cast<int64_t>(d.size()));
      if (v.tensor().rank() == 4 && a.channels_ok) a.channels_ok = a.channels.Add(v.tensor()).ok();
      else if (v.tensor().rank() != 4) a.channels_ok = false;
    }
  return Status::Ok();
}

ChannelCheck Check(int channel, const ValueStats& data, const ValueStats& cal, double sigmas) {
  ChannelCheck c;
  c.channel = channel;
  c.data = data;
  c.calibration = cal;
  const double diff = std::fabs(data.mean - cal.mean);
  c.sigmas = cal.std > 0 ? diff / cal.std : (diff > 1e-12 ? std::numeric_limits<double>::infinity() : 0.0);
  c.flagged = c.sigmas > sigmas;
  return c;
}

}  // namespace

Result<CompareReport> CompareModels(const std::string& model_a, const std::string& model_b, const std::string& data_dir,
                                    const CompareOptions& opts) {
  CompareReport r;
  r.model_a = model_a;
  r.model_b = model_b;
  r.cosine_threshold = opts.cosine_threshold;
  auto a = CapturingModel::Load(model_a, opts.tensors);
  if (!a.ok()) return a.status().WithContext("model A");
  auto b = CapturingModel::Load(model_b, opts.tensors);
  if (!b.ok()) return b.status().WithContext("model B");
  for (const auto& t : opts.tensors) {
    const auto& na = (*a)->names();
    const auto& nb = (*b)->names();
    if (std::find(na.begin(), na.end(), t) == na.end() && std::find(nb.begin(), nb.end(), t) == nb.end())
      return Status::InvalidArgument("tensor '" + t + "' is not a node output of either model");
  }
  IL_ASSIGN_OR_RETURN(std::vector<Sample> samples, LoadSamples(data_dir));
  r.samples = static_cast<int>(samples.size());

  std::map<std::string, size_t> index;
  std::vector<TensorAcc> accs;
  for (const auto& n : (*a)->names()) {
    index[n] = accs.size();
    accs.emplace_back();
    accs.back().name = n;
  }
  std::set<std::string> b_names((*b)->names().begin(), (*b)->names().end());
  for (size_t si = 0; si < samples.size(); ++si) {
    const std::string where = samples.size() > 1 ? "sample " + std::to_string(si + 1) : "data";
    auto ra = (*a)->Run(samples[si]);
    if (!ra.ok()) return ra.status().WithContext("model A on " + where);
    auto rb = (*b)->Run(samples[si]);
    if (!rb.ok()) return rb.status().WithContext("model B on " + where);
    std::map<std::string, const Tensor*> tb;
    for (const auto& [n, t] : *rb) tb[n] = &t;
    for (const auto& [n, ta] : *ra) {
      TensorAcc& acc = accs[index[n]];
      acc.in_a = true;
      if (acc.shape_a.empty()) acc.shape_a = ta.shape(), acc.dtype_a = ta.dtype();
      auto it = tb.find(n);
      if (it == tb.end()) continue;
      const Tensor& tbv = *it->second;
      acc.in_b = true;
      if (acc.mismatch) continue;
      acc.shape_b = tbv.shape();
      acc.dtype_b = tbv.dtype();
      if (ta.shape() != tbv.shape()) {
        acc.mismatch = true;
        acc.detail = "A " + Describe(ta.dtype(), ta.shape()) + " vs B " + Describe(tbv.dtype(), tbv.shape());
        continue;
      }
      auto da = TensorToDoubles(ta);
      auto db = TensorToDoubles(tbv);
      if (!da.ok() || !db.ok()) {
        acc.numeric = false;
        acc.detail = "A " + Describe(ta.dtype(), ta.shape()) + " vs B " + Describe(tbv.dtype(), tbv.shape());
        continue;
      }
      const int64_t n_el = static_cast<int64_t>(da->size());
      acc.err.Add(da->data(), db->data(), n_el);
      acc.a.Add(da->data(), n_el);
      acc.b.Add(db->data(), n_el);
    }
  }
  for (const auto& n : (*b)->names())
    if (!index.count(n)) ++r.only_in_b;
  for (const TensorAcc& acc : accs) {
    if (!acc.in_a) continue;  // a non-tensor value
    if (!acc.in_b) {
      ++r.only_in_a;
      continue;
    }
    TensorComparison tc;
    tc.name = acc.name;
    tc.shape = acc.shape_a;
    tc.is_output = (*a)->is_graph_output(acc.name);
    tc.detail = acc.detail;
    if (acc.mismatch) {
      tc.status = TensorComparison::Status::kShapeMismatch;
    } else if (!acc.numeric) {
      tc.status = TensorComparison::Status::kTypeMismatch;
    } else {
      tc.error = acc.err.Get();
      tc.a = acc.a.Get();
      tc.b = acc.b.Get();
      tc.diverged = !(tc.error.cosine >= opts.cosine_threshold);  // NaN diverges
      if (tc.diverged && r.first_divergence < 0) r.first_divergence = static_cast<int>(r.tensors.size());
    }
    r.tensors.push_back(std::move(tc));
  }
  if (r.tensors.empty())
    return Status::InvalidArgument("the models share no tensor name: nothing to compare (A captured " +
                                   std::to_string((*a)->names().size()) + " tensors, B " +
                                   std::to_string((*b)->names().size()) + ")");

  // Input statistics, and the calibration set's.
  std::set<std::string> input_names;
  for (const auto& vi : (*a)->inputs()) input_names.insert(vi.name);
  for (const auto& vi : (*b)->inputs()) input_names.insert(vi.name);
  std::map<std::string, InputAcc> data_acc, cal_acc;
  IL_RETURN_IF_ERROR(AccumulateInputs(samples, input_names, data_acc));
  const bool with_cal = !opts.calibration_dir.empty();
  if (with_cal) {
    auto cal = LoadSamples(opts.calibration_dir);
    if (!cal.ok()) return cal.status().WithContext("calibration");
    IL_RETURN_IF_ERROR(AccumulateInputs(*cal, input_names, cal_acc));
  }
  for (auto& [name, acc] : data_acc) {
    InputReport ir;
    ir.name = name;
    ir.shape = acc.shape;
    ir.stats = acc.all.Get();
    if (acc.channels_ok) ir.channels = acc.channels.Get();
    auto ci = cal_acc.find(name);
    if (with_cal && ci != cal_acc.end()) {
      ir.has_calibration = true;
      ir.calibration_stats = ci->second.all.Get();
      std::vector<ValueStats> cal_ch = ci->second.channels_ok ? ci->second.channels.Get() : std::vector<ValueStats>{};
      if (!ir.channels.empty() && cal_ch.size() == ir.channels.size()) {
        for (size_t k = 0; k < cal_ch.size(); ++k)
          ir.checks.push_back(Check(static_cast<int>(k), ir.channels[k], cal_ch[k], opts.calibration_sigmas));
      } else {
        ir.checks.push_back(Check(-1, ir.stats, ir.calibration_stats, opts.calibration_sigmas));
      }
      for (const auto& c : ir.checks) r.preprocessing_mismatch |= c.flagged;
    }
    r.inputs.push_back(std::move(ir));
  }
  return r;
}

// ---- output ----

namespace {

std::string Num(double v, int prec = 6) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::setprecision(prec) << v;
  return os.str();
}

std::string Pad(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

std::string Range(const ValueStats& s) { return "[" + Num(s.min, 4) + ", " + Num(s.max, 4) + "] mean " + Num(s.mean, 4); }


std::string JsonNum(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

std::string JsonShape(const Shape& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
  return o + "]";
}

std::string JsonStats(const ValueStats& s) {
  return "{\"count\":" + std::to_string(s.count) + ",\"nonfinite\":" + std::to_string(s.nonfinite) + ",\"min\":" + JsonNum(s.min) +
         ",\"max\":" + JsonNum(s.max) + ",\"mean\":" + JsonNum(s.mean) + ",\"std\":" + JsonNum(s.std) + "}";
}

const char* StatusName(TensorComparison::Status s) {
  switch (s) {
    case TensorComparison::Status::kCompared: return "compared";
    case TensorComparison::Status::kShapeMismatch: return "shape_mismatch";
    default: return "type_mismatch";
  }
}

}  // namespace

std::string FormatCompareReport(const CompareReport& r) {
  std::ostringstream os;
  os << "A: " << r.model_a << "\nB: " << r.model_b << "\nsamples: " << r.samples << "\n\n";
  os << "Inputs (data" << (r.inputs.empty() || !r.inputs[0].has_calibration ? "" : " vs calibration") << "):\n";
  for (const auto& in : r.inputs) {
    os << "  " << in.name << " " << ShapeToString(in.shape) << "  min " << Num(in.stats.min, 4) << "  max " << Num(in.stats.max, 4)
       << "  mean " << Num(in.stats.mean, 4) << "  std " << Num(in.stats.std, 4);
    if (in.has_calibration)
      os << "   | calibration mean " << Num(in.calibration_stats.mean, 4) << "  std " << Num(in.calibration_stats.std, 4);
    os << "\n";
    for (size_t k = 0; k < in.channels.size(); ++k) {
      os << "    channel " << k << ": mean " << Num(in.channels[k].mean, 4) << "  std " << Num(in.channels[k].std, 4);
      for (const auto& c : in.checks)
        if (c.channel == static_cast<int>(k))
          os << "   | calibration mean " << Num(c.calibration.mean, 4) << "  std " << Num(c.calibration.std, 4) << "  ("
             << Num(c.sigmas, 3) << " std away)" << (c.flagged ? "  <-- PREPROCESSING MISMATCH?" : "");
      os << "\n";
    }
    for (const auto& c : in.checks)
      if (c.channel < 0 && c.flagged)
        os << "    mean is " << Num(c.sigmas, 3) << " calibration std away  <-- PREPROCESSING MISMATCH?\n";
  }
  os << "\n";
  const std::vector<size_t> w = {4, 28, 16, 10, 11, 11, 34, 34};
  const std::vector<std::string> head = {"#", "tensor", "shape", "cosine", "max_abs", "max_rel", "A range", "B range"};
  {
    std::string line;
    for (size_t i = 0; i < head.size(); ++i) line += Pad(head[i], w[i]) + (i + 1 < head.size() ? " " : "");
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << "\n";
  }
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const auto& t = r.tensors[i];
    std::vector<std::string> cells = {std::to_string(i), t.name + (t.is_output ? " (output)" : ""), ShapeToString(t.shape)};
    if (t.status == TensorComparison::Status::kCompared) {
      cells.insert(cells.end(), {Num(t.error.cosine, 6), Num(t.error.max_abs, 4), Num(t.error.max_rel, 4), Range(t.a), Range(t.b)});
    } else {
      cells.push_back(std::string(StatusName(t.status)) + ": " + t.detail);
    }
    std::ostringstream row;
    for (size_t c = 0; c < cells.size(); ++c) row << Pad(cells[c], c < w.size() ? w[c] : 0) << (c + 1 < cells.size() ? " " : "");
    std::string line = row.str();
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << (static_cast<int>(i) == r.first_divergence ? "  <-- first divergence" : "") << "\n";
  }
  os << "\n";
  if (r.only_in_a || r.only_in_b)
    os << "not compared: " << r.only_in_a << " tensors only in A, " << r.only_in_b << " only in B\n";
  if (r.first_divergence >= 0) {
    const auto& t = r.tensors[r.first_divergence];
    os << "first divergence (cosine < " << Num(r.cosine_threshold) << "): '" << t.name << "' (#" << r.first_divergence
       << "), cosine " << Num(t.error.cosine) << ", max abs error " << Num(t.error.max_abs) << "\n";
  } else {
    os << "no divergence: every compared tensor has cosine >= " << Num(r.cosine_threshold) << "\n";
  }
  for (size_t i = 0; i < r.tensors.size(); ++i)
    if (r.tensors[i].status != TensorComparison::Status::kCompared) {
      os << "first structural difference: '" << r.tensors[i].name << "' (#" << i << "): " << r.tensors[i].detail << "\n";
      break;
    }
  int out_n = 0, out_bad = 0;
  for (const auto& t : r.tensors)
    if (t.is_output) ++out_n, out_bad += t.diverged;
  os << "outputs: " << out_n << " compared, " << out_bad << " diverged\n";
  if (r.preprocessing_mismatch) os << "input statistics differ from the calibration set's: check preprocessing\n";
  return os.str();
}

std::string CompareReportToJson(const CompareReport& r) {
  std::ostringstream os;
  os << "{\"model_a\":" << JsonString(r.model_a) << ",\"model_b\":" << JsonString(r.model_b) << ",\"samples\":" << r.samples
     << ",\"cosine_threshold\":" << JsonNum(r.cosine_threshold) << ",\"inputs\":[";
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const auto& in = r.inputs[i];
    os << (i ? "," : "") << "{\"name\":" << JsonString(in.name) << ",\"shape\":" << JsonShape(in.shape)
       << ",\"stats\":" << JsonStats(in.stats) << ",\"channels\":[";
    for (size_t k = 0; k < in.channels.size(); ++k) os << (k ? "," : "") << JsonStats(in.channels[k]);
    os << "]";
    if (in.has_calibration) {
      os << ",\"calibration\":" << JsonStats(in.calibration_stats) << ",\"checks\":[";
      for (size_t k = 0; k < in.checks.size(); ++k) {
        const auto& c = in.checks[k];
        os << (k ? "," : "") << "{\"channel\":" << c.channel << ",\"mean\":" << JsonNum(c.data.mean)
           << ",\"calibration_mean\":" << JsonNum(c.calibration.mean) << ",\"calibration_std\":" << JsonNum(c.calibration.std)
           << ",\"sigmas\":" << JsonNum(c.sigmas) << ",\"flagged\":" << (c.flagged ? "true" : "false") << "}";
      }
      os << "]";
    }
    os << "}";
  }
  os << "],\"tensors\":[";
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const auto& t = r.tensors[i];
    os << (i ? "," : "") << "{\"name\":" << JsonString(t.name) << ",\"shape\":" << JsonShape(t.shape)
       << ",\"output\":" << (t.is_output ? "true" : "false") << ",\"status\":\"" << StatusName(t.status) << "\"";
    if (t.status == TensorComparison::Status::kCompared)
      os << ",\"cosine\":" << JsonNum(t.error.cosine) << ",\"max_abs\":" << JsonNum(t.error.max_abs)
         << ",\"max_rel\":" << JsonNum(t.error.max_rel) << ",\"a\":" << JsonStats(t.a) << ",\"b\":" << JsonStats(t.b)
         << ",\"diverged\":" << (t.diverged ? "true" : "false");
    else
      os << ",\"detail\":" << JsonString(t.detail);
    os << "}";
  }
  os << "],\"first_divergence\":";
  if (r.first_divergence >= 0) os << JsonString(r.tensors[r.first_divergence].name);
  else os << "null";
  os << ",\"only_in_a\":" << r.only_in_a << ",\"only_in_b\":" << r.only_in_b
     << ",\"preprocessing_mismatch\":" << (r.preprocessing_mismatch ? "true" : "false") << "}\n";
  return os.str();
}

}  // namespace inferloop
