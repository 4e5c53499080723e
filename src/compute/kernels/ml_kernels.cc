// Registration of the ml kernel family (domain ai.onnx.ml): ArrayFeatureExtractor, Binarizer,
// LabelEncoder (opsets 1, 2 and 4), TreeEnsemble (opset 5).
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "base/float_types.h"
#include "base/status_macros.h"
#include "compute/dispatch.h"
#include "compute/kernel_registry.h"
#include "compute/kernels/flow_util.h"
#include "compute/tensor_cast.h"

namespace inferloop {
namespace {

constexpr const char* kMl = "ai.onnx.ml";

// ---------------------------------------------------------------------------------------------
// ArrayFeatureExtractor: out[..., j] = X[..., Y[j]]. A 1-D X gives a [1, len(Y)] output
// (as onnxruntime and the reference implementation do).

Status ArrayFeatureExtractor(KernelContext& ctx) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(const Tensor* y, ctx.RequireInput(1));
  if (y->dtype() != DataType::kInt64) return ctx.Invalid(std::string("Y must be int64, got ") + DataTypeName(y->dtype()));
  if (x->rank() == 0) return ctx.Invalid("X must have rank >= 1, got a scalar");
  const int64_t n = x->dim(x->rank() - 1);
  const int64_t k = y->size();
  const int64_t* idx = y->data<int64_t>();
  for (int64_t j = 0; j < k; ++j)
    if (idx[j] < 0 || idx[j] >= n)
      return ctx.Invalid("index Y[" + std::to_string(j) + "] = " + std::to_string(idx[j]) + " is out of range [0, " +
                         std::to_string(n - 1) + "] for the last dimension of X " + ShapeToString(x->shape()));
  Shape out_shape = x->shape();
  if (x->rank() == 1) out_shape = {1, k};
  else out_shape.back() = k;
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x->dtype(), out_shape));
  const int64_t rows = n ? x->size() / n : flow::Prod(x->shape(), 0, x->rank() - 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) flow::CopyElements(*x, r * n + idx[j], out, r * k + j, 1);
  ctx.SetOutput(0, std::move(out));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Binarizer

Status Binarizer(KernelContext& ctx, float threshold) {
  IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
  IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(x->dtype(), x->shape()));
  return DispatchNumeric(
      x->dtype(),
      [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        const T* in = x->data<T>();
        T* o = out.data<T>();
        const double th = threshold;
        for (int64_t i = 0; i < x->size(); ++i) o[i] = static_cast<double>(in[i]) > th ? T(1) : T(0);
        ctx.SetOutput(0, std::move(out));
        return Status::Ok();
      },
      "Binarizer");
}

// ---------------------------------------------------------------------------------------------
// LabelEncoder

// Keys normalized to one of three kinds so lookups are uniform across dtypes.
enum class KeyKind { kString, kInt, kFloat };

KeyKind KindOf(DataType t) {
  switch (t) {
    case DataType::kString: return KeyKind::kString;
    case DataType::kFloat: case DataType::kDouble: return KeyKind::kFloat;
    default: return KeyKind::kInt;
  }
}

bool IsLabelType(DataType t) {
  switch (t) {
    case DataType::kString: case DataType::kInt64: case DataType::kInt32: case DataType::kInt16:
    case DataType::kFloat: case DataType::kDouble:
      return true;
    default: return false;
  }
}

double ElemAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return t.data<float>()[i];
    case DataType::kDouble: return t.data<double>()[i];
    default: return 0;
  }
}

int64_t ElemAsInt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kInt64: return t.data<int64_t>()[i];
    case DataType::kInt32: return t.data<int32_t>()[i];
    case DataType::kInt16: return t.data<int16_t>()[i];
    default: return 0;
  }
}

