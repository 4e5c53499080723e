#include "backends/lesion_report/lesion_report_backend.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "backends/processing/ensemble_trace.h"
#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/c_locale_number.h"
#include "base/status_macros.h"
#include "imaging/connected_components.h"
#include "imaging/image_codec.h"
#include "imaging/overlay.h"

namespace inferloop::backends {
namespace {

constexpr int kFindingColumns = 13;

struct LesionReportOptions {
  imaging::ComponentOptions components;
  double min_volume_mm3 = 0;
  float window_center = 40, window_width = 400;
};

// One request's inputs, checked.
struct LesionInputs {
  const Tensor* probability = nullptr;
  const Tensor* volume = nullptr;  // may be null
  const Tensor* trace = nullptr;   // may be null
  std::array<double, 3> spacing{};
  std::array<int64_t, 3> shape{};  // Z, Y, X
};

struct Finding {
  imaging::Component c;
  double mean_hu = std::numeric_limits<double>::quiet_NaN();
};

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// Numbers at float precision (the inputs are float); NaN and infinities as null.
void Number(JsonWriter& w, double v) {
  if (!std::isfinite(v)) {
    w.Null();
    return;
  }
  const std::string text = FormatGeneralC(v, 7);  // '.' whatever the host's locale
  w.RawValue(text.data(), text.size(), rapidjson::kNumberType);
}

template <typename T>
void Triple(JsonWriter& w, const std::array<T, 3>& v) {
  w.StartArray();
  for (T x : v) Number(w, static_cast<double>(x));
  w.EndArray();
}

Result<LesionInputs> ReadInputs(const serve::InferRequest& request) {
  LesionInputs in;
  const Tensor* spacing = nullptr;
  for (const auto& i : request.inputs) {
    if (i.name == "probability") in.probability = &i.tensor;
    if (i.name == "volume") in.volume = &i.tensor;
    if (i.name == "trace") in.trace = &i.tensor;
    if (i.name == "spacing") spacing = &i.tensor;
  }
  if (in.probability == nullptr || spacing == nullptr)
    return Status::InvalidArgument("inputs 'probability' and 'spacing' are required");
  const Tensor& p = *in.probability;
  if (p.dtype() != DataType::kFloat || p.rank() != 4 || p.dim(0) != 1 || p.size() == 0)
    return Status::InvalidArgument("input 'probability' must be FP32 [1, Z, Y, X] with Z, Y, X >= 1");
  in.shape = {p.dim(1), p.dim(2), p.dim(3)};
  if (in.volume && (in.volume->dtype() != DataType::kFloat || in.volume->shape() != p.shape()))
    return Status::InvalidArgument("input 'volume' is " + ShapeToString(in.volume->shape()) +
                                   ", not FP32 of the probability's shape " + ShapeToString(p.shape()));
  if (spacing->dtype() != DataType::kFloat || spacing->size() != 3)
    return Status::InvalidArgument("input 'spacing' must be FP32 [3] (z, y, x mm)");
  for (int a = 0; a < 3; ++a) {
    in.spacing[a] = spacing->data<float>()[a];
    if (!std::isfinite(in.spacing[a]) || in.spacing[a] <= 0)
      return Status::InvalidArgument("input 'spacing' must be three positive numbers (z, y, x mm), not " +
                                     std::to_string(in.spacing[a]) + " at " + std::to_string(a));
  }
  if (in.trace && (in.trace->dtype() != DataType::kString || in.trace->size() != 1))
    return Status::InvalidArgument("input 'trace' must be BYTES [1] (the ensemble's inferloop.trace)");
  return in;
}

// The components over the size limit, largest first, with their mean HU.
std::vector<Finding> Findings(const LesionInputs& in, const imaging::ComponentLabels& labels, double min_volume_mm3) {
  std::vector<Finding> out;
  std::vector<int64_t> index(static_cast<size_t>(labels.label_count) + 1, -1);
  for (const auto& c : labels.components) {
    if (c.volume_mm3 < min_volume_mm3) continue;
    index[static_cast<size_t>(c.label)] = static_cast<int64_t>(out.size());
    out.push_back({c});
  }
  if (in.volume) {
    std::vector<double> sum(out.size(), 0.0);
    const float* hu = in.volume->data<float>();
    for (size_t v = 0; v < labels.labels.size(); ++v) {
      const int64_t k = index[static_cast<size_t>(labels.labels[v])];
      if (labels.labels[v] > 0 && k >= 0) sum[static_cast<size_t>(k)] += hu[v];
    }
    for (size_t k = 0; k < out.size(); ++k) out[k].mean_hu = sum[k] / static_cast<double>(out[k].c.voxel_count);
  }
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    return a.c.voxel_count != b.c.voxel_count ? a.c.voxel_count > b.c.voxel_count : a.c.label < b.c.label;
  });
  return out;
}

