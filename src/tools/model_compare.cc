#include "tools/model_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "base/status_macros.h"
#include "graph/onnx_loader.h"
#include "graph/topological_sort.h"
#include "runtime/session_internal.h"

namespace inferloop {

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
  auto s = CreateSessionFromModel(std::move(m), so);
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

// Adds one sample's pair of tensors (A's `ta`, B's `tb`) to acc.
void AccumulatePair(TensorAcc& acc, const Tensor& ta, const Tensor& tb) {
  acc.in_b = true;
  if (acc.mismatch) return;
  acc.shape_b = tb.shape();
  acc.dtype_b = tb.dtype();
  if (ta.shape() != tb.shape()) {
    acc.mismatch = true;
    acc.detail = "A " + Describe(ta.dtype(), ta.shape()) + " vs B " + Describe(tb.dtype(), tb.shape());
    return;
  }
  auto da = TensorToDoubles(ta);
  auto db = TensorToDoubles(tb);
  if (!da.ok() || !db.ok()) {
    acc.numeric = false;
    acc.detail = "A " + Describe(ta.dtype(), ta.shape()) + " vs B " + Describe(tb.dtype(), tb.shape());
    return;
  }
  const int64_t n_el = static_cast<int64_t>(da->size());
  acc.err.Add(da->data(), db->data(), n_el);
  acc.a.Add(da->data(), n_el);
  acc.b.Add(db->data(), n_el);
}

// Runs both models on every sample; one TensorAcc per name A captures, in A's order.
Result<std::vector<TensorAcc>> RunBoth(const CapturingModel& a, const CapturingModel& b,
                                       const std::vector<Sample>& samples) {
  std::map<std::string, size_t> index;
  std::vector<TensorAcc> accs;
  for (const auto& n : a.names()) {
    index[n] = accs.size();
    accs.emplace_back();
    accs.back().name = n;
  }
  for (size_t si = 0; si < samples.size(); ++si) {
    const std::string where = samples.size() > 1 ? "sample " + std::to_string(si + 1) : "data";
    auto ra = a.Run(samples[si]);
    if (!ra.ok()) return ra.status().WithContext("model A on " + where);
    auto rb = b.Run(samples[si]);
    if (!rb.ok()) return rb.status().WithContext("model B on " + where);
    std::map<std::string, const Tensor*> tb;
    for (const auto& [n, t] : *rb) tb[n] = &t;
    for (const auto& [n, ta] : *ra) {
      TensorAcc& acc = accs[index[n]];
      acc.in_a = true;
      if (acc.shape_a.empty()) acc.shape_a = ta.shape(), acc.dtype_a = ta.dtype();
      auto it = tb.find(n);
      if (it != tb.end()) AccumulatePair(acc, ta, *it->second);
    }
  }
  return accs;
}

// Fills r.tensors, r.first_divergence and r.only_in_a / only_in_b from the accumulated pairs.
void SummarizeTensors(const std::vector<TensorAcc>& accs, const CapturingModel& a, const CapturingModel& b,
                      double cosine_threshold, CompareReport& r) {
  std::set<std::string> a_names(a.names().begin(), a.names().end());
  for (const auto& n : b.names())
    if (!a_names.count(n)) ++r.only_in_b;
  for (const TensorAcc& acc : accs) {
    if (!acc.in_a) continue;  // a non-tensor value
    if (!acc.in_b) {
      ++r.only_in_a;
      continue;
    }
    TensorComparison tc;
    tc.name = acc.name;
    tc.shape = acc.shape_a;
    tc.is_output = a.is_graph_output(acc.name);
    tc.detail = acc.detail;
    if (acc.mismatch) {
      tc.status = TensorComparison::Status::kShapeMismatch;
    } else if (!acc.numeric) {
      tc.status = TensorComparison::Status::kTypeMismatch;
    } else {
      tc.error = acc.err.Get();
      tc.a = acc.a.Get();
      tc.b = acc.b.Get();
      tc.diverged = !(tc.error.cosine >= cosine_threshold);  // NaN diverges
      if (tc.diverged && r.first_divergence < 0) r.first_divergence = static_cast<int>(r.tensors.size());
    }
    r.tensors.push_back(std::move(tc));
  }
}

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

// Fills r.inputs (and r.preprocessing_mismatch): statistics of the inputs of either model in
// `samples`, checked against the calibration set's when opts names one.
Status ReportInputs(const std::vector<Sample>& samples, const CapturingModel& a, const CapturingModel& b,
                    const CompareOptions& opts, CompareReport& r) {
  std::set<std::string> input_names;
  for (const auto& vi : a.inputs()) input_names.insert(vi.name);
  for (const auto& vi : b.inputs()) input_names.insert(vi.name);
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
  return Status::Ok();
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
  IL_ASSIGN_OR_RETURN(std::vector<TensorAcc> accs, RunBoth(**a, **b, samples));
  SummarizeTensors(accs, **a, **b, opts.cosine_threshold, r);
  if (r.tensors.empty())
    return Status::InvalidArgument("the models share no tensor name: nothing to compare (A captured " +
                                   std::to_string((*a)->names().size()) + " tensors, B " +
                                   std::to_string((*b)->names().size()) + ")");
  IL_RETURN_IF_ERROR(ReportInputs(samples, **a, **b, opts, r));
  return r;
}

}  // namespace inferloop
