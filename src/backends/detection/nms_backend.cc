#include "backends/detection/nms_backend.h"

#include <span>

#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/status_macros.h"
#include "imaging/nms.h"

namespace inferloop::backends {
namespace {

class NmsProcessor final : public Processor {
 public:
  explicit NmsProcessor(imaging::NmsOptions o) : o_(o) {}

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    const Tensor* boxes = nullptr;
    const Tensor* scores = nullptr;
    for (const auto& i : request.inputs) {
      if (i.name == "boxes") boxes = &i.tensor;
      if (i.name == "scores") scores = &i.tensor;
    }
    if (boxes == nullptr || scores == nullptr) return Status::InvalidArgument("inputs 'boxes' and 'scores' are required");
    if (boxes->rank() != 2 || boxes->dim(1) != 4 || scores->rank() != 2 || scores->dim(0) != boxes->dim(0))
      return Status::InvalidArgument("boxes must be [N, 4] and scores [N, C] with the same N (got " +
                                     ShapeToString(boxes->shape()) + " and " + ShapeToString(scores->shape()) + ")");
    const int64_t n = boxes->dim(0);
    IL_ASSIGN_OR_RETURN(std::vector<imaging::Detection> kept,
                        imaging::NonMaxSuppression(std::span<const float>(boxes->data<float>(), static_cast<size_t>(n * 4)),
                                                   std::span<const float>(scores->data<float>(), static_cast<size_t>(scores->size())),
                                                   n, scores->dim(1), o_));
    const int64_t k = static_cast<int64_t>(kept.size());
    IL_ASSIGN_OR_RETURN(Tensor det, Tensor::Create(DataType::kFloat, {k, 6}));
    IL_ASSIGN_OR_RETURN(Tensor idx, Tensor::Create(DataType::kInt64, {k}));
    for (int64_t i = 0; i < k; ++i) {
      const float* b = boxes->data<float>() + kept[i].box_index * 4;
      float* row = det.data<float>() + i * 6;
      for (int j = 0; j < 4; ++j) row[j] = b[j];
      row[4] = kept[i].score;
      row[5] = static_cast<float>(kept[i].class_index);
      idx.data<int64_t>()[i] = kept[i].box_index;
    }
    return std::vector<serve::InferOutput>{{"detections", std::move(det), {}}, {"indices", std::move(idx), {}}};
  }

 private:
  const imaging::NmsOptions o_;
};

class NmsBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "nms"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "nms";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    const serve::ModelConfig& c = r.partial_config;
    if (c.max_batch_size() != 0) return Status::InvalidArgument("nms takes one image's boxes per request: max_batch_size 0");
    for (const auto& in : c.input())
      if ((in.name() != "boxes" && in.name() != "scores") || in.data_type() != serve::configpb::TYPE_FP32)
        return Status::InvalidArgument("nms inputs are 'boxes' and 'scores', TYPE_FP32 (got '" + in.name() + "')");
    for (const auto& out : c.output())
      if (out.name() != "detections" && out.name() != "indices")
        return Status::InvalidArgument("nms outputs are 'detections' and 'indices' (got '" + out.name() + "')");
    imaging::NmsOptions o;
    IL_ASSIGN_OR_RETURN(double iou, ParamNumber(c, "iou_threshold", 0.5));
    IL_ASSIGN_OR_RETURN(double score, ParamNumber(c, "score_threshold", 0.0));
    IL_ASSIGN_OR_RETURN(double max_output, ParamNumber(c, "max_output", 100));
    IL_ASSIGN_OR_RETURN(std::string per_class, ParamChoice(c, "per_class", {"true", "false"}, "false"));
    if (max_output < 0 || max_output != static_cast<int64_t>(max_output))
      return Status::InvalidArgument("parameter 'max_output' must be an integer >= 0");
    o.iou_threshold = static_cast<float>(iou);
    o.score_threshold = static_cast<float>(score);
    o.max_output = static_cast<int64_t>(max_output);
    o.per_class = per_class == "true";
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, c, std::make_shared<NmsProcessor>(o), "nms"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeNmsBackend() { return std::make_shared<NmsBackend>(); }

}  // namespace inferloop::backends