class LabelEncoderKernel : public Kernel {
 public:
  // keys and values: 1-D tensors of equal length; def: one element of values' dtype.
  LabelEncoderKernel(Tensor keys, Tensor values, Tensor def) : keys_(std::move(keys)), values_(std::move(values)), def_(std::move(def)) {
    const int64_t n = keys_.size();
    for (int64_t i = 0; i < n; ++i) {  // later keys overwrite earlier ones
      switch (KindOf(keys_.dtype())) {
        case KeyKind::kString: str_[keys_.strings()[i]] = i; break;
        case KeyKind::kInt: int_[ElemAsInt(keys_, i)] = i; break;
        case KeyKind::kFloat: {
          double d = ElemAsDouble(keys_, i);
          if (std::isnan(d)) nan_index_ = i;
          else flt_[d == 0 ? 0.0 : d] = i;
          break;
        }
      }
    }
  }

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    if (x->dtype() != keys_.dtype())
      return ctx.Invalid(std::string("input is ") + DataTypeName(x->dtype()) + ", but the keys are " + DataTypeName(keys_.dtype()));
    IL_ASSIGN_OR_RETURN(Tensor out, ctx.Allocate(values_.dtype(), x->shape()));
    const KeyKind kind = KindOf(keys_.dtype());
    for (int64_t i = 0; i < x->size(); ++i) {
      int64_t hit = -1;
      if (kind == KeyKind::kString) {
        auto it = str_.find(x->strings()[i]);
        if (it != str_.end()) hit = it->second;
      } else if (kind == KeyKind::kInt) {
        auto it = int_.find(ElemAsInt(*x, i));
        if (it != int_.end()) hit = it->second;
      } else {
        double d = ElemAsDouble(*x, i);
        if (std::isnan(d)) {
          hit = nan_index_;
        } else {
          auto it = flt_.find(d == 0 ? 0.0 : d);
          if (it != flt_.end()) hit = it->second;
        }
      }
      if (hit >= 0) flow::CopyElements(values_, hit, out, i, 1);
      else flow::CopyElements(def_, 0, out, i, 1);
    }
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }

 private:
  Tensor keys_, values_, def_;
  std::unordered_map<std::string, int64_t> str_;
  std::unordered_map<int64_t, int64_t> int_;
  std::unordered_map<double, int64_t> flt_;
  int64_t nan_index_ = -1;
};

Tensor Strings1D(const std::vector<std::string>& v) { return Tensor::FromStrings({static_cast<int64_t>(v.size())}, v); }
Tensor Ints1D(const std::vector<int64_t>& v) { return Tensor::FromVector(DataType::kInt64, {static_cast<int64_t>(v.size())}, v); }
Tensor Floats1D(const std::vector<float>& v) { return Tensor::FromVector(DataType::kFloat, {static_cast<int64_t>(v.size())}, v); }

Result<Tensor> DefaultFor(const KernelInfo& info, DataType vt) {
  if (const Tensor* dt = info.GetTensor("default_tensor")) {
    if (dt->dtype() != vt)
      return info.Invalid(std::string("default_tensor is ") + DataTypeName(dt->dtype()) + " but the values are " + DataTypeName(vt));
    if (dt->size() != 1) return info.Invalid("default_tensor must hold exactly one element, got shape " + ShapeToString(dt->shape()));
    return *dt;
  }
  switch (vt) {
    case DataType::kString: return Tensor::FromStrings({1}, {info.GetString("default_string", "_Unused")});
    case DataType::kFloat: return Floats1D({info.GetFloat("default_float", -0.0f)});
    case DataType::kDouble: return Tensor::FromVector(DataType::kDouble, {1}, std::vector<double>{info.GetFloat("default_float", -0.0f)});
    default: {
      auto r = Tensor::Create(vt, {1});
      if (!r.ok()) return r.status();
      Tensor t = std::move(r).value();
      const int64_t d = info.GetInt("default_int64", -1);
      if (vt == DataType::kInt64) t.data<int64_t>()[0] = d;
      else if (vt == DataType::kInt32) t.data<int32_t>()[0] = static_cast<int32_t>(d);
      else if (vt == DataType::kInt16) t.data<int16_t>()[0] = static_cast<int16_t>(d);
      return t;
    }
  }
}

