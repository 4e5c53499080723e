// The lesion_report backend through the model lifecycle on a synthetic probability map with two
// balls whose voxel counts are counted here: findings largest first with volumes in mm3
// (voxels x spacing), centroids (the balls' centres x spacing), boxes, max probability and mean
// HU; the JSON report's fields and the ensemble trace's steps as its stages; the overlay PNG
// decodes (libpng) to the slice's size, windowed HU with the largest finding outlined in red;
// threshold, min_volume_mm3 and connectivity change what is found; bad inputs and configs are
// InvalidArgument naming the problem.
#include "backends/lesion_report/lesion_report_backend.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>

#include "imaging/image_codec.h"
#include "unit/backends/processing_step_harness.h"
#include "unit/comma_decimal_locale.h"

namespace inferloop::serve {
namespace {

using testing::Floats;
using testing::InferNow;
using testing::LoadStep;
using testing::NoModels;
using testing::OutputNamed;

constexpr int64_t kZ = 12, kY = 20, kX = 24;
const std::vector<float> kSpacing = {2.0f, 0.5f, 0.75f};

struct Ball {
  int z, y, x, r;
  float probability, hu;
  float peak;  // the probability at the centre
  bool Contains(int64_t zz, int64_t yy, int64_t xx) const {
    return (zz - z) * (zz - z) + (yy - y) * (yy - y) + (xx - x) * (xx - x) <= r * r;
  }
  int64_t Voxels() const {
    int64_t n = 0;
    for (int64_t zz = 0; zz < kZ; ++zz)
      for (int64_t yy = 0; yy < kY; ++yy)
        for (int64_t xx = 0; xx < kX; ++xx) n += Contains(zz, yy, xx);
    return n;
  }
};

const Ball kLarge{4, 6, 7, 3, 0.9f, 60.0f, 0.9f};
const Ball kSmall{8, 14, 16, 2, 0.8f, -20.0f, 0.95f};

std::string StepConfig(const std::string& parameters = "", const std::string& findings_dims = "[-1, 13]") {
  return R"(backend: "lesion_report"
max_batch_size: 0
input [{ name: "probability" data_type: TYPE_FP32 dims: [1, -1, -1, -1] },
       { name: "spacing" data_type: TYPE_FP32 dims: [3] },
       { name: "volume" data_type: TYPE_FP32 dims: [1, -1, -1, -1] optional: true },
       { name: "trace" data_type: TYPE_STRING dims: [1] optional: true }]
output [{ name: "findings" data_type: TYPE_FP32 dims: )" +
         findings_dims + R"( },
        { name: "report" data_type: TYPE_STRING dims: [1] },
        { name: "overlay" data_type: TYPE_STRING dims: [1] }]
)" + parameters;
}

std::string Param(const std::string& key, const std::string& value) {
  return "parameters { key: \"" + key + "\" value: { string_value: \"" + value + "\" } }\n";
}

// probability 0.1 and HU 0 outside the balls.
std::vector<InferInput> Inputs(const std::vector<Ball>& balls, bool with_volume, const std::string& trace = "") {
  std::vector<float> p(kZ * kY * kX, 0.1f), hu(kZ * kY * kX, 0.0f);
  for (int64_t z = 0, i = 0; z < kZ; ++z)
    for (int64_t y = 0; y < kY; ++y)
      for (int64_t x = 0; x < kX; ++x, ++i)
        for (const Ball& b : balls)
          if (b.Contains(z, y, x)) {
            p[i] = b.probability;
            hu[i] = b.hu;
          }
  for (const Ball& b : balls) p[(b.z * kY + b.y) * kX + b.x] = b.peak;
  std::vector<InferInput> in;
  in.push_back({"probability", Tensor::FromVector<float>(DataType::kFloat, {1, kZ, kY, kX}, p), {}});
  in.push_back({"spacing", Tensor::FromVector<float>(DataType::kFloat, {3}, kSpacing), {}});
  if (with_volume) in.push_back({"volume", Tensor::FromVector<float>(DataType::kFloat, {1, kZ, kY, kX}, hu), {}});
  if (!trace.empty()) in.push_back({"trace", Tensor::FromStrings({1}, {trace}), {}});
  return in;
}

class LesionReportBackendTest : public ::testing::Test {
 protected:
  std::shared_ptr<ModelVersion> Load(const std::string& config) {
    auto v = LoadStep(*backend_, config, &models_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : nullptr;
  }
  std::shared_ptr<ModelBackend> backend_ = backends::MakeLesionReportBackend();
  NoModels models_;
};

double Mm3(int64_t voxels) { return static_cast<double>(voxels) * 2.0 * 0.5 * 0.75; }

TEST_F(LesionReportBackendTest, FindingsAreTheBallsLargestFirst) {
  auto step = Load(StepConfig());
  ASSERT_TRUE(step);
  auto r = InferNow(*step, Inputs({kSmall, kLarge}, true));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor* f = OutputNamed(*r, "findings");
  ASSERT_EQ(f->shape(), (Shape{2, 13}));
  const std::vector<float> v = Floats(*f);
  const Ball* order[2] = {&kLarge, &kSmall};
  for (int k = 0; k < 2; ++k) {
    const Ball& b = *order[k];
    const float* row = v.data() + 13 * k;
    EXPECT_NEAR(row[0], Mm3(b.Voxels()), 1e-3) << k;
    EXPECT_EQ(row[1], static_cast<float>(b.Voxels())) << k;
    EXPECT_NEAR(row[2], b.z * 2.0, 1e-4);  // a ball's centroid is its centre
    EXPECT_NEAR(row[3], b.y * 0.5, 1e-4);
    EXPECT_NEAR(row[4], b.x * 0.75, 1e-4);
    EXPECT_EQ(std::vector<float>(row + 5, row + 11),
              (std::vector<float>{float(b.z - b.r), float(b.y - b.r), float(b.x - b.r), float(b.z + b.r),
                                  float(b.y + b.r), float(b.x + b.r)}));
    EXPECT_FLOAT_EQ(row[11], k == 0 ? 0.9f : 0.95f);
    EXPECT_FLOAT_EQ(row[12], b.hu);
  }
}

TEST_F(LesionReportBackendTest, ReportHasTheFindingsSettingsAndStages) {
  auto step = Load(StepConfig(Param("threshold", "0.5")));
  ASSERT_TRUE(step);
  const std::string trace =
      R"({"ensemble":"ct","version":"1","steps":[{"step":"read","model":"dicom","version":"1","outcome":"ran","ms":1.5},)"
      R"({"step":"seg","model":"sliding","version":"2","outcome":"ran","ms":20.25}]})";
  auto r = InferNow(*step, Inputs({kLarge, kSmall}, true, trace), {"report"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->outputs.size(), 1u);  // only what was asked for
  rapidjson::Document d;
  const std::string& json = OutputNamed(*r, "report")->strings()[0];
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  ASSERT_TRUE(d["findings"].IsArray());
  ASSERT_EQ(d["findings"].Size(), 2u) << json;
  const auto& first = d["findings"][0];
  EXPECT_EQ(first["id"].GetInt(), 1);
  EXPECT_EQ(first["voxels"].GetInt64(), kLarge.Voxels());
  EXPECT_NEAR(first["volume_mm3"].GetDouble(), Mm3(kLarge.Voxels()), 1e-3);
  EXPECT_NEAR(first["centroid_mm"][0].GetDouble(), 8.0, 1e-4);
  EXPECT_NEAR(first["centroid_mm"][1].GetDouble(), 3.0, 1e-4);
  EXPECT_NEAR(first["centroid_mm"][2].GetDouble(), 5.25, 1e-4);
  EXPECT_EQ(first["bbox"]["min"][2].GetInt(), kLarge.x - kLarge.r);
  EXPECT_EQ(first["bbox"]["max"][0].GetInt(), kLarge.z + kLarge.r);
  EXPECT_NEAR(first["max_prob"].GetDouble(), 0.9, 1e-6);
  EXPECT_NEAR(first["mean_hu"].GetDouble(), 60.0, 1e-4);
  EXPECT_EQ(d["findings"][1]["id"].GetInt(), 2);
  EXPECT_NEAR(d["findings"][1]["mean_hu"].GetDouble(), -20.0, 1e-4);
  EXPECT_DOUBLE_EQ(d["threshold"].GetDouble(), 0.5);
  EXPECT_EQ(d["connectivity"].GetInt(), 26);
  EXPECT_DOUBLE_EQ(d["spacing_mm"][2].GetDouble(), 0.75);
  EXPECT_EQ(d["shape"][1].GetInt(), kY);
  EXPECT_EQ(d["overlay_slice"].GetInt(), kLarge.z);
  ASSERT_TRUE(d["stages"].IsArray()) << json;
  ASSERT_EQ(d["stages"].Size(), 2u);
  EXPECT_STREQ(d["stages"][1]["model"].GetString(), "sliding");
  EXPECT_DOUBLE_EQ(d["stages"][1]["ms"].GetDouble(), 20.25);

  // Without the volume: mean_hu is null; without the trace: no stages.
  auto bare = InferNow(*step, Inputs({kLarge}, false), {"report"});
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  rapidjson::Document b;
  b.Parse(OutputNamed(*bare, "report")->strings()[0].c_str());
  ASSERT_FALSE(b.HasParseError());
  EXPECT_TRUE(b["findings"][0]["mean_hu"].IsNull());
  EXPECT_FALSE(b.HasMember("stages"));
}

// In a host program whose locale writes ',' as the decimal point (Python, a C API user), the
// report is still JSON with its numbers: printf's %.7g wrote "volume_mm3":1234,5 there.
TEST_F(LesionReportBackendTest, ReportNumbersIgnoreTheProcessLocale) {
  inferloop::testing::CommaDecimalLocale locale;
  ASSERT_TRUE(locale.ok()) << locale.why();
  auto step = Load(StepConfig(Param("threshold", "0.5")));
  ASSERT_TRUE(step);
  auto r = InferNow(*step, Inputs({kLarge}, true), {"report"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string& json = OutputNamed(*r, "report")->strings()[0];
  rapidjson::Document d;
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_DOUBLE_EQ(d["threshold"].GetDouble(), 0.5);
  EXPECT_NEAR(d["findings"][0]["centroid_mm"][2].GetDouble(), 5.25, 1e-4) << json;
  EXPECT_DOUBLE_EQ(d["spacing_mm"][2].GetDouble(), 0.75);
}

TEST_F(LesionReportBackendTest, OverlayIsTheCentroidSliceWithTheLargestFindingOutlined) {
  auto step = Load(StepConfig());
  ASSERT_TRUE(step);
  auto r = InferNow(*step, Inputs({kLarge, kSmall}, true), {"overlay"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto png = imaging::DecodeImage(OutputNamed(*r, "overlay")->strings()[0], {});
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  ASSERT_EQ(png->height, kY);
  ASSERT_EQ(png->width, kX);
  ASSERT_EQ(png->channels, 3);
  auto pixel = [&](int y, int x) {
    const uint8_t* p = png->pixels.data() + (static_cast<size_t>(y) * kX + x) * 3;
    return std::vector<int>{p[0], p[1], p[2]};
  };
  // Window 40 / 400: 60 HU -> round(255 * 220 / 400) = 140; 0 HU -> round(255 * 160 / 400) = 102.
  EXPECT_EQ(pixel(kLarge.y, kLarge.x), (std::vector<int>{140, 140, 140}));
  EXPECT_EQ(pixel(0, 0), (std::vector<int>{102, 102, 102}));
  EXPECT_EQ(pixel(kLarge.y, kLarge.x - kLarge.r), (std::vector<int>{255, 0, 0}));  // the ball's edge
  EXPECT_EQ(pixel(kLarge.y + kLarge.r, kLarge.x), (std::vector<int>{255, 0, 0}));
  EXPECT_EQ(pixel(kSmall.y, kSmall.x), (std::vector<int>{102, 102, 102}));  // not in this slice
}

TEST_F(LesionReportBackendTest, NoFindingGivesAnEmptyTableAndTheMiddleSlice) {
  auto step = Load(StepConfig());
  ASSERT_TRUE(step);
  auto r = InferNow(*step, Inputs({}, true));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(OutputNamed(*r, "findings")->shape(), (Shape{0, 13}));
  rapidjson::Document d;
  d.Parse(OutputNamed(*r, "report")->strings()[0].c_str());
  EXPECT_EQ(d["findings"].Size(), 0u);
  EXPECT_EQ(d["overlay_slice"].GetInt(), kZ / 2);
  auto png = imaging::DecodeImage(OutputNamed(*r, "overlay")->strings()[0], {});
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->height, kY);
  for (size_t i = 0; i < png->pixels.size(); ++i) ASSERT_EQ(png->pixels[i], 102) << i;
}

TEST_F(LesionReportBackendTest, ParametersChangeWhatIsFound) {
  // min_volume_mm3 between the two balls' volumes keeps only the large one.
  const double between = (Mm3(kLarge.Voxels()) + Mm3(kSmall.Voxels())) / 2;
  auto big_only = Load(StepConfig(Param("min_volume_mm3", std::to_string(between))));
  ASSERT_TRUE(big_only);
  auto r = InferNow(*big_only, Inputs({kLarge, kSmall}, true), {"findings"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(OutputNamed(*r, "findings")->dim(0), 1);
  // threshold 0.85 keeps the large ball (0.9) and the small ball's centre (0.95).
  auto strict = Load(StepConfig(Param("threshold", "0.85")));
  r = InferNow(*strict, Inputs({kLarge, kSmall}, true), {"findings"});
  ASSERT_TRUE(r.ok());
  const std::vector<float> v = Floats(*OutputNamed(*r, "findings"));
  ASSERT_EQ(v.size(), 26u);
  EXPECT_EQ(v[13 + 1], 1.0f);
  // Two single voxels touching at a corner: one finding with 26-connectivity, two with 6.
  for (const std::string c : {"26", "6"}) {
    auto step = Load(StepConfig(Param("connectivity", c)));
    std::vector<InferInput> in = Inputs({}, false);
    float* p = in[0].tensor.data<float>();
    p[0] = 0.9f;
    p[(1 * kY + 1) * kX + 1] = 0.9f;
    r = InferNow(*step, std::move(in), {"findings"});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(OutputNamed(*r, "findings")->dim(0), c == "26" ? 1 : 2) << c;
  }
}

TEST_F(LesionReportBackendTest, BadInputsAreInvalidArgumentNamingThem) {
  auto step = Load(StepConfig());
  ASSERT_TRUE(step);
  auto refused = [&](std::vector<InferInput> in, const std::string& needle) {
    auto r = InferNow(*step, std::move(in));
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  std::vector<InferInput> zero_spacing = Inputs({kLarge}, true);
  zero_spacing[1].tensor.data<float>()[1] = 0.0f;
  refused(std::move(zero_spacing), "input 'spacing'");
  std::vector<InferInput> nan_spacing = Inputs({kLarge}, true);
  nan_spacing[1].tensor.data<float>()[0] = std::nanf("");
  refused(std::move(nan_spacing), "input 'spacing'");
  std::vector<InferInput> small_volume = Inputs({kLarge}, false);
  small_volume.push_back({"volume", Tensor::FromVector<float>(DataType::kFloat, {1, 1, 1, 1}, {0.0f}), {}});
  refused(std::move(small_volume), "input 'volume'");
  refused(Inputs({kLarge}, true, "not json"), "input 'trace' is not JSON");
  refused(Inputs({kLarge}, true, "{\"steps\": 3}"), "input 'trace'");
  std::vector<InferInput> no_spacing = Inputs({kLarge}, true);
  no_spacing.erase(no_spacing.begin() + 1);
  refused(std::move(no_spacing), "spacing");
}

TEST_F(LesionReportBackendTest, BadConfigsAreRefusedAtLoad) {
  auto refused = [&](const std::string& config, const std::string& needle) {
    auto v = LoadStep(*backend_, config, &models_);
    ASSERT_FALSE(v.ok()) << config;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
  };
  refused(StepConfig("", "[-1, 8]"), "output 'findings'");
  refused(StepConfig(Param("connectivity", "18")), "connectivity");
  refused(StepConfig(Param("threshold", "high")), "threshold");
  refused(StepConfig(Param("min_volume_mm3", "-1")), "min_volume_mm3");
  refused(StepConfig(Param("window_width", "0")), "window_width");
  std::string renamed = StepConfig();
  renamed.replace(renamed.find("\"overlay\""), 9, "\"picture\"");
  refused(renamed, "output 'picture'");
}

}  // namespace
}  // namespace inferloop::serve
