#include "backends/saliency/occlusion_saliency_backend.h"

#include <cstring>
#include <limits>
#include <future>

#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/status_macros.h"
#include "imaging/image_codec.h"
#include "imaging/overlay.h"

namespace inferloop::backends {
namespace {

struct SaliencyParams {
  std::string model, model_input, model_output;
  int64_t class_index = 0;
  int patch = 16, stride = 16, window_batch = 8;
  float fill = 0;
  bool fill_mean = false;  // fill with the image's mean value instead
  bool margin = false;     // the score is the class value minus the largest other class value
  std::string image_input, raw_input, heatmap_output, overlay_output;
  int64_t channels = 0, height = 0, width = 0;
  bool batched = false;
};

// Runs `images` ([n, C, H, W]) through the model's serving version; its class scores.
Result<std::vector<float>> Scores(serve::ModelResolver& models, const SaliencyParams& p, Tensor images) {
  const int64_t n = images.dim(0);
  serve::InferRequest req;
  req.model_name = p.model;
  req.inputs.push_back({p.model_input, std::move(images), {}});
  req.outputs.push_back({p.model_output, std::nullopt, {}});
  auto answer = std::make_shared<std::promise<Result<serve::InferResponse>>>();
  auto fut = answer->get_future();
  IL_RETURN_IF_ERROR(serve::InferOnServingVersion(
      models, p.model, 0, std::move(req), serve::RequestContext{},
      [answer](Result<serve::InferResponse> r) { answer->set_value(std::move(r)); }));
  Result<serve::InferResponse> r = fut.get();
  if (!r.ok()) return Status(r.status().code(), "model '" + p.model + "': " + r.status().message());
  for (const auto& out : r.value().outputs) {
    if (out.name != p.model_output || out.tensor.dtype() != DataType::kFloat || out.tensor.rank() != 2 ||
        out.tensor.dim(0) != n || p.class_index >= out.tensor.dim(1))
      continue;
    const int64_t k = out.tensor.dim(1);
    std::vector<float> s(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float* row = out.tensor.data<float>() + i * k;
      s[i] = row[p.class_index];
      if (p.margin && k > 1) {
        float other = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < k; ++j)
          if (j != p.class_index) other = std::max(other, row[j]);
        s[i] -= other;
      }
    }
    return s;
  }
  return Status::InvalidArgument("model '" + p.model + "' gave no float [" + std::to_string(n) + ", >" +
                                 std::to_string(p.class_index) + "] output '" + p.model_output + "'");
}

class OcclusionSaliency final : public Processor {
 public:
  OcclusionSaliency(SaliencyParams p, serve::ModelResolver* models) : p_(std::move(p)), models_(models) {}
  std::vector<std::string> Dependencies() const override { return {p_.model}; }

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    const Tensor* image = nullptr;
    const Tensor* raw = nullptr;
    for (const auto& i : request.inputs) {
      if (i.name == p_.image_input) image = &i.tensor;
      if (i.name == p_.raw_input) raw = &i.tensor;
    }
    if (image == nullptr) return Status::InvalidArgument("input '" + p_.image_input + "' is missing");
    const int64_t per = p_.channels * p_.height * p_.width;
    const int64_t rows = image->size() / per;
    Shape hs = {p_.height, p_.width};
    if (p_.batched) hs.insert(hs.begin(), rows);
    IL_ASSIGN_OR_RETURN(Tensor heat, Tensor::Create(DataType::kFloat, hs));
    std::vector<std::string> pngs;
    for (int64_t r = 0; r < rows; ++r) {
      std::span<float> out(heat.data<float>() + r * p_.height * p_.width, static_cast<size_t>(p_.height * p_.width));
      IL_RETURN_IF_ERROR(Explain(image->data<float>() + r * per, out));
      if (raw != nullptr && r < raw->size()) {
        auto decoded = imaging::DecodeImage(raw->strings()[r], imaging::DecodeLimits{}, 3);
        if (!decoded.ok()) return Status::InvalidArgument("input '" + p_.raw_input + "': " + decoded.status().message());
        IL_ASSIGN_OR_RETURN(imaging::Image blended, imaging::OverlayHeatmap(*decoded, out, static_cast<int>(p_.height),
                                                                           static_cast<int>(p_.width)));
        IL_ASSIGN_OR_RETURN(std::string png, imaging::EncodePng(blended));
        pngs.push_back(std::move(png));
      }
    }
    std::vector<serve::InferOutput> outs;
    outs.push_back({p_.heatmap_output, std::move(heat), {}});
    if (!p_.overlay_output.empty() && raw != nullptr) {
      Shape os = {1};
      if (p_.batched) os.insert(os.begin(), rows);
      pngs.resize(static_cast<size_t>(rows));
      outs.push_back({p_.overlay_output, Tensor::FromStrings(os, std::move(pngs)), {}});
    }
    return outs;
  }

