// The sliding_window backend through the model lifecycle, calling a fake segmentation model
// through a fake ModelResolver: an identity model gives back the normalised volume
// (clip((HU - 40) / 100, -5, 5)) whatever the blending, with the windows sent in batches of
// window_batch (capped by the model's max_batch_size) and the cost in the output's parameters; a
// model that answers each window with its ordinal checks the blend against the analytic constant
// and Gaussian weights; a draining version is looked up again; model errors name the windows.
#include "backends/sliding_window/sliding_window_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "unit/backends/processing_step_harness.h"

namespace inferloop::serve {
namespace {

using testing::Floats;
using testing::InferNow;
using testing::LoadStep;
using testing::OutputNamed;

enum class FakeOutput { kIdentity, kOrdinal, kTwoChannels };

// A segmentation model: [n, 1, z, y, x] in; out the same window (identity), or window k of those
// seen so far filled with k + 1 (ordinal), or [n, 2, z, y, x] with 1 - x and x (two channels).
class FakeSegmentationModel final : public ModelVersion {
 public:
  FakeSegmentationModel(const std::string& config_text, FakeOutput mode) : mode_(mode) {
    auto c = ParseModelConfig(config_text, "seg");
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) config_ = *c;
  }
  const std::string& name() const override { return config_.name(); }
  int64_t version() const override { return 1; }
  const ModelConfig& config() const override { return config_; }
  bool Infer(InferRequest&& request, RequestContext&&, InferCallback&& done, AdmissionTicket&&) override {
    if (draining) return false;
    std::lock_guard<std::mutex> lock(mu_);
    const Tensor& in = request.inputs.at(0).tensor;
    batches.push_back(in.dim(0));
    if (fail_at_window >= 0 && windows_seen_ <= fail_at_window && fail_at_window < windows_seen_ + in.dim(0)) {
      done(Status::InvalidArgument("bad window"));
      return true;
    }
    const size_t per = static_cast<size_t>(in.size() / in.dim(0));
    Shape shape = in.shape();
    if (mode_ == FakeOutput::kTwoChannels) shape[1] = 2;
    auto out = Tensor::Create(DataType::kFloat, shape);
    float* o = out->data<float>();
    for (int64_t k = 0; k < in.dim(0); ++k, ++windows_seen_) {
      const float* w = in.data<float>() + k * per;
      for (size_t i = 0; i < per; ++i) {
        if (mode_ == FakeOutput::kIdentity) o[k * per + i] = w[i];
        if (mode_ == FakeOutput::kOrdinal) o[k * per + i] = static_cast<float>(windows_seen_ + 1);
        if (mode_ == FakeOutput::kTwoChannels) {
          o[(2 * k) * per + i] = 1 - w[i];
          o[(2 * k + 1) * per + i] = w[i];
        }
      }
    }
    InferResponse r;
    r.outputs.push_back({request.outputs.at(0).name, std::move(out).value(), {}});
    done(std::move(r));
    return true;
  }
  void Drain() override {}
  ModelMetadata Metadata() const override { return {}; }
  ModelStatistics Statistics() const override { return {}; }
  int64_t MemoryBytes() const override { return 0; }
  bool Ready() const override { return !draining; }
  std::string NotReadyReason() const override { return ""; }

  std::vector<int64_t> batches;  // windows per request received
  bool draining = false;
  int64_t fail_at_window = -1;

 private:
  ModelConfig config_;
  FakeOutput mode_;
  std::mutex mu_;
  int64_t windows_seen_ = 0;
};

// Serves "seg": each Find gives the next of `versions` (the last one again once they run out).
class FakeModels final : public ModelResolver {
 public:
  Result<std::shared_ptr<ModelVersion>> Find(const std::string& model, int64_t) override {
    if (model != "seg" || versions.empty()) return Status::NotFound("no model '" + model + "'");
    ++finds;
    auto v = versions.front();
    if (versions.size() > 1) versions.erase(versions.begin());
    return v;
  }
  std::vector<std::shared_ptr<ModelVersion>> versions;
  int finds = 0;
};

const char kFixedModel[] = R"(max_batch_size: 4
input [{ name: "ct" data_type: TYPE_FP32 dims: [1, 8, 8, 8] }]
output [{ name: "prob" data_type: TYPE_FP32 dims: [1, 8, 8, 8] }])";
const char kAnySizeModel[] = R"(max_batch_size: 0
input [{ name: "ct" data_type: TYPE_FP32 dims: [-1, 1, -1, -1, -1] }]
output [{ name: "prob" data_type: TYPE_FP32 dims: [-1, -1, -1, -1, -1] }])";

std::string StepConfig(const std::string& parameters) {
  return R"(backend: "sliding_window"
max_batch_size: 0
input [{ name: "volume" data_type: TYPE_FP32 dims: [1, -1, -1, -1] }]
output [{ name: "probability" data_type: TYPE_FP32 dims: [1, -1, -1, -1] }]
parameters { key: "model" value: { string_value: "seg" } }
)" + parameters;
}

