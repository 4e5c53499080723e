#include "tools/conformance.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "base/file_bytes.h"
#include "base/status_macros.h"
#include "compute/tensor_cast.h"
#include "graph/tensor_file.h"
#include "graph/tensor_proto.h"
#include "inferloop/session.h"
#include "onnx.pb.h"

namespace fs = std::filesystem;

namespace inferloop {
namespace {

bool IsFloatLike(DataType t) {
  switch (t) {
    case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ: case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: case DataType::kFloat4E2M1: case DataType::kFloat8E8M0:
    case DataType::kComplex64: case DataType::kComplex128:
      return true;
    default: return false;
  }
}

std::string Fmt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// Empty string when equal within tolerance, else a description of the first mismatch.
std::string CompareTensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + DataTypeName(got.dtype()) + ", expected " + DataTypeName(want.dtype());
  if (got.shape() != want.shape()) return "shape " + ShapeToString(got.shape()) + ", expected " + ShapeToString(want.shape());
  const int64_t n = want.size();
  if (want.dtype() == DataType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (got.strings()[i] != want.strings()[i])
        return "element " + std::to_string(i) + " is '" + got.strings()[i] + "', expected '" + want.strings()[i] + "'";
    return "";
  }
  if (IsFloatLike(want.dtype())) {
    Tensor g = got, w = want;
    int64_t m = n;
    if (want.dtype() == DataType::kComplex64 || want.dtype() == DataType::kComplex128) {
      DataType real = want.dtype() == DataType::kComplex64 ? DataType::kFloat : DataType::kDouble;
      g = Tensor::FromBytes(real, {2 * n}, got.raw_data(), got.nbytes()).value();
      w = Tensor::FromBytes(real, {2 * n}, want.raw_data(), want.nbytes()).value();
      m = 2 * n;
    }
    auto gd = CastTensor(g, DataType::kDouble), wd = CastTensor(w, DataType::kDouble);
    if (!gd.ok() || !wd.ok()) return "cannot compare values";
    const double* a = gd->data<double>();
    const double* e = wd->data<double>();
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < m; ++i) {
      bool ok;
      if (std::isnan(e[i])) ok = std::isnan(a[i]);
      else if (std::isinf(e[i])) ok = a[i] == e[i];
      else ok = std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
      if (!ok) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad)
      return std::to_string(bad) + " of " + std::to_string(m) + " values differ; first at " + std::to_string(first) + ": got " +
             Fmt(a[first]) + ", expected " + Fmt(e[first]) + " (rtol " + Fmt(rtol) + ", atol " + Fmt(atol) + ")";
    return "";
  }
  if (got.nbytes() != want.nbytes()) return "byte size differs";
  const size_t es = DataTypeSize(want.dtype());
  const auto* a = static_cast<const uint8_t*>(got.raw_data());
  const auto* e = static_cast<const uint8_t*>(want.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i * es, e + i * es, es) != 0) {
      auto ga = CastTensor(got, DataType::kDouble), wa = CastTensor(want, DataType::kDouble);
      std::string gs = ga.ok() ? Fmt(ga->data<double>()[i]) : "?", ws = wa.ok() ? Fmt(wa->data<double>()[i]) : "?";
      int64_t bad = 0;
      for (int64_t j = 0; j < n; ++j) bad += std::memcmp(a + j * es, e + j * es, es) != 0;
      return std::to_string(bad) + " of " + std::to_string(n) + " values differ; first at " + std::to_string(i) + ": got " + gs +
             ", expected " + ws;
    }
  }
  return "";
}

std::string CompareValues(const Value& got, const Value& want, double rtol, double atol) {
  if (want.is_none()) return got.is_none() ? "" : "got " + got.DebugString() + ", expected an empty optional";
  if (want.is_tensor()) {
    if (!got.is_tensor()) return "got " + got.DebugString() + ", expected a tensor";
    return CompareTensors(got.tensor(), want.tensor(), rtol, atol);
  }
  if (!got.is_sequence()) return "got " + got.DebugString() + ", expected a sequence";
  if (got.sequence().size() != want.sequence().size())
    return "sequence of " + std::to_string(got.sequence().size()) + " elements, expected " + std::to_string(want.sequence().size());
  for (size_t i = 0; i < want.sequence().size(); ++i) {
    std::string d = CompareTensors(got.sequence()[i], want.sequence()[i], rtol, atol);
    if (!d.empty()) return "sequence element " + std::to_string(i) + ": " + d;
  }
  return "";
}

Result<Value> ReadValueFile(const std::string& path, ValueInfo::Kind kind) {
  if (kind != ValueInfo::Kind::kSequence && kind != ValueInfo::Kind::kOptional) {
    IL_ASSIGN_OR_RETURN(Tensor t, LoadTensorFile(path));
    return Value(std::move(t));
  }
  IL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  const std::string dir = fs::path(path).parent_path().string();
  if (kind == ValueInfo::Kind::kSequence) {
    onnxpb::SequenceProto sp;
    if (!sp.ParseFromString(bytes)) return Status::InvalidArgument("cannot parse SequenceProto " + path);
    return ValueFromSequenceProto(sp, dir);
  }
  onnxpb::OptionalProto op;
  if (!op.ParseFromString(bytes)) return Status::InvalidArgument("cannot parse OptionalProto " + path);
  return ValueFromOptionalProto(op, dir);
}