Result<Tensor> FindingsTensor(const std::vector<Finding>& findings) {
  IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DataType::kFloat, {static_cast<int64_t>(findings.size()), kFindingColumns}));
  float* row = t.data<float>();
  for (const Finding& f : findings) {
    const imaging::Component& c = f.c;
    const double values[kFindingColumns] = {c.volume_mm3,     static_cast<double>(c.voxel_count),
                                            c.centroid_mm[0], c.centroid_mm[1],
                                            c.centroid_mm[2], static_cast<double>(c.bbox_min[0]),
                                            static_cast<double>(c.bbox_min[1]), static_cast<double>(c.bbox_min[2]),
                                            static_cast<double>(c.bbox_max[0]), static_cast<double>(c.bbox_max[1]),
                                            static_cast<double>(c.bbox_max[2]), c.max_value,
                                            f.mean_hu};
    for (double v : values) *row++ = static_cast<float>(v);
  }
  return t;
}

// The axial slice the overlay shows: through the largest finding's centroid, else the middle.
int64_t OverlaySlice(const LesionInputs& in, const std::vector<Finding>& findings) {
  if (findings.empty()) return in.shape[0] / 2;
  const double z = std::round(findings.front().c.centroid_mm[0] / in.spacing[0]);
  return std::clamp<int64_t>(static_cast<int64_t>(z), 0, in.shape[0] - 1);
}

Status WriteStages(JsonWriter& w, const Tensor& trace) {
  IL_ASSIGN_OR_RETURN(std::string steps, TraceStepsJson(trace.strings()[0], "trace"));
  w.Key("stages");
  w.RawValue(steps.data(), steps.size(), rapidjson::kArrayType);
  return Status::Ok();
}

Result<std::string> ReportJson(const LesionInputs& in, const std::vector<Finding>& findings,
                               const LesionReportOptions& o) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("findings");
  w.StartArray();
  for (size_t k = 0; k < findings.size(); ++k) {
    const imaging::Component& c = findings[k].c;
    w.StartObject();
    w.Key("id");
    w.Int64(static_cast<int64_t>(k + 1));
    w.Key("volume_mm3");
    Number(w, c.volume_mm3);
    w.Key("voxels");
    w.Int64(c.voxel_count);
    w.Key("centroid_mm");
    Triple(w, c.centroid_mm);
    w.Key("bbox");
    w.StartObject();
    w.Key("min");
    Triple(w, c.bbox_min);
    w.Key("max");
    Triple(w, c.bbox_max);
    w.EndObject();
    w.Key("max_prob");
    Number(w, c.max_value);
    w.Key("mean_hu");
    Number(w, findings[k].mean_hu);
    w.EndObject();
  }
  w.EndArray();
  w.Key("threshold");
  Number(w, o.components.threshold);
  w.Key("connectivity");
  w.Int(o.components.connectivity == imaging::Connectivity::k6 ? 6 : 26);
  w.Key("min_volume_mm3");
  Number(w, o.min_volume_mm3);
  w.Key("spacing_mm");
  Triple(w, in.spacing);
  w.Key("shape");
  Triple(w, in.shape);
  w.Key("overlay_slice");
  w.Int64(OverlaySlice(in, findings));
  if (in.trace) IL_RETURN_IF_ERROR(WriteStages(w, *in.trace));
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

