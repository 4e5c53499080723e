#include "backends/classification/classification_backend.h"

#include <span>

#include "backends/processing/processing_params.h"
#include "backends/processing/processing_version.h"
#include "base/status_macros.h"
#include "imaging/classification.h"

namespace inferloop::backends {
namespace {

class Classifier final : public Processor {
 public:
  Classifier(std::string input, std::string output, int64_t k, bool softmax, std::vector<std::string> labels, bool batched)
      : input_(std::move(input)), output_(std::move(output)), k_(k), softmax_(softmax), labels_(std::move(labels)),
        batched_(batched) {}

  Result<std::vector<serve::InferOutput>> Process(const serve::InferRequest& request) override {
    const Tensor* in = nullptr;
    for (const auto& i : request.inputs)
      if (i.name == input_) in = &i.tensor;
    if (in == nullptr || in->rank() == 0) return Status::InvalidArgument("input '" + input_ + "' is missing");
    const int64_t classes = in->dim(in->rank() - 1);
    const int64_t rows = classes > 0 ? in->size() / classes : 0;
    std::vector<std::string> results;
    for (int64_t r = 0; r < rows; ++r) {
      auto row = imaging::Classify(std::span<const float>(in->data<float>() + r * classes, static_cast<size_t>(classes)),
                                   k_, softmax_, labels_);
      if (!row.ok()) return Status::InvalidArgument("input '" + input_ + "' row " + std::to_string(r) + ": " + row.status().message());
      for (int64_t j = 0; j < k_; ++j) results.push_back(j < static_cast<int64_t>(row->size()) ? (*row)[j] : "");
    }
    Shape shape = {k_};
    if (batched_) shape.insert(shape.begin(), rows);
    return std::vector<serve::InferOutput>{{output_, Tensor::FromStrings(shape, std::move(results)), {}}};
  }

 private:
  const std::string input_, output_;
  const int64_t k_;
  const bool softmax_;
  const std::vector<std::string> labels_;
  const bool batched_;
};

class ClassificationBackend final : public serve::ModelBackend {
 public:
  std::string kind() const override { return "classification"; }
  std::string default_model_filename() const override { return ""; }
  bool Serves(const serve::ModelConfig& c, const std::vector<std::string>&) const override {
    return c.platform().empty() && c.backend() == "classification";
  }
  Result<std::shared_ptr<serve::ModelVersion>> Load(const serve::VersionLoadRequest& r) override {
    serve::ModelConfig c = r.partial_config;
    if (c.input_size() != 1 || c.input(0).data_type() != serve::configpb::TYPE_FP32 || c.input(0).dims_size() != 1)
      return Status::InvalidArgument("classification takes one input of TYPE_FP32 with dims [K] (the class scores)");
    if (c.output_size() != 1 || c.output(0).data_type() != serve::configpb::TYPE_STRING)
      return Status::InvalidArgument("classification gives one output of TYPE_STRING (the class_count results)");
    IL_ASSIGN_OR_RETURN(double k, ParamNumber(c, "class_count", 1));
    const int64_t classes = c.input(0).dims(0);
    if (k < 1 || k != static_cast<int64_t>(k) || (classes > 0 && k > classes))
      return Status::InvalidArgument("parameter 'class_count' must be an integer in 1.." + std::to_string(classes));
    IL_ASSIGN_OR_RETURN(std::string softmax, ParamChoice(c, "softmax", {"true", "false"}, "false"));
    std::vector<std::string> labels;
    if (!c.output(0).label_filename().empty()) {
      const std::string& f = c.output(0).label_filename();
      if (f.find('/') != std::string::npos || f.empty() || f[0] == '.')
        return Status::InvalidArgument("label_filename '" + f + "' must be a file name in the model's folder");
      IL_ASSIGN_OR_RETURN(labels, imaging::ReadLabelsFile(r.model_dir + "/" + f));
    }
    c.mutable_output(0)->clear_dims();
    c.mutable_output(0)->add_dims(static_cast<int64_t>(k));
    auto p = std::make_shared<Classifier>(c.input(0).name(), c.output(0).name(), static_cast<int64_t>(k),
                                          softmax == "true", std::move(labels), c.max_batch_size() > 0);
    IL_ASSIGN_OR_RETURN(std::shared_ptr<ProcessingModelVersion> v,
                        ProcessingModelVersion::Create(r, std::move(c), std::move(p), "classification"));
    return std::shared_ptr<serve::ModelVersion>(std::move(v));
  }
};

}  // namespace

std::shared_ptr<serve::ModelBackend> MakeClassificationBackend() { return std::make_shared<ClassificationBackend>(); }

}  // namespace inferloop::backends