 private:
  // The saliency of one image (`pixels`, C x H x W) into `heat` (H x W).
  Status Explain(const float* pixels, std::span<float> heat) {
    const int64_t per = p_.channels * p_.height * p_.width;
    std::vector<std::pair<int, int>> positions;  // top-left corners
    for (int y = 0; y + p_.patch <= p_.height; y += p_.stride)
      for (int x = 0; x + p_.patch <= p_.width; x += p_.stride) positions.push_back({y, x});
    IL_ASSIGN_OR_RETURN(Tensor base, Tensor::Create(DataType::kFloat, {1, p_.channels, p_.height, p_.width}));
    std::memcpy(base.data<float>(), pixels, static_cast<size_t>(per) * sizeof(float));
    IL_ASSIGN_OR_RETURN(std::vector<float> baseline, Scores(*models_, p_, base));
    float fill = p_.fill;
    if (p_.fill_mean) {
      double sum = 0;
      for (int64_t i = 0; i < per; ++i) sum += pixels[i];
      fill = static_cast<float>(sum / static_cast<double>(per));
    }
    std::vector<float> drop_sum(heat.size(), 0.0f), covered(heat.size(), 0.0f);
    for (size_t start = 0; start < positions.size(); start += static_cast<size_t>(p_.window_batch)) {
      const int64_t n = std::min<int64_t>(p_.window_batch, static_cast<int64_t>(positions.size() - start));
      IL_ASSIGN_OR_RETURN(Tensor batch, Tensor::Create(DataType::kFloat, {n, p_.channels, p_.height, p_.width}));
      for (int64_t k = 0; k < n; ++k) {
        float* img = batch.data<float>() + k * per;
        std::memcpy(img, pixels, static_cast<size_t>(per) * sizeof(float));
        const auto [y0, x0] = positions[start + k];
        for (int64_t c = 0; c < p_.channels; ++c)
          for (int y = y0; y < y0 + p_.patch; ++y)
            for (int x = x0; x < x0 + p_.patch; ++x) img[(c * p_.height + y) * p_.width + x] = fill;
      }
      IL_ASSIGN_OR_RETURN(std::vector<float> scores, Scores(*models_, p_, batch));
      for (int64_t k = 0; k < n; ++k) {
        const auto [y0, x0] = positions[start + k];
        for (int y = y0; y < y0 + p_.patch; ++y)
          for (int x = x0; x < x0 + p_.patch; ++x) {
            drop_sum[y * p_.width + x] += baseline[0] - scores[k];
            covered[y * p_.width + x] += 1;
          }
      }
    }
    for (size_t i = 0; i < heat.size(); ++i) heat[i] = covered[i] > 0 ? drop_sum[i] / covered[i] : 0.0f;
    return Status::Ok();
  }

  const SaliencyParams p_;
  serve::ModelResolver* models_;
};