std::vector<std::string> SortedEntries(const std::string& dir, const std::string& prefix, bool dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.is_directory() == dirs) out.push_back(e.path().string());
  }
  // Natural order on the trailing number: input_2 before input_10.
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    auto num = [](const std::string& s) {
      size_t end = s.find_last_of("0123456789");
      if (end == std::string::npos) return -1L;
      size_t start = end;
      while (start > 0 && std::isdigit(static_cast<unsigned char>(s[start - 1]))) --start;
      return std::stol(s.substr(start, end - start + 1));
    };
    long na = num(a), nb = num(b);
    return na != nb ? na < nb : a < b;
  });
  return out;
}

}  // namespace

Result<std::map<std::string, CaseOverride>> ParseExclusions(const std::string& text) {
  std::map<std::string, CaseOverride> out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::string body = line, reason;
    size_t hash = line.find('#');
    if (hash != std::string::npos) {
      body = line.substr(0, hash);
      reason = line.substr(hash + 1);
    }
    std::istringstream ls(body);
    std::string name, tok;
    if (!(ls >> name)) continue;
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    reason = trim(reason);
    const std::string where = "exclusions line " + std::to_string(lineno) + " (" + name + ")";
    if (reason.empty()) return Status::InvalidArgument(where + ": every entry needs a reason after '#'");
    CaseOverride o;
    o.reason = reason;
    bool any = false;
    while (ls >> tok) {
      any = true;
      if (tok == "skip") { o.skip = true; continue; }
      size_t eq = tok.find('=');
      if (eq == std::string::npos) return Status::InvalidArgument(where + ": unknown token '" + tok + "'");
      std::string key = tok.substr(0, eq);
      double v;
      try { v = std::stod(tok.substr(eq + 1)); } catch (...) { return Status::InvalidArgument(where + ": bad number in '" + tok + "'"); }
      if (key == "rtol") o.rtol = v;
      else if (key == "atol") o.atol = v;
      else return Status::InvalidArgument(where + ": unknown key '" + key + "'");
    }
    if (!any) return Status::InvalidArgument(where + ": say 'skip' or give rtol=/atol=");
    if (out.count(name)) return Status::InvalidArgument(where + ": listed twice");
    out[name] = o;
  }
  return out;
}

bool IsConformanceCase(const std::string& dir) { return fs::exists(fs::path(dir) / "model.onnx"); }

CaseResult RunConformanceCase(const std::string& dir, const ConformanceOptions& opts) {
  CaseResult res;
  res.name = fs::path(dir).filename().string();
  if (res.name.empty()) res.name = fs::path(dir).parent_path().filename().string();
  double rtol = opts.rtol, atol = opts.atol;
  auto ov = opts.overrides.find(res.name);
  if (ov != opts.overrides.end()) {
    if (ov->second.skip) {
      res.outcome = CaseResult::Outcome::kSkip;
      res.reason = ov->second.reason;
      return res;
    }
    if (ov->second.rtol >= 0) rtol = ov->second.rtol;
    if (ov->second.atol >= 0) atol = ov->second.atol;
  }
  auto fail = [&res](std::string why) {
    res.outcome = CaseResult::Outcome::kFail;
    res.reason = std::move(why);
    return res;
  };
  auto session = Session::CreateFromFile((fs::path(dir) / "model.onnx").string());
  if (!session.ok()) return fail(session.status().ToString());
  const auto& ins = (*session)->inputs();
  const auto& outs = (*session)->outputs();
  auto sets = SortedEntries(dir, "test_data_set_", true);
  if (sets.empty()) return fail("no test_data_set_* folders");
  for (const auto& set : sets) {
    const std::string set_name = fs::path(set).filename().string();
    auto in_files = SortedEntries(set, "input_", false);
    auto out_files = SortedEntries(set, "output_", false);
    if (in_files.size() > ins.size())
      return fail(set_name + ": " + std::to_string(in_files.size()) + " input files but the model has " + std::to_string(ins.size()) + " inputs");
    std::vector<NamedValue> feeds;
    for (size_t i = 0; i < in_files.size(); ++i) {
      auto v = ReadValueFile(in_files[i], ins[i].kind);
      if (!v.ok()) return fail(set_name + ": " + v.status().ToString());
      feeds.emplace_back(ins[i].name, std::move(v).value());
    }
    auto result = (*session)->Run(feeds);
    if (!result.ok()) return fail(set_name + ": " + result.status().ToString());
    if (out_files.size() != result->size())
      return fail(set_name + ": model produced " + std::to_string(result->size()) + " outputs, test expects " + std::to_string(out_files.size()));
    for (size_t k = 0; k < out_files.size(); ++k) {
      auto want = ReadValueFile(out_files[k], outs[k].kind);
      if (!want.ok()) return fail(set_name + ": " + want.status().ToString());
      std::string diff = CompareValues((*result)[k].second, *want, rtol, atol);
      if (!diff.empty()) return fail(set_name + " output '" + outs[k].name + "': " + diff);
    }
  }
  return res;
}

std::vector<CaseResult> RunConformance(const std::vector<std::string>& paths, const ConformanceOptions& opts) {
  std::vector<CaseResult> results;
  for (const auto& p : paths) {
    if (IsConformanceCase(p)) {
      results.push_back(RunConformanceCase(p, opts));
      continue;
    }
    std::vector<std::string> cases;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(p, ec))
      if (e.is_directory() && IsConformanceCase(e.path().string())) cases.push_back(e.path().string());
    if (ec || cases.empty()) {
      CaseResult r;
      r.name = p;
      r.outcome = CaseResult::Outcome::kFail;
      r.reason = ec ? "cannot read folder: " + ec.message() : "no test cases (folders with model.onnx) found";
      results.push_back(r);
      continue;
    }
    std::sort(cases.begin(), cases.end());
    for (const auto& c : cases) results.push_back(RunConformanceCase(c, opts));
  }
  return results;
}

}  // namespace inferloop