std::string Param(const std::string& key, const std::string& value) {
  return "parameters { key: \"" + key + "\" value: { string_value: \"" + value + "\" } }\n";
}

Tensor Volume(Shape shape, std::vector<float>* values) {
  const int64_t n = shape[1] * shape[2] * shape[3];
  values->resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) (*values)[i] = static_cast<float>(-1100 + (i * 137) % 2300);  // -1100..1199 HU
  return Tensor::FromVector<float>(DataType::kFloat, shape, *values);
}

class SlidingWindowBackendTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeSegmentationModel> Serve(const std::string& model_config, FakeOutput mode) {
    auto m = std::make_shared<FakeSegmentationModel>(model_config, mode);
    models_.versions.push_back(m);
    return m;
  }
  std::shared_ptr<ModelVersion> Load(const std::string& config) {
    auto v = LoadStep(*backend_, config, &models_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : nullptr;
  }
  Result<InferResponse> Run(ModelVersion& step, Tensor volume) {
    return InferNow(step, {{"volume", std::move(volume), {}}});
  }

  std::shared_ptr<ModelBackend> backend_ = backends::MakeSlidingWindowBackend();
  FakeModels models_;
};

int64_t IntParam(const InferParameters& p, const std::string& key) {
  auto it = p.find(key);
  return it == p.end() ? -1 : std::get<int64_t>(it->second);
}

TEST_F(SlidingWindowBackendTest, IdentityModelGivesBackTheNormalisedVolumeInBatchedWindows) {
  auto model = Serve(std::string("name: \"seg\"\n") + kFixedModel, FakeOutput::kIdentity);
  for (const std::string blend : {"constant", "gaussian"}) {
    model->batches.clear();
    // roi 8 x 8 x 8 from the model; window_batch 16 is capped to its max_batch_size 4.
    auto step = Load(StepConfig(Param("blend", blend) + Param("window_batch", "16")));
    ASSERT_TRUE(step);
    std::vector<float> hu;
    // z 13: windows at 0, 5; y 6 (padded to 8): one; x 20: at 0, 6, 12. Six windows, two calls.
    auto r = Run(*step, Volume({1, 13, 6, 20}, &hu));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Tensor* p = OutputNamed(*r, "probability");
    ASSERT_EQ(p->shape(), (Shape{1, 13, 6, 20}));
    const std::vector<float> got = Floats(*p);
    for (size_t i = 0; i < hu.size(); ++i)
      ASSERT_NEAR(got[i], std::clamp((hu[i] - 40.0f) / 100.0f, -5.0f, 5.0f), 1e-5) << blend << " voxel " << i;
    EXPECT_EQ(model->batches, (std::vector<int64_t>{4, 2})) << blend;
    EXPECT_EQ(IntParam(r->outputs[0].parameters, "windows"), 6);
    EXPECT_EQ(IntParam(r->outputs[0].parameters, "model_calls"), 2);
  }
}

TEST_F(SlidingWindowBackendTest, NormalisationParametersAreApplied) {
  auto model = Serve(std::string("name: \"seg\"\n") + kFixedModel, FakeOutput::kIdentity);
  auto step = Load(StepConfig(Param("offset", "-1000") + Param("divisor", "2000") + Param("clip", "0") +
                              Param("window_batch", "1")));
  ASSERT_TRUE(step);
  std::vector<float> hu;
  auto r = Run(*step, Volume({1, 8, 8, 9}, &hu));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<float> got = Floats(*OutputNamed(*r, "probability"));
  for (size_t i = 0; i < hu.size(); ++i) ASSERT_NEAR(got[i], (hu[i] + 1000.0f) / 2000.0f, 1e-6) << i;
  EXPECT_EQ(model->batches, (std::vector<int64_t>{1, 1}));  // x 9: windows at 0 and 1
}

// x 12, roi 8, overlap 0.5: windows at x 0 and 4, answered 1 and 2. Constant weights average
// them where they overlap; Gaussian weights exp(-(j - 4)^2 / 2) (sigma 0.125 * 8, j the position in
// the window) favour the window whose centre is nearer.
TEST_F(SlidingWindowBackendTest, BlendingMatchesTheAnalyticWeights) {
  for (const std::string blend : {"constant", "gaussian"}) {
    models_.versions.clear();
    Serve(std::string("name: \"seg\"\n") + kAnySizeModel, FakeOutput::kOrdinal);
    auto step = Load(StepConfig(Param("roi_size", "1,1,8") + Param("overlap", "0.5") + Param("blend", blend) +
                                Param("window_batch", "1") + Param("max_calls_in_flight", "1")));
    ASSERT_TRUE(step);
    std::vector<float> hu;
    auto r = Run(*step, Volume({1, 1, 1, 12}, &hu));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::vector<float> got = Floats(*OutputNamed(*r, "probability"));
    auto g = [](double j) { return std::exp(-0.5 * (j - 4) * (j - 4)); };
    for (int x = 0; x < 12; ++x) {
      double expected = x < 4 ? 1.0 : 2.0;
      if (x >= 4 && x < 8) expected = blend == "constant" ? 1.5 : (1 * g(x) + 2 * g(x - 4)) / (g(x) + g(x - 4));
      EXPECT_NEAR(got[x], expected, 1e-5) << blend << " x " << x;
    }
    EXPECT_EQ(IntParam(r->outputs[0].parameters, "windows"), 2);
  }
}