Result<SaliencyParams> ParamsOf(const serve::ModelConfig& c) {
  SaliencyParams p;
  p.model = ParamString(c, "model");
  p.model_input = ParamString(c, "model_input");
  p.model_output = ParamString(c, "model_output");
  if (p.model.empty() || p.model_input.empty() || p.model_output.empty())
    return Status::InvalidArgument("parameters 'model', 'model_input' and 'model_output' name the classifier to explain");
  auto integer = [&](const char* key, double fallback, double lo) -> Result<int64_t> {
    IL_ASSIGN_OR_RETURN(double v, ParamNumber(c, key, fallback));
    if (v < lo || v != static_cast<int64_t>(v))
      return Status::InvalidArgument("parameter '" + std::string(key) + "' must be an integer >= " + std::to_string(static_cast<int>(lo)));
    return static_cast<int64_t>(v);
  };
  IL_ASSIGN_OR_RETURN(p.class_index, integer("class_index", 0, 0));
  IL_ASSIGN_OR_RETURN(int64_t patch, integer("patch", 16, 1));
  IL_ASSIGN_OR_RETURN(int64_t stride, integer("stride", static_cast<double>(patch), 1));
  IL_ASSIGN_OR_RETURN(int64_t wb, integer("window_batch", 8, 1));
  p.patch = static_cast<int>(patch);
  p.stride = static_cast<int>(stride);
  p.window_batch = static_cast<int>(wb);
  if (ParamString(c, "fill") == "mean") {
    p.fill_mean = true;
  } else {
    IL_ASSIGN_OR_RETURN(double fill, ParamNumber(c, "fill", 0));
    p.fill = static_cast<float>(fill);
  }
  IL_ASSIGN_OR_RETURN(std::string score, ParamChoice(c, "score", {"value", "margin"}, "value"));
  p.margin = score == "margin";
  p.raw_input = ParamString(c, "raw_input");
  p.overlay_output = ParamString(c, "overlay_output");
  for (const auto& in : c.input()) {
    if (in.name() == p.raw_input) continue;
    if (in.data_type() != serve::configpb::TYPE_FP32 || in.dims_size() != 3 || in.dims(0) < 1 || in.dims(1) < 1 || in.dims(2) < 1)
      return Status::InvalidArgument("input '" + in.name() + "' must be TYPE_FP32 with fixed dims [C, H, W]");
    p.image_input = in.name();
    p.channels = in.dims(0);
    p.height = in.dims(1);
    p.width = in.dims(2);
  }
  if (p.image_input.empty()) return Status::InvalidArgument("occlusion_saliency needs the image tensor input");
  if (p.patch > p.height || p.patch > p.width) return Status::InvalidArgument("parameter 'patch' is larger than the image");
  for (const auto& out : c.output())
    if (out.name() != p.overlay_output) p.heatmap_output = out.name();
  if (p.heatmap_output.empty()) return Status::InvalidArgument("occlusion_saliency needs a heatmap output");
  p.batched = c.max_batch_size() > 0;
  return p;
}

class OcclusionSaliencyBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "occlusion_saliency"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "occlusion_saliency";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    if (r.models == nullptr) return Status::Internal("occlusion_saliency needs the server's models");
    IL_ASSIGN_OR_RETURN(SaliencyParams p, ParamsOf(r.partial_config));
    IL_ASSIGN_OR_RETURN(std::shared_ptr<serve::ModelVersion> target, r.models->Find(p.model, 0));
    (void)target;  // served now; looked up again per request (a reload is followed)
    serve::ModelConfig c = r.partial_config;
    for (auto& out : *c.mutable_output()) {
      if (out.name() != p.heatmap_output) continue;
      out.clear_dims();
      out.add_dims(p.height);
      out.add_dims(p.width);
    }
    auto proc = std::make_shared<OcclusionSaliency>(std::move(p), r.models);
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, std::move(c), std::move(proc), "occlusion_saliency"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
  std::vector<std::string> Dependencies(const serve::ModelConfig& c) const override {
    const std::string m = ParamString(c, "model");
    return m.empty() ? std::vector<std::string>{} : std::vector<std::string>{m};
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeOcclusionSaliencyBackend() { return std::make_shared<OcclusionSaliencyBackend>(); }

}  // namespace inferloop::backends
