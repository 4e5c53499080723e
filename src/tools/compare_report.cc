#include "tools/compare_report.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "base/json_string.h"

namespace inferloop {

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
