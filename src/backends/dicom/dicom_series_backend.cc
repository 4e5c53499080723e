#include "backends/dicom/dicom_series_backend.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string_view>

#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/status_macros.h"
#include "imaging/dicom_series.h"
#include "imaging/volume_ops.h"

namespace inferloop::backends {
namespace {

struct DicomSeriesPlan {
  std::string input;
  std::string volume_output = "volume";
  bool spacing_output = false;
  bool origin_output = false;
  std::optional<std::array<double, 3>> target_spacing;
  imaging::DicomReadOptions read;
};

Tensor Vector3(const std::array<double, 3>& v) {
  return Tensor::FromVector<float>(DataType::kFloat, {3}, {static_cast<float>(v[0]), static_cast<float>(v[1]),
                                                           static_cast<float>(v[2])});
}

// `st` with the input's name in front, keeping its code (imaging's messages name the file).
Status InInput(const std::string& input, const Status& st) {
  return Status(st.code(), "input '" + input + "': " + st.message());
}

class DicomSeriesProcessor final : public Processor {
 public:
  explicit DicomSeriesProcessor(DicomSeriesPlan plan) : plan_(std::move(plan)) {}

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    const Tensor* in = nullptr;
    for (const auto& i : request.inputs)
      if (i.name == plan_.input) in = &i.tensor;
    if (in == nullptr) return Status::InvalidArgument("input '" + plan_.input + "' is missing");
    if (in->dtype() != DataType::kString || in->size() == 0)
      return Status::InvalidArgument("input '" + plan_.input + "' must hold the series' files (BYTES, at least one)");
    std::vector<std::string_view> files(in->strings(), in->strings() + in->size());
    auto read = imaging::ReadDicomSeries(files, plan_.read);
    if (!read.ok()) return InInput(plan_.input, read.status());
    imaging::DicomVolume volume = std::move(read).value();
    if (volume.channels != 1)
      return Status::InvalidArgument("input '" + plan_.input + "': the series has " + std::to_string(volume.channels) +
                                     " samples per pixel (" + volume.photometric_interpretation +
                                     "); dicom_series reads single-channel (CT/MR) series");
    if (plan_.target_spacing) {
      auto resampled = imaging::ResampleVolume(volume, *plan_.target_spacing, plan_.read.max_voxels);
      if (!resampled.ok()) return InInput(plan_.input, resampled.status().WithContext("resampling"));
      volume = std::move(resampled).value();
    }
    std::vector<serve::InferOutput> outs;
    IL_ASSIGN_OR_RETURN(Tensor v, Tensor::Create(DataType::kFloat, {1, volume.depth, volume.height, volume.width}));
    std::memcpy(v.data<float>(), volume.voxels.data(), v.nbytes());
    outs.push_back({plan_.volume_output, std::move(v), {}});
    if (plan_.spacing_output) outs.push_back({"spacing", Vector3(volume.spacing_mm), {}});
    if (plan_.origin_output) outs.push_back({"origin", Vector3(volume.origin_mm), {}});
    return outs;
  }

 private:
  const DicomSeriesPlan plan_;
};

bool DimsAre(const serve::configpb::ModelOutput& o, std::initializer_list<int64_t> dims) {
  return std::equal(o.dims().begin(), o.dims().end(), dims.begin(), dims.end());
}

Status PlanOutputs(const serve::ModelConfig& c, DicomSeriesPlan& plan) {
  bool volume = false;
  for (const auto& o : c.output()) {
    const std::string what = "output '" + o.name() + "'";
    if (o.data_type() != serve::configpb::TYPE_FP32) return Status::InvalidArgument(what + " must be TYPE_FP32");
    if (o.name() == "volume") {
      if (!DimsAre(o, {1, -1, -1, -1})) return Status::InvalidArgument(what + " needs dims [1, -1, -1, -1]");
      volume = true;
    } else if (o.name() == "spacing" || o.name() == "origin") {
      if (!DimsAre(o, {3})) return Status::InvalidArgument(what + " needs dims [3]");
      (o.name() == "spacing" ? plan.spacing_output : plan.origin_output) = true;
    } else {
      return Status::InvalidArgument("dicom_series has no " + what + " (its outputs: volume, spacing, origin)");
    }
  }
  if (!volume) return Status::InvalidArgument("dicom_series needs the output 'volume' (TYPE_FP32 dims [1, -1, -1, -1])");
  return Status::Ok();
}

Status PlanParameters(const serve::ModelConfig& c, DicomSeriesPlan& plan) {
  if (c.parameters().count("target_spacing")) {
    IL_ASSIGN_OR_RETURN(std::vector<double> t, ParamNumbers(c, "target_spacing", {}));
    if (t.size() != 3 || t[0] <= 0 || t[1] <= 0 || t[2] <= 0)
      return Status::InvalidArgument("parameter 'target_spacing' must be three positive numbers \"z,y,x\" (mm)");
    plan.target_spacing = std::array<double, 3>{t[0], t[1], t[2]};
  }
  IL_ASSIGN_OR_RETURN(double max_voxels, ParamNumber(c, "max_voxels", static_cast<double>(int64_t{1} << 28)));
  if (max_voxels < 1 || max_voxels > 9.0e18) return Status::InvalidArgument("parameter 'max_voxels' must be positive");
  plan.read.max_voxels = static_cast<int64_t>(max_voxels);
  IL_ASSIGN_OR_RETURN(std::string require, ParamChoice(c, "require_pixel_spacing", {"true", "false"}, "true"));
  plan.read.require_pixel_spacing = require == "true";
  return Status::Ok();
}

class DicomSeriesBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "dicom_series"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "dicom_series";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    const serve::ModelConfig& c = r.partial_config;
    if (c.max_batch_size() != 0)
      return Status::InvalidArgument("dicom_series is not batched (one request is one series): max_batch_size must be 0");
    if (c.input_size() != 1 || c.input(0).data_type() != serve::configpb::TYPE_STRING || c.input(0).dims_size() != 1 ||
        c.input(0).dims(0) != -1)
      return Status::InvalidArgument("dicom_series takes one input of TYPE_STRING dims [-1] (the series' files)");
    DicomSeriesPlan plan;
    plan.input = c.input(0).name();
    IL_RETURN_IF_ERROR(PlanOutputs(c, plan));
    IL_RETURN_IF_ERROR(PlanParameters(c, plan));
    auto p = std::make_shared<DicomSeriesProcessor>(std::move(plan));
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, c, std::move(p), "dicom_series"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeDicomSeriesBackend() { return std::make_shared<DicomSeriesBackend>(); }

}  // namespace inferloop::backends