Result<std::unique_ptr<Kernel>> MakeLabelEncoder(const KernelInfo& info) {
  Tensor keys, values;
  if (info.opset() < 2) {
    // classes_strings[i] <-> i; direction picked at run time by the input type, so build both.
    const auto classes = info.GetStrings("classes_strings");
    std::vector<int64_t> idx(classes.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    auto s2i = std::make_shared<LabelEncoderKernel>(Strings1D(classes), Ints1D(idx), Ints1D({info.GetInt("default_int64", -1)}));
    auto i2s = std::make_shared<LabelEncoderKernel>(Ints1D(idx), Strings1D(classes),
                                                    Tensor::FromStrings({1}, {info.GetString("default_string", "_Unused")}));
    return MakeKernel([s2i, i2s](KernelContext& ctx) -> Status {
      IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
      if (x->dtype() == DataType::kString) return s2i->Compute(ctx);
      if (x->dtype() == DataType::kInt64) return i2s->Compute(ctx);
      return ctx.Invalid(std::string("input must be string or int64, got ") + DataTypeName(x->dtype()));
    });
  }
  int nkeys = 0, nvalues = 0;
  if (info.has_attr("keys_strings")) { keys = Strings1D(info.GetStrings("keys_strings")); ++nkeys; }
  if (info.has_attr("keys_int64s")) { keys = Ints1D(info.GetInts("keys_int64s")); ++nkeys; }
  if (info.has_attr("keys_floats")) { keys = Floats1D(info.GetFloats("keys_floats")); ++nkeys; }
  if (const Tensor* t = info.GetTensor("keys_tensor")) { keys = *t; ++nkeys; }
  if (info.has_attr("values_strings")) { values = Strings1D(info.GetStrings("values_strings")); ++nvalues; }
  if (info.has_attr("values_int64s")) { values = Ints1D(info.GetInts("values_int64s")); ++nvalues; }
  if (info.has_attr("values_floats")) { values = Floats1D(info.GetFloats("values_floats")); ++nvalues; }
  if (const Tensor* t = info.GetTensor("values_tensor")) { values = *t; ++nvalues; }
  if (nkeys != 1) return info.Invalid("exactly one keys_* attribute must be set, got " + std::to_string(nkeys));
  if (nvalues != 1) return info.Invalid("exactly one values_* attribute must be set, got " + std::to_string(nvalues));
  if (!IsLabelType(keys.dtype())) return info.Invalid(std::string("unsupported key type ") + DataTypeName(keys.dtype()));
  if (!IsLabelType(values.dtype())) return info.Invalid(std::string("unsupported value type ") + DataTypeName(values.dtype()));
  if (keys.size() != values.size())
    return info.Invalid("keys has " + std::to_string(keys.size()) + " entries but values has " + std::to_string(values.size()));
  IL_ASSIGN_OR_RETURN(Tensor def, DefaultFor(info, values.dtype()));
  return std::unique_ptr<Kernel>(new LabelEncoderKernel(std::move(keys), std::move(values), std::move(def)));
}

// ---------------------------------------------------------------------------------------------
// TreeEnsemble (opset 5)

enum class Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };

struct TreeNode {
  Mode mode;
  int64_t feature;
  double split;
  bool missing_true;
  std::vector<double> members;  // sorted, for kMember
  int64_t child[2];             // [false, true]
  bool child_leaf[2];
};

// Inverse error function (Giles' approximation refined by two Newton steps).
double ErfInv(double x) {
  if (x <= -1) return -std::numeric_limits<double>::infinity();
  if (x >= 1) return std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - x) * (1.0 + x)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w; p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w; p = -0.00417768164 + p * w; p = 0.246640727 + p * w; p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w; p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w; p = 0.00943887047 + p * w; p = 1.00167406 + p * w; p = 2.83297682 + p * w;
  }
  double y = p * x;
  // Newton steps; d/dy erf(y) = 2/sqrt(pi) e^(-y^2).
  for (int i = 0; i < 2; ++i) y -= (std::erf(y) - x) / (1.1283791670955126 * std::exp(-y * y));
  return y;
}

class TreeEnsembleKernel : public Kernel {
 public:
  TreeEnsembleKernel(std::vector<TreeNode> nodes, std::vector<int64_t> roots, std::vector<int64_t> leaf_targets,
                     std::vector<double> leaf_weights, int64_t n_targets, int agg, int post)
      : nodes_(std::move(nodes)), roots_(std::move(roots)), leaf_targets_(std::move(leaf_targets)),
        leaf_weights_(std::move(leaf_weights)), n_targets_(n_targets), agg_(agg), post_(post) {
    for (const auto& n : nodes_) max_feature_ = std::max(max_feature_, n.feature);
  }