TEST_F(SlidingWindowBackendTest, ForegroundChannelIsTheLastByDefault) {
  Serve(std::string("name: \"seg\"\n") + kAnySizeModel, FakeOutput::kTwoChannels);
  std::vector<float> hu;
  for (const std::string channel : {"", "0"}) {
    auto step = Load(StepConfig(Param("roi_size", "4,4,4") + (channel.empty() ? "" : Param("channel", channel))));
    ASSERT_TRUE(step);
    auto r = Run(*step, Volume({1, 5, 4, 6}, &hu));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::vector<float> got = Floats(*OutputNamed(*r, "probability"));
    for (size_t i = 0; i < hu.size(); ++i) {
      const float x = std::clamp((hu[i] - 40.0f) / 100.0f, -5.0f, 5.0f);
      ASSERT_NEAR(got[i], channel.empty() ? x : 1 - x, 1e-5) << i;
    }
  }
}

TEST_F(SlidingWindowBackendTest, DrainingVersionIsLookedUpAgain) {
  // Its load finds the old version (for the roi), so does the request's first look-up; the old one
  // is draining by then, so the request goes to the version found next.
  auto old_version = Serve(std::string("name: \"seg\"\n") + kFixedModel, FakeOutput::kIdentity);
  models_.versions.push_back(old_version);
  auto new_version = Serve(std::string("name: \"seg\"\n") + kFixedModel, FakeOutput::kIdentity);
  auto step = Load(StepConfig(""));
  ASSERT_TRUE(step);
  old_version->draining = true;
  std::vector<float> hu;
  auto r = Run(*step, Volume({1, 8, 8, 8}, &hu));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(old_version->batches.empty());
  EXPECT_EQ(new_version->batches, (std::vector<int64_t>{1}));
  EXPECT_EQ(models_.finds, 3);
}

TEST_F(SlidingWindowBackendTest, ModelErrorsNameTheWindows) {
  auto model = Serve(std::string("name: \"seg\"\n") + kFixedModel, FakeOutput::kIdentity);
  model->fail_at_window = 5;
  auto step = Load(StepConfig(""));
  ASSERT_TRUE(step);
  std::vector<float> hu;
  auto r = Run(*step, Volume({1, 13, 6, 20}, &hu));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("windows 4..5 of 6 (call 2 of 2"), std::string::npos) << m;
  EXPECT_NE(m.find("model 'seg': bad window"), std::string::npos) << m;
  model->fail_at_window = -1;
  models_.versions.clear();  // unloaded
  auto gone = LoadStep(*backend_, StepConfig(""), &models_);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("no model 'seg'"), std::string::npos) << gone.status().message();
}

TEST_F(SlidingWindowBackendTest, BadConfigsAreRefusedAtLoad) {
  Serve(std::string("name: \"seg\"\n") + kAnySizeModel, FakeOutput::kIdentity);
  auto refused = [&](const std::string& config, const std::string& needle) {
    auto v = LoadStep(*backend_, config, &models_);
    ASSERT_FALSE(v.ok()) << config;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
  };
  refused(StepConfig(""), "roi_size");  // the model's size is variable
  refused(StepConfig(Param("roi_size", "8,8")), "roi_size");
  refused(StepConfig(Param("roi_size", "8,8,8") + Param("overlap", "1")), "overlap");
  refused(StepConfig(Param("roi_size", "8,8,8") + Param("blend", "max")), "blend");
  refused(StepConfig(Param("roi_size", "8,8,8") + Param("window_batch", "0")), "window_batch");
  refused(StepConfig(Param("roi_size", "8,8,8") + Param("divisor", "0")), "divisor");
  refused(StepConfig(Param("roi_size", "8,8,8") + Param("model_input", "image")), "no input 'image'");
  std::string no_model = StepConfig(Param("roi_size", "8,8,8"));
  no_model.replace(no_model.find("\"seg\""), 5, "\"lung\"");
  refused(no_model, "no model 'lung'");
  std::string bad_dims = StepConfig(Param("roi_size", "8,8,8"));
  bad_dims.replace(bad_dims.find("dims: [1, -1, -1, -1]"), 21, "dims: [-1, -1, -1]");
  refused(bad_dims, "TYPE_FP32 dims [1, -1, -1, -1]");
  auto config = ParseModelConfig(StepConfig(""), "step");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(backend_->Dependencies(*config), (std::vector<std::string>{"seg"}));
}

TEST_F(SlidingWindowBackendTest, BadVolumeIsRefused) {
  Serve(std::string("name: \"seg\"\n") + kFixedModel, FakeOutput::kIdentity);
  auto step = Load(StepConfig(""));
  ASSERT_TRUE(step);
  auto r = Run(*step, Tensor::FromVector<float>(DataType::kFloat, {2, 1, 1, 1}, {1.0f, 2.0f}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("volume"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace inferloop::serve