Result<std::string> OverlayPng(const LesionInputs& in, const imaging::ComponentLabels& labels,
                               const std::vector<Finding>& findings, const LesionReportOptions& o) {
  const int64_t z = OverlaySlice(in, findings);
  const int height = static_cast<int>(in.shape[1]), width = static_cast<int>(in.shape[2]);
  const size_t plane = static_cast<size_t>(height) * static_cast<size_t>(width);
  const size_t first = static_cast<size_t>(z) * plane;
  const float* source = (in.volume ? in.volume : in.probability)->data<float>() + first;
  const float center = in.volume ? o.window_center : 0.5f, window = in.volume ? o.window_width : 1.0f;
  IL_ASSIGN_OR_RETURN(imaging::Image gray, imaging::WindowToGray({source, plane}, height, width, center, window));
  std::vector<uint8_t> mask(plane, 0);
  if (!findings.empty()) {
    const int32_t label = findings.front().c.label;
    for (size_t i = 0; i < plane; ++i) mask[i] = labels.labels[first + i] == label ? 1 : 0;
  }
  IL_ASSIGN_OR_RETURN(imaging::Image picture, imaging::OverlayMaskOutline(gray, mask, {255, 0, 0}));
  return imaging::EncodePng(picture);
}

class LesionReportProcessor final : public Processor {
 public:
  LesionReportProcessor(LesionReportOptions o, std::vector<std::string> outputs)
      : o_(o), outputs_(std::move(outputs)) {}

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    IL_ASSIGN_OR_RETURN(LesionInputs in, ReadInputs(request));
    imaging::ComponentOptions co = o_.components;
    co.spacing_mm = in.spacing;
    const Tensor& p = *in.probability;
    IL_ASSIGN_OR_RETURN(imaging::ComponentLabels labels,
                        imaging::LabelComponents({p.data<float>(), static_cast<size_t>(p.size())}, in.shape, co));
    const std::vector<Finding> findings = Findings(in, labels, o_.min_volume_mm3);
    std::vector<serve::InferOutput> outs;
    for (const std::string& name : outputs_) {
      bool wanted = request.outputs.empty();
      for (const auto& r : request.outputs) wanted |= r.name == name;
      if (!wanted) continue;
      if (name == "findings") {
        IL_ASSIGN_OR_RETURN(Tensor t, FindingsTensor(findings));
        outs.push_back({name, std::move(t), {}});
      } else {
        IL_ASSIGN_OR_RETURN(std::string bytes, name == "report" ? ReportJson(in, findings, o_)
                                                                : OverlayPng(in, labels, findings, o_));
        outs.push_back({name, Tensor::FromStrings({1}, {std::move(bytes)}), {}});
      }
    }
    return outs;
  }

 private:
  const LesionReportOptions o_;
  const std::vector<std::string> outputs_;
};

bool Dims(const google::protobuf::RepeatedField<int64_t>& dims, std::initializer_list<int64_t> want) {
  return std::equal(dims.begin(), dims.end(), want.begin(), want.end());
}

