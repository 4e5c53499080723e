// The dicom_series backend through the model lifecycle (Load with a parsed config, Infer with a
// callback) on the DICOM fixtures of tests/data/dicom (written by pydicom: make_dicom_fixtures.py):
// a shuffled series comes out sorted and in HU as pydicom's expected.npy says, with its spacing and
// origin; target_spacing resamples (halving z spacing interpolates between neighbouring slices);
// broken series, bytes that are not DICOM and volumes over max_voxels fail the request with
// InvalidArgument naming the problem and the file; bad configs are refused at load.
#include "backends/dicom/dicom_series_backend.h"

#include <gtest/gtest.h>

#include "unit/backends/processing_step_harness.h"
#include "unit/imaging/dicom_test_data.h"

namespace inferloop::serve {
namespace {

using imaging::testing::ReadNpyFloats;
using imaging::testing::ReadSeriesFiles;
using testing::Floats;
using testing::InferNow;
using testing::LoadStep;
using testing::NoModels;
using testing::OutputNamed;

std::string Config(const std::string& parameters = "", const std::string& extra_outputs = "") {
  return R"(backend: "dicom_series"
max_batch_size: 0
input [{ name: "files" data_type: TYPE_STRING dims: [-1] }]
output [{ name: "volume" data_type: TYPE_FP32 dims: [1, -1, -1, -1] },
        { name: "spacing" data_type: TYPE_FP32 dims: [3] },
        { name: "origin" data_type: TYPE_FP32 dims: [3] })" +
         extra_outputs + "]\n" + parameters;
}

std::string Param(const std::string& key, const std::string& value) {
  return "parameters { key: \"" + key + "\" value: { string_value: \"" + value + "\" } }\n";
}

class DicomSeriesBackendTest : public ::testing::Test {
 protected:
  std::shared_ptr<ModelVersion> Load(const std::string& config) {
    auto v = LoadStep(*backend_, config, &models_);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : nullptr;
  }
  Result<InferResponse> Read(ModelVersion& v, std::vector<std::string> files) {
    const int64_t n = static_cast<int64_t>(files.size());
    return InferNow(v, {{"files", Tensor::FromStrings({n}, std::move(files)), {}}});
  }
  void ExpectRefused(ModelVersion& v, std::vector<std::string> files, const std::string& needle,
                     const std::string& file_label) {
    auto r = Read(v, std::move(files));
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(file_label), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("input 'files'"), std::string::npos) << r.status().message();
  }

