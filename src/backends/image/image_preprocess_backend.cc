#include "backends/image/image_preprocess_backend.h"

#include <span>

#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/status_macros.h"
#include "imaging/image_codec.h"
#include "imaging/image_preprocess.h"

namespace inferloop::backends {
namespace {

struct OutputPlan {
  std::string name;
  imaging::PreprocessSpec spec;
  Shape dims;  // without the batch dimension
};

class ImagePreprocessor final : public Processor {
 public:
  ImagePreprocessor(std::string input, std::vector<OutputPlan> outputs, imaging::DecodeLimits limits, bool batched)
      : input_(std::move(input)), outputs_(std::move(outputs)), limits_(limits), batched_(batched) {}

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    const Tensor* in = nullptr;
    for (const auto& i : request.inputs)
      if (i.name == input_) in = &i.tensor;
    if (in == nullptr) return Status::InvalidArgument("input '" + input_ + "' is missing");
    const int64_t n = in->size();
    std::vector<serve::InferOutput> outs;
    for (const auto& o : outputs_) {
      Shape shape = o.dims;
      if (batched_) shape.insert(shape.begin(), n);
      const DataType dt = o.spec.element_type == imaging::ElementType::kFloat32 ? DataType::kFloat : DataType::kUInt8;
      IL_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dt, shape));
      outs.push_back({o.name, std::move(t), {}});
    }
    for (int64_t i = 0; i < n; ++i) {
      const std::string where = "input '" + input_ + "' row " + std::to_string(i);
      const int channels = outputs_[0].spec.channels;
      auto image = imaging::DecodeImage(in->strings()[i], limits_, channels);
      if (!image.ok()) return Status::InvalidArgument(where + ": " + image.status().message());
      for (size_t k = 0; k < outputs_.size(); ++k) {
        const imaging::PreprocessSpec& spec = outputs_[k].spec;
        const size_t per = spec.ElementCount();
        Tensor& t = outs[k].tensor;
        Status st = spec.element_type == imaging::ElementType::kFloat32
                        ? imaging::PreprocessImage(*image, spec, std::span<float>(t.data<float>() + i * per, per))
                        : imaging::PreprocessImage(*image, spec, std::span<uint8_t>(t.data<uint8_t>() + i * per, per));
        if (!st.ok()) return Status::InvalidArgument(where + ": " + st.message());
      }
    }
    return outs;
  }

 private:
  const std::string input_;
  const std::vector<OutputPlan> outputs_;
  const imaging::DecodeLimits limits_;
  const bool batched_;
};

// The spec every output shares (everything but its size and element type).
Result<imaging::PreprocessSpec> CommonSpec(const serve::ModelConfig& c) {
  imaging::PreprocessSpec spec;
  IL_ASSIGN_OR_RETURN(std::string fit, ParamChoice(c, "fit", {"stretch", "letterbox", "center_crop"}, "stretch"));
  spec.fit = fit == "letterbox" ? imaging::FitMode::kLetterbox
             : fit == "center_crop" ? imaging::FitMode::kCenterCrop
                                    : imaging::FitMode::kStretch;
  IL_ASSIGN_OR_RETURN(double pad, ParamNumber(c, "pad_value", 0));
  if (pad < 0 || pad > 255) return Status::InvalidArgument("parameter 'pad_value' is outside 0..255");
  spec.pad_value = static_cast<uint8_t>(pad);
  IL_ASSIGN_OR_RETURN(double scale, ParamNumber(c, "scale", 1.0 / 255.0));
  spec.scale = static_cast<float>(scale);
  IL_ASSIGN_OR_RETURN(std::vector<double> mean, ParamNumbers(c, "mean", {0.0}));
  IL_ASSIGN_OR_RETURN(std::vector<double> stdv, ParamNumbers(c, "std", {1.0}));
  spec.mean.assign(mean.begin(), mean.end());
  spec.std.assign(stdv.begin(), stdv.end());
  IL_ASSIGN_OR_RETURN(std::string color, ParamChoice(c, "color", {"rgb", "bgr", "gray"}, "rgb"));
  spec.channels = color == "gray" ? 1 : 3;
  spec.order = color == "bgr" ? imaging::ChannelOrder::kBGR : imaging::ChannelOrder::kRGB;
  IL_ASSIGN_OR_RETURN(std::string layout, ParamChoice(c, "layout", {"nchw", "nhwc"}, "nchw"));
  spec.layout = layout == "nhwc" ? imaging::TensorLayout::kNHWC : imaging::TensorLayout::kNCHW;
  return spec;
}

Result<std::vector<OutputPlan>> PlanOutputs(const serve::ModelConfig& c, const imaging::PreprocessSpec& common) {
  std::vector<OutputPlan> plans;
  for (const auto& o : c.output()) {
    const std::string what = "output '" + o.name() + "'";
    if (o.dims_size() != 3) return Status::InvalidArgument(what + " needs dims [C, H, W] (nchw) or [H, W, C] (nhwc)");
    OutputPlan p{o.name(), common, Shape(o.dims().begin(), o.dims().end())};
    const bool nchw = common.layout == imaging::TensorLayout::kNCHW;
    const int64_t ch = nchw ? o.dims(0) : o.dims(2);
    p.spec.height = static_cast<int>(nchw ? o.dims(1) : o.dims(0));
    p.spec.width = static_cast<int>(nchw ? o.dims(2) : o.dims(1));
    if (ch != common.channels)
      return Status::InvalidArgument(what + " has " + std::to_string(ch) + " channels but color gives " +
                                     std::to_string(common.channels));
    if (o.data_type() == serve::configpb::TYPE_FP32) {
      p.spec.element_type = imaging::ElementType::kFloat32;
    } else if (o.data_type() == serve::configpb::TYPE_UINT8) {
      p.spec.element_type = imaging::ElementType::kUInt8;
    } else {
      return Status::InvalidArgument(what + " must be TYPE_FP32 or TYPE_UINT8");
    }
    if (Status st = p.spec.Check(); !st.ok()) return Status::InvalidArgument(what + ": " + st.message());
    plans.push_back(std::move(p));
  }
  if (plans.empty()) return Status::InvalidArgument("image_preprocess declares no output");
  return plans;
}

class ImagePreprocessBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "image_preprocess"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "image_preprocess";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    const serve::ModelConfig& c = r.partial_config;
    if (c.input_size() != 1 || c.input(0).data_type() != serve::configpb::TYPE_STRING)
      return Status::InvalidArgument("image_preprocess takes one input of TYPE_STRING (the encoded images)");
    IL_ASSIGN_OR_RETURN(imaging::PreprocessSpec common, CommonSpec(c));
    IL_ASSIGN_OR_RETURN(std::vector<OutputPlan> outputs, PlanOutputs(c, common));
    IL_ASSIGN_OR_RETURN(double max_pixels, ParamNumber(c, "max_pixels", static_cast<double>(int64_t{1} << 26)));
    if (max_pixels < 1) return Status::InvalidArgument("parameter 'max_pixels' must be positive");
    imaging::DecodeLimits limits;
    limits.max_pixels = static_cast<int64_t>(max_pixels);
    auto p = std::make_shared<ImagePreprocessor>(c.input(0).name(), std::move(outputs), limits, c.max_batch_size() > 0);
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, c, std::move(p), "image_preprocess"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeImagePreprocessBackend() { return std::make_shared<ImagePreprocessBackend>(); }

}  // namespace inferloop::backends