Status CheckInputs(const serve::ModelConfig& c) {
  bool probability = false, spacing = false;
  for (const auto& i : c.input()) {
    const std::string what = "input '" + i.name() + "'";
    const bool fp32 = i.data_type() == serve::configpb::TYPE_FP32;
    if (i.name() == "probability" || i.name() == "volume") {
      if (!fp32 || !Dims(i.dims(), {1, -1, -1, -1}))
        return Status::InvalidArgument(what + " must be TYPE_FP32 dims [1, -1, -1, -1]");
      probability |= i.name() == "probability";
    } else if (i.name() == "spacing") {
      if (!fp32 || !Dims(i.dims(), {3})) return Status::InvalidArgument(what + " must be TYPE_FP32 dims [3]");
      spacing = true;
    } else if (i.name() == "trace") {
      if (i.data_type() != serve::configpb::TYPE_STRING || !Dims(i.dims(), {1}))
        return Status::InvalidArgument(what + " must be TYPE_STRING dims [1]");
    } else {
      return Status::InvalidArgument("lesion_report has no " + what + " (its inputs: probability, spacing, volume, trace)");
    }
  }
  if (!probability || !spacing) return Status::InvalidArgument("lesion_report needs the inputs 'probability' and 'spacing'");
  return Status::Ok();
}

Result<std::vector<std::string>> CheckOutputs(const serve::ModelConfig& c) {
  std::vector<std::string> names;
  for (const auto& o : c.output()) {
    const std::string what = "output '" + o.name() + "'";
    if (o.name() == "findings") {
      if (o.data_type() != serve::configpb::TYPE_FP32 || !Dims(o.dims(), {-1, kFindingColumns}))
        return Status::InvalidArgument(what + " must be TYPE_FP32 dims [-1, " + std::to_string(kFindingColumns) + "]");
    } else if (o.name() == "report" || o.name() == "overlay") {
      if (o.data_type() != serve::configpb::TYPE_STRING || !Dims(o.dims(), {1}))
        return Status::InvalidArgument(what + " must be TYPE_STRING dims [1]");
    } else {
      return Status::InvalidArgument("lesion_report has no " + what + " (its outputs: findings, report, overlay)");
    }
    names.push_back(o.name());
  }
  if (names.empty()) return Status::InvalidArgument("lesion_report declares no output (findings, report, overlay)");
  return names;
}

Result<LesionReportOptions> ReadOptions(const serve::ModelConfig& c) {
  LesionReportOptions o;
  IL_ASSIGN_OR_RETURN(double threshold, ParamNumber(c, "threshold", 0.5));
  o.components.threshold = static_cast<float>(threshold);
  IL_ASSIGN_OR_RETURN(o.min_volume_mm3, ParamNumber(c, "min_volume_mm3", 0));
  if (o.min_volume_mm3 < 0) return Status::InvalidArgument("parameter 'min_volume_mm3' must be >= 0");
  IL_ASSIGN_OR_RETURN(std::string connectivity, ParamChoice(c, "connectivity", {"6", "26"}, "26"));
  o.components.connectivity = connectivity == "6" ? imaging::Connectivity::k6 : imaging::Connectivity::k26;
  IL_ASSIGN_OR_RETURN(double center, ParamNumber(c, "window_center", 40));
  IL_ASSIGN_OR_RETURN(double width, ParamNumber(c, "window_width", 400));
  if (width <= 0) return Status::InvalidArgument("parameter 'window_width' must be positive");
  o.window_center = static_cast<float>(center);
  o.window_width = static_cast<float>(width);
  return o;
}

class LesionReportBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "lesion_report"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "lesion_report";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    const serve::ModelConfig& c = r.partial_config;
    if (c.max_batch_size() != 0)
      return Status::InvalidArgument("lesion_report is not batched (one request is one volume): max_batch_size must be 0");
    IL_RETURN_IF_ERROR(CheckInputs(c));
    IL_ASSIGN_OR_RETURN(std::vector<std::string> outputs, CheckOutputs(c));
    IL_ASSIGN_OR_RETURN(LesionReportOptions o, ReadOptions(c));
    auto p = std::make_shared<LesionReportProcessor>(o, std::move(outputs));
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, c, std::move(p), "lesion_report"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeLesionReportBackend() { return std::make_shared<LesionReportBackend>(); }

}  // namespace inferloop::backends