  Status Compute(KernelContext& ctx) const override {
    IL_ASSIGN_OR_RETURN(const Tensor* x, ctx.RequireInput(0));
    const DataType dt = x->dtype();
    if (dt != DataType::kFloat && dt != DataType::kDouble && dt != DataType::kFloat16)
      return ctx.Invalid(std::string("X must be float, double or float16, got ") + DataTypeName(dt));
    if (x->rank() != 2) return ctx.Invalid("X must be 2-D [N, F], got shape " + ShapeToString(x->shape()));
    const int64_t n = x->dim(0), f = x->dim(1);
    if (max_feature_ >= f)
      return ctx.Invalid("the trees read feature " + std::to_string(max_feature_) + " but X has only " + std::to_string(f) + " features");
    IL_ASSIGN_OR_RETURN(Tensor xd, CastTensor(*x, DataType::kDouble));
    const double* xs = xd.data<double>();
    IL_ASSIGN_OR_RETURN(Tensor rd, ctx.Allocate(DataType::kDouble, {n, n_targets_}));
    double* res = rd.data<double>();
    std::vector<uint8_t> seen(static_cast<size_t>(n_targets_));
    for (int64_t r = 0; r < n; ++r) {
      const double* row = xs + r * f;
      double* out = res + r * n_targets_;
      std::fill(seen.begin(), seen.end(), 0);
      for (int64_t root : roots_) {
        const int64_t leaf = Walk(root, row);
        const int64_t t = leaf_targets_[leaf];
        const double w = leaf_weights_[leaf];
        switch (agg_) {
          case 0: case 1: out[t] += w; break;
          case 2: out[t] = seen[t] ? std::min(out[t], w) : w; break;
          case 3: out[t] = seen[t] ? std::max(out[t], w) : w; break;
        }
        seen[t] = 1;
      }
      if (agg_ == 0 && !roots_.empty())
        for (int64_t t = 0; t < n_targets_; ++t) out[t] /= static_cast<double>(roots_.size());
      PostTransform(out);
    }
    IL_ASSIGN_OR_RETURN(Tensor out, CastTensor(rd, dt));
    ctx.SetOutput(0, std::move(out));
    return Status::Ok();
  }

 private:
  bool Test(const TreeNode& nd, double v) const {
    if (std::isnan(v) && nd.missing_true) return true;
    switch (nd.mode) {
      case Mode::kLeq: return v <= nd.split;
      case Mode::kLt: return v < nd.split;
      case Mode::kGte: return v >= nd.split;
      case Mode::kGt: return v > nd.split;
      case Mode::kEq: return v == nd.split;
      case Mode::kNeq: return v != nd.split;
      case Mode::kMember: return !std::isnan(v) && std::binary_search(nd.members.begin(), nd.members.end(), v);
    }
    return false;
  }

  // Leaf index reached from `node`. Validation at creation guarantees termination.
  int64_t Walk(int64_t node, const double* row) const {
    for (;;) {
      const TreeNode& nd = nodes_[node];
      const int b = Test(nd, row[nd.feature]) ? 1 : 0;
      if (nd.child_leaf[b]) return nd.child[b];
      node = nd.child[b];
    }
  }

  void PostTransform(double* v) const {
    const int64_t k = n_targets_;
    switch (post_) {
      case 1: case 3: {  // SOFTMAX, SOFTMAX_ZERO (zeros stay zero)
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t t = 0; t < k; ++t)
          if (post_ == 1 || v[t] != 0) mx = std::max(mx, v[t]);
        double sum = 0;
        for (int64_t t = 0; t < k; ++t) {
          if (post_ == 3 && v[t] == 0) continue;
          v[t] = std::exp(v[t] - mx);
          sum += v[t];
        }
        if (sum > 0)
          for (int64_t t = 0; t < k; ++t) v[t] /= sum;
        break;
      }
      case 2:
        for (int64_t t = 0; t < k; ++t) v[t] = 1.0 / (1.0 + std::exp(-v[t]));
        break;
      case 4:
        for (int64_t t = 0; t < k; ++t) v[t] = std::sqrt(2.0) * ErfInv(2.0 * v[t] - 1.0);
        break;
      default: break;
    }
  }

  std::vector<TreeNode> nodes_;
  std::vector<int64_t> roots_, leaf_targets_;
  std::vector<double> leaf_weights_;
  int64_t n_targets_;
  int agg_, post_;
  int64_t max_feature_ = -1;
};

