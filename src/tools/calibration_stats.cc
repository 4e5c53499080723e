#include "tools/calibration_stats.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstdio>
#include <fstream>

#include "base/c_locale_number.h"
#include "base/file_bytes.h"
#include "base/json_string.h"
#include "base/status_macros.h"
#include "compute/tensor_cast.h"
#include "tools/model_compare.h"
#include "tools/progress_bar.h"

namespace inferloop {

std::string HashHex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

Status AddTensor(CalibrationStats& s, const std::string& name, const Tensor& t) {
  if (t.dtype() == DataType::kFloat) {
    s.tensors[name].Add(t.data<float>(), t.size());
    return Status::Ok();
  }
  if (t.dtype() != DataType::kDouble && t.dtype() != DataType::kFloat16 && t.dtype() != DataType::kBFloat16)
    return Status::Ok();  // integer / bool tensors are never quantized
  IL_ASSIGN_OR_RETURN(Tensor f, CastTensor(t, DataType::kFloat));
  s.tensors[name].Add(f.data<float>(), f.size());
  return Status::Ok();
}

std::string Num(double v) {
  return FormatGeneralC(v, 17);
}

}  // namespace

Result<CalibrationStats> CollectCalibrationStats(const std::string& model_path, const QuantDataSet& data, bool progress) {
  CalibrationStats s;
  IL_ASSIGN_OR_RETURN(s.model_hash, FileHash(model_path));
  s.data_hash = HashHex(data.fingerprint);
  s.rows = data.rows;
  IL_ASSIGN_OR_RETURN(auto model, CapturingModel::Load(model_path));
  ProgressBar bar("calibrating", static_cast<int64_t>(data.chunks.size()), progress);
  for (size_t i = 0; i < data.chunks.size(); ++i) {
    const Sample& chunk = data.chunks[i];
    for (const ValueInfo& vi : model->inputs())
      for (const auto& [name, v] : chunk)
        if (name == vi.name && v.is_tensor()) IL_RETURN_IF_ERROR(AddTensor(s, name, v.tensor()));
    auto out = model->Run(chunk);
    if (!out.ok()) return out.status().WithContext(data.dir + ", chunk " + std::to_string(i));
    for (const auto& [name, t] : *out) IL_RETURN_IF_ERROR(AddTensor(s, name, t));
    bar.Update(static_cast<int64_t>(i + 1));
  }
  bar.Finish();
  return s;
}

std::string CalibrationStatsToJson(const CalibrationStats& s) {
  std::string o = "{\"format\": \"inferloop-calibration-stats\", \"version\": 1, \"model_hash\": ";
  AppendJsonString(o, s.model_hash);
  o += ", \"data_hash\": ";
  AppendJsonString(o, s.data_hash);
  o += ", \"rows\": " + std::to_string(s.rows) + ",\n\"tensors\": {";
  bool first = true;
  for (const auto& [name, h] : s.tensors) {
    o += first ? "\n" : ",\n";
    first = false;
    AppendJsonString(o, name);
    o += ": {\"count\": " + std::to_string(h.count()) + ", \"min\": " + Num(h.min()) + ", \"max\": " + Num(h.max()) +
         ", \"range\": " + Num(h.range()) + ", \"histogram\": [";
    const auto& b = h.bins();
    for (size_t i = 0; i < static_cast<size_t>(kHistogramBins); ++i) {
      if (i) o += ",";
      o += b.empty() ? "0" : Num(b[i]);
    }
    o += "]}";
  }
  o += "\n}}\n";
  return o;
}

Result<CalibrationStats> CalibrationStatsFromJson(const std::string& json) {
  rapidjson::Document d;
  d.Parse<rapidjson::kParseFullPrecisionFlag>(json.c_str(), json.size());
  if (d.HasParseError())
    return Status::InvalidArgument(std::string("not JSON: ") + rapidjson::GetParseError_En(d.GetParseError()) +
                                   " at offset " + std::to_string(d.GetErrorOffset()));
  auto bad = [](const std::string& what) { return Status::InvalidArgument("not a calibration statistics file: " + what); };
  if (!d.IsObject() || !d.HasMember("format") || !d["format"].IsString() ||
      std::string(d["format"].GetString()) != "inferloop-calibration-stats")
    return bad("no \"format\": \"inferloop-calibration-stats\"");
  if (!d.HasMember("version") || !d["version"].IsInt() || d["version"].GetInt() != 1) return bad("unsupported version");
  CalibrationStats s;
  if (!d.HasMember("model_hash") || !d["model_hash"].IsString()) return bad("model_hash missing");
  s.model_hash = d["model_hash"].GetString();
  if (d.HasMember("data_hash") && d["data_hash"].IsString()) s.data_hash = d["data_hash"].GetString();
  if (d.HasMember("rows") && d["rows"].IsInt64()) s.rows = d["rows"].GetInt64();
  if (!d.HasMember("tensors") || !d["tensors"].IsObject()) return bad("tensors missing");
  for (auto it = d["tensors"].MemberBegin(); it != d["tensors"].MemberEnd(); ++it) {
    const std::string name = it->name.GetString();
    const auto& t = it->value;
    auto num = [&](const char* k) -> Result<double> {
      if (!t.IsObject() || !t.HasMember(k) || !t[k].IsNumber()) return bad("tensor '" + name + "' lacks \"" + k + "\"");
      return t[k].GetDouble();
    };
    IL_ASSIGN_OR_RETURN(double count, num("count"));
    IL_ASSIGN_OR_RETURN(double mn, num("min"));
    IL_ASSIGN_OR_RETURN(double mx, num("max"));
    IL_ASSIGN_OR_RETURN(double range, num("range"));
    if (!t.HasMember("histogram") || !t["histogram"].IsArray()) return bad("tensor '" + name + "' lacks \"histogram\"");
    std::vector<double> bins;
    for (const auto& v : t["histogram"].GetArray()) {
      if (!v.IsNumber()) return bad("tensor '" + name + "': histogram holds a non-number");
      bins.push_back(v.GetDouble());
    }
    auto h = TensorHistogram::FromParts(static_cast<int64_t>(count), mn, mx, range, std::move(bins));
    if (!h.ok()) return h.status().WithContext("tensor '" + name + "'");
    s.tensors.emplace(name, std::move(h).value());
  }
  return s;
}

Status SaveCalibrationStats(const CalibrationStats& s, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << CalibrationStatsToJson(s);
  f.close();
  if (!f.good()) return Status::Unavailable("cannot write calibration statistics '" + path + "'");
  return Status::Ok();
}

Result<CalibrationStats> LoadCalibrationStats(const std::string& path) {
  IL_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  auto s = CalibrationStatsFromJson(text);
  if (!s.ok()) return s.status().WithContext(path);
  return s;
}

}  // namespace inferloop