  std::shared_ptr<ModelBackend> backend_ = backends::MakeDicomSeriesBackend();
  NoModels models_;
};

TEST_F(DicomSeriesBackendTest, ShuffledSeriesComesOutSortedInHounsfieldUnits) {
  auto v = Load(Config());
  ASSERT_TRUE(v);
  auto r = Read(*v, ReadSeriesFiles("axial_shuffled"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor* volume = OutputNamed(*r, "volume");
  ASSERT_TRUE(volume);
  EXPECT_EQ(volume->shape(), (Shape{1, 5, 6, 5}));
  EXPECT_EQ(Floats(*volume), ReadNpyFloats("series/axial_shuffled/expected.npy"));
  const std::vector<float> spacing = Floats(*OutputNamed(*r, "spacing"));
  ASSERT_EQ(spacing.size(), 3u);
  EXPECT_NEAR(spacing[0], 1.25f, 1e-6);
  EXPECT_FLOAT_EQ(spacing[1], 0.7f);
  EXPECT_FLOAT_EQ(spacing[2], 0.9f);
  // The lowest slice's ImagePositionPatient (x, y, z): (-10, 20, 30 - 4 * 1.25).
  EXPECT_EQ(Floats(*OutputNamed(*r, "origin")), (std::vector<float>{-10.0f, 20.0f, 25.0f}));
}

TEST_F(DicomSeriesBackendTest, CoronalAndRleSeriesMatchPydicom) {
  auto v = Load(Config());
  ASSERT_TRUE(v);
  for (const std::string name : {"coronal_rescaled", "rle"}) {
    auto r = Read(*v, ReadSeriesFiles(name));
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    EXPECT_EQ(Floats(*OutputNamed(*r, "volume")), ReadNpyFloats("series/" + name + "/expected.npy")) << name;
  }
}

TEST_F(DicomSeriesBackendTest, TargetSpacingResamplesTrilinearly) {
  // z spacing 1.25 -> 0.625: slice 2k is slice k, slice 2k+1 the mean of slices k and k+1; y and x
  // keep their spacing, so their values are untouched.
  auto v = Load(Config(Param("target_spacing", "0.625, 0.7, 0.9")));
  ASSERT_TRUE(v);
  auto r = Read(*v, ReadSeriesFiles("axial_shuffled"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor* volume = OutputNamed(*r, "volume");
  ASSERT_EQ(volume->shape(), (Shape{1, 9, 6, 5}));
  const std::vector<float> in = ReadNpyFloats("series/axial_shuffled/expected.npy");
  const std::vector<float> out = Floats(*volume);
  const size_t plane = 6 * 5;
  for (size_t z = 0; z < 9; ++z)
    for (size_t i = 0; i < plane; ++i) {
      const float expected = z % 2 == 0 ? in[z / 2 * plane + i] : 0.5f * (in[z / 2 * plane + i] + in[(z / 2 + 1) * plane + i]);
      ASSERT_NEAR(out[z * plane + i], expected, 1e-3) << "z " << z << " i " << i;
    }
  EXPECT_EQ(Floats(*OutputNamed(*r, "spacing")), (std::vector<float>{0.625f, 0.7f, 0.9f}));
  EXPECT_EQ(Floats(*OutputNamed(*r, "origin")), (std::vector<float>{-10.0f, 20.0f, 25.0f}));
}

TEST_F(DicomSeriesBackendTest, BrokenSeriesFailNamingTheProblemAndTheFile) {
  auto v = Load(Config());
  ASSERT_TRUE(v);
  ExpectRefused(*v, ReadSeriesFiles("mixed_uids"), "mixed series", "DICOM file ");
  ExpectRefused(*v, ReadSeriesFiles("no_pixel_data"), "no pixel data", "DICOM file 0");
  ExpectRefused(*v, ReadSeriesFiles("no_spacing"), "no PixelSpacing", "DICOM file 0");
  ExpectRefused(*v, ReadSeriesFiles("duplicate_position"), "duplicate slice", "DICOM file ");
  std::vector<std::string> files = ReadSeriesFiles("axial_shuffled");
  files[2] = "not a DICOM file";
  ExpectRefused(*v, files, "", "DICOM file 2");
  ExpectRefused(*v, {std::string(400, '\0')}, "", "DICOM file 0");
  // The server still answers after the failures.
  EXPECT_TRUE(Read(*v, ReadSeriesFiles("rle")).ok());
}

TEST_F(DicomSeriesBackendTest, MissingSpacingReadsAsOneMillimetreWhenNotRequired) {
  auto v = Load(Config(Param("require_pixel_spacing", "false")));
  ASSERT_TRUE(v);
  auto r = Read(*v, ReadSeriesFiles("no_spacing"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(*OutputNamed(*r, "spacing")), (std::vector<float>{1.0f, 1.0f, 1.0f}));
}

TEST_F(DicomSeriesBackendTest, VoxelLimitCoversReadingAndResampling) {
  auto small = Load(Config(Param("max_voxels", "90")));  // 3 of the 5 slices of 6 x 5
  ASSERT_TRUE(small);
  ExpectRefused(*small, ReadSeriesFiles("axial_shuffled"), "exceeds the limit", "DICOM file 3");
  // 150 values read, but resampling to 0.125 mm in z would make 41 slices of 30.
  auto grow = Load(Config(Param("max_voxels", "600") + Param("target_spacing", "0.125,0.7,0.9")));
  ASSERT_TRUE(grow);
  auto r = Read(*grow, ReadSeriesFiles("axial_shuffled"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("resampling"), std::string::npos) << r.status().message();
}

TEST_F(DicomSeriesBackendTest, BadConfigsAreRefusedAtLoad) {
  auto refused = [&](const std::string& config, const std::string& needle) {
    auto v = LoadStep(*backend_, config, &models_);
    ASSERT_FALSE(v.ok()) << config;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
  };
  refused(Config(Param("target_spacing", "1,1")), "target_spacing");
  refused(Config(Param("target_spacing", "1,0,1")), "target_spacing");
  refused(Config(Param("max_voxels", "lots")), "max_voxels");
  refused(Config(Param("require_pixel_spacing", "maybe")), "require_pixel_spacing");
  refused(Config("", ", { name: \"labels\" data_type: TYPE_FP32 dims: [3] }"), "output 'labels'");
  std::string batched = Config();
  batched.replace(batched.find("max_batch_size: 0"), 17, "max_batch_size: 4");
  refused(batched, "max_batch_size");
}

}  // namespace
}  // namespace inferloop::serve