Result<std::vector<double>> TensorAttrAsDoubles(const KernelInfo& info, const char* name, bool required) {
  const Tensor* t = info.GetTensor(name);
  if (!t) {
    if (required) return info.Invalid(std::string("attribute '") + name + "' is required");
    return std::vector<double>{};
  }
  auto d = CastTensor(*t, DataType::kDouble);
  if (!d.ok()) return info.Invalid(std::string("attribute '") + name + "': " + d.status().message());
  return std::vector<double>(d->data<double>(), d->data<double>() + d->size());
}

Result<std::unique_ptr<Kernel>> MakeTreeEnsemble(const KernelInfo& info) {
  const auto featureids = info.GetInts("nodes_featureids");
  const auto truenodeids = info.GetInts("nodes_truenodeids");
  const auto falsenodeids = info.GetInts("nodes_falsenodeids");
  const auto trueleafs = info.GetInts("nodes_trueleafs");
  const auto falseleafs = info.GetInts("nodes_falseleafs");
  const auto missing = info.GetInts("nodes_missing_value_tracks_true");
  const auto leaf_targets = info.GetInts("leaf_targetids");
  const auto roots = info.GetInts("tree_roots");
  IL_ASSIGN_OR_RETURN(std::vector<double> modes_d, TensorAttrAsDoubles(info, "nodes_modes", true));
  IL_ASSIGN_OR_RETURN(std::vector<double> splits, TensorAttrAsDoubles(info, "nodes_splits", true));
  IL_ASSIGN_OR_RETURN(std::vector<double> weights, TensorAttrAsDoubles(info, "leaf_weights", true));
  IL_ASSIGN_OR_RETURN(std::vector<double> members, TensorAttrAsDoubles(info, "membership_values", false));
  int64_t n_targets = info.GetInt("n_targets", 0);
  if (!info.has_attr("n_targets"))  // optional: enough targets for every leaf
    for (int64_t t : leaf_targets) n_targets = std::max(n_targets, t + 1);
  const int64_t agg = info.GetInt("aggregate_function", 1);
  const int64_t post = info.GetInt("post_transform", 0);
  if (n_targets < 1) return info.Invalid("n_targets must be positive, got " + std::to_string(n_targets));
  if (agg < 0 || agg > 3) return info.Invalid("aggregate_function must be 0..3 (AVERAGE, SUM, MIN, MAX), got " + std::to_string(agg));
  if (post < 0 || post > 4) return info.Invalid("post_transform must be 0..4, got " + std::to_string(post));

  const size_t nn = featureids.size();
  auto check = [&](const char* name, size_t sz) -> Status {
    if (sz != nn)
      return info.Invalid(std::string(name) + " has " + std::to_string(sz) + " entries, nodes_featureids has " + std::to_string(nn));
    return Status::Ok();
  };
  IL_RETURN_IF_ERROR(check("nodes_truenodeids", truenodeids.size()));
  IL_RETURN_IF_ERROR(check("nodes_falsenodeids", falsenodeids.size()));
  IL_RETURN_IF_ERROR(check("nodes_trueleafs", trueleafs.size()));
  IL_RETURN_IF_ERROR(check("nodes_falseleafs", falseleafs.size()));
  IL_RETURN_IF_ERROR(check("nodes_modes", modes_d.size()));
  IL_RETURN_IF_ERROR(check("nodes_splits", splits.size()));
  if (!missing.empty()) IL_RETURN_IF_ERROR(check("nodes_missing_value_tracks_true", missing.size()));
  const size_t nl = weights.size();
  if (leaf_targets.size() != nl)
    return info.Invalid("leaf_targetids has " + std::to_string(leaf_targets.size()) + " entries, leaf_weights has " + std::to_string(nl));
  for (size_t i = 0; i < nl; ++i)
    if (leaf_targets[i] < 0 || leaf_targets[i] >= n_targets)
      return info.Invalid("leaf_targetids[" + std::to_string(i) + "] = " + std::to_string(leaf_targets[i]) + " is outside [0, " +
                          std::to_string(n_targets) + ")");

  std::vector<TreeNode> nodes(nn);
  size_t member_pos = 0;
  for (size_t i = 0; i < nn; ++i) {
    TreeNode& nd = nodes[i];
    const double m = modes_d[i];
    if (!(m >= 0 && m <= 6)) return info.Invalid("nodes_modes[" + std::to_string(i) + "] must be 0..6");
    nd.mode = static_cast<Mode>(static_cast<int>(m));
    nd.feature = featureids[i];
    if (nd.feature < 0) return info.Invalid("nodes_featureids[" + std::to_string(i) + "] is negative");
    nd.split = splits[i];
    nd.missing_true = !missing.empty() && missing[i] != 0;
    const int64_t ids[2] = {falsenodeids[i], truenodeids[i]};
    const int64_t leafs[2] = {falseleafs[i], trueleafs[i]};
    for (int b = 0; b < 2; ++b) {
      nd.child[b] = ids[b];
      nd.child_leaf[b] = leafs[b] != 0;
      const size_t limit = nd.child_leaf[b] ? nl : nn;
      if (ids[b] < 0 || static_cast<size_t>(ids[b]) >= limit)
        return info.Invalid(std::string(b ? "nodes_truenodeids[" : "nodes_falsenodeids[") + std::to_string(i) + "] = " +
                            std::to_string(ids[b]) + " is out of range for " + (nd.child_leaf[b] ? "leaves" : "nodes"));
    }
    if (nd.mode == Mode::kMember) {
      if (member_pos >= members.size())
        return info.Invalid("membership_values has no set for BRANCH_MEMBER node " + std::to_string(i));
      while (member_pos < members.size() && !std::isnan(members[member_pos])) nd.members.push_back(members[member_pos++]);
      ++member_pos;  // the NaN delimiter
      std::sort(nd.members.begin(), nd.members.end());
    }
  }
  // Every tree must be acyclic: walk from each root, depth-first, with on-stack marking.
  std::vector<uint8_t> state(nn, 0);  // 0 new, 1 on stack, 2 done
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i] < 0 || static_cast<size_t>(roots[i]) >= nn)
      return info.Invalid("tree_roots[" + std::to_string(i) + "] = " + std::to_string(roots[i]) + " is out of range");
    std::vector<std::pair<int64_t, int>> stack{{roots[i], 0}};
    while (!stack.empty()) {
      auto& [node, b] = stack.back();
      if (b == 0) {
        if (state[node] == 2) { stack.pop_back(); continue; }
        state[node] = 1;
      }
      if (b == 2) {
        state[node] = 2;
        stack.pop_back();
        continue;
      }
      const TreeNode& nd = nodes[node];
      const int cb = b++;
      if (nd.child_leaf[cb]) continue;
      const int64_t c = nd.child[cb];
      if (state[c] == 1) return info.Invalid("the tree rooted at node " + std::to_string(roots[i]) + " has a cycle through node " + std::to_string(c));
      if (state[c] == 0) stack.push_back({c, 0});
    }
  }
  return std::unique_ptr<Kernel>(new TreeEnsembleKernel(std::move(nodes), roots, leaf_targets, std::move(weights), n_targets,
                                                        static_cast<int>(agg), static_cast<int>(post)));
}

}  // namespace

void RegisterMlKernels(KernelRegistry& r) {
  r.Register(kMl, "ArrayFeatureExtractor", 1, [](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return MakeKernel(ArrayFeatureExtractor);
  });
  r.Register(kMl, "Binarizer", 1, [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    const float th = info.GetFloat("threshold", 0.0f);
    return MakeKernel([th](KernelContext& ctx) { return Binarizer(ctx, th); });
  });
  r.Register(kMl, "LabelEncoder", 1, MakeLabelEncoder);
  r.Register(kMl, "TreeEnsemble", 5, MakeTreeEnsemble);
}

}  // namespace inferloop
