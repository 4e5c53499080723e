// ReadDicomFile / ReadDicomSeries against pydicom: its own test files decoded by pydicom (+
// pylibjpeg for JPEG) and small series written with pydicom (tests/data/dicom/make_dicom_fixtures.py).
#include "imaging/dicom_series.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dicom_test_data.h"

namespace inferloop::imaging {
namespace {

using testing::ReadBytes;
using testing::ReadNpyFloats;
using testing::ReadSeriesFiles;

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

DicomVolume ReadOk(const std::string& file, const DicomReadOptions& options = {}) {
  auto v = ReadDicomFile(ReadBytes("pydicom/" + file), options);
  EXPECT_TRUE(v.ok()) << file << ": " << v.status().ToString();
  return v.ok() ? *v : DicomVolume{};
}

TEST(DicomFile, CtSmallIsInHounsfieldUnitsAsPydicomRescalesIt) {
  DicomVolume v = ReadOk("CT_small.dcm");
  EXPECT_EQ(v.depth, 1);
  EXPECT_EQ(v.height, 128);
  EXPECT_EQ(v.width, 128);
  EXPECT_EQ(v.modality, "CT");
  EXPECT_DOUBLE_EQ(v.spacing_mm[1], 0.661468);
  EXPECT_DOUBLE_EQ(v.spacing_mm[2], 0.661468);
  EXPECT_DOUBLE_EQ(v.spacing_mm[0], 5.0);  // SliceThickness: the single-slice fallback
  EXPECT_EQ(MaxAbsDiff(v.voxels, ReadNpyFloats("pydicom/CT_small.npy")), 0.0f);
  EXPECT_FALSE(v.series_instance_uid.empty());
}

// One MR image in every uncompressed and lossless encoding decodes to the same pixels.
TEST(DicomFile, MrSmallInEveryLosslessEncodingMatchesPydicom) {
  const std::vector<float> expected = ReadNpyFloats("pydicom/MR_small.npy");
  for (const char* file : {"MR_small.dcm", "MR_small_implicit.dcm", "MR_small_bigendian.dcm", "MR_small_RLE.dcm",
                           "MR_small_jpeg_ls_lossless.dcm", "MR_small_no_meta.dcm"}) {
    SCOPED_TRACE(file);
    DicomVolume v = ReadOk(file);
    EXPECT_EQ(v.height, 64);
    EXPECT_EQ(v.width, 64);
    EXPECT_DOUBLE_EQ(v.spacing_mm[2], 0.3125);
    EXPECT_EQ(MaxAbsDiff(v.voxels, expected), 0.0f);
  }
  for (const char* file : {"MR_small_implicit.npy", "MR_small_bigendian.npy", "MR_small_RLE.npy"})
    EXPECT_EQ(MaxAbsDiff(ReadNpyFloats(std::string("pydicom/") + file), expected), 0.0f) << file;
}

TEST(DicomFile, JpegExtended12BitMatchesPydicom) {
  DicomVolume v = ReadOk("JPGExtended.dcm");
  ASSERT_EQ(v.height, 1024);
  ASSERT_EQ(v.width, 256);
  std::vector<float> sub;
  for (int y = 0; y < v.height; y += 4)
    for (int x = 0; x < v.width; x += 4) sub.push_back(v.voxels[size_t(y) * v.width + x]);
  // Lossy: IJG (DCMTK) and libjpeg (pylibjpeg) may round the inverse DCT differently.
  EXPECT_LE(MaxAbsDiff(sub, ReadNpyFloats("pydicom/JPGExtended.npy")), 1.0f);
}

TEST(DicomFile, ColourJpegBaselineAndLosslessMatchPydicom) {
  DicomVolume lossless = ReadOk("SC_rgb_jpeg_gdcm.dcm");
  EXPECT_EQ(lossless.channels, 3);
  EXPECT_EQ(lossless.photometric_interpretation, "RGB");
  EXPECT_EQ(MaxAbsDiff(lossless.voxels, ReadNpyFloats("pydicom/SC_rgb_jpeg_gdcm.npy")), 0.0f);
  DicomVolume baseline = ReadOk("SC_rgb_jpeg_dcmtk.dcm");  // YBR_FULL, converted to RGB
  EXPECT_EQ(baseline.channels, 3);
  EXPECT_EQ(baseline.photometric_interpretation, "RGB");
  EXPECT_LE(MaxAbsDiff(baseline.voxels, ReadNpyFloats("pydicom/SC_rgb_jpeg_dcmtk.npy")), 2.0f);
}

TEST(DicomFile, MultiFrameRleDoseGridMatchesPydicom) {
  // This file stores PixelSpacing with VR UN, which DCMTK does not interpret: no spacing.
  DicomReadOptions options;
  options.require_pixel_spacing = false;
  DicomVolume v = ReadOk("rtdose_rle.dcm", options);
  ASSERT_EQ(v.depth, 15);
  EXPECT_EQ(v.height, 10);
  EXPECT_EQ(v.width, 10);
  EXPECT_EQ(MaxAbsDiff(v.voxels, ReadNpyFloats("pydicom/rtdose_rle.npy")), 0.0f);
  EXPECT_EQ(v.source_frame_index.back(), 14);
  EXPECT_EQ(v.spacing_mm[2], 1.0);
  EXPECT_FALSE(ReadDicomFile(ReadBytes("pydicom/rtdose_rle.dcm")).ok());  // spacing required by default
}

TEST(DicomFile, RefusesJpeg2000AsUnsupportedTransferSyntax) {
  auto v = ReadDicomFile(ReadBytes("pydicom/MR_small_jp2klossless.dcm"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("unsupported transfer syntax"), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find("1.2.840.10008.1.2.4.90"), std::string::npos) << v.status().message();
}

TEST(DicomFile, RefusesAVolumeOverTheVoxelLimit) {
  DicomReadOptions options;
  options.max_voxels = 128 * 128 - 1;
  auto v = ReadDicomFile(ReadBytes("pydicom/CT_small.dcm"), options);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("exceeds the limit"), std::string::npos) << v.status().message();
}

TEST(DicomFile, BadBytesAreErrorsNotCrashes) {
  const std::string ct = ReadBytes("pydicom/CT_small.dcm");
  std::vector<std::string> inputs = {"", "not a dicom file at all", std::string(300, '\0'),
                                     ct.substr(0, 132), ct.substr(0, ct.size() / 2), ct.substr(0, ct.size() - 1)};
  std::mt19937 rng(15);
  for (int trial = 0; trial < 200; ++trial) {  // flipped bytes anywhere in the file
    std::string damaged = ct;
    for (int k = 0; k < 8; ++k) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    inputs.push_back(damaged);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto v = ReadDicomFile(inputs[i]);
    if (i < 6) {
      ASSERT_FALSE(v.ok()) << "input " << i;
      EXPECT_NE(v.status().message().find("DICOM file 0"), std::string::npos) << v.status().message();
    } else if (v.ok()) {
      EXPECT_EQ(v->voxels.size(), v->VoxelCount());
    }
  }
}

std::vector<std::string_view> Views(const std::vector<std::string>& files) {
  return std::vector<std::string_view>(files.begin(), files.end());
}

void ExpectSeriesMatches(const std::string& name, const DicomVolume& v) {
  EXPECT_EQ(MaxAbsDiff(v.voxels, ReadNpyFloats("series/" + name + "/expected.npy")), 0.0f);
  const std::vector<float> order = ReadNpyFloats("series/" + name + "/order.npy");
  ASSERT_EQ(v.source_file_index.size(), order.size());
  for (size_t z = 0; z < order.size(); ++z) EXPECT_EQ(v.source_file_index[z], static_cast<int>(order[z])) << z;
}

TEST(DicomSeries, ShuffledAxialSeriesIsSortedAlongTheNormalAndRescaled) {
  const auto files = ReadSeriesFiles("axial_shuffled");
  auto v = ReadDicomSeries(Views(files));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->depth, 5);
  EXPECT_EQ(v->height, 6);
  EXPECT_EQ(v->width, 5);
  EXPECT_NEAR(v->spacing_mm[0], 1.25, 1e-9);
  EXPECT_DOUBLE_EQ(v->spacing_mm[1], 0.7);
  EXPECT_DOUBLE_EQ(v->spacing_mm[2], 0.9);
  EXPECT_DOUBLE_EQ(v->origin_mm[2], 25.0);  // the lowest slice, 30 - 4 * 1.25
  ExpectSeriesMatches("axial_shuffled", *v);
}

TEST(DicomSeries, CoronalSeriesWithSlopeAndInterceptIsSortedAlongItsNormal) {
  const auto files = ReadSeriesFiles("coronal_rescaled");
  auto v = ReadDicomSeries(Views(files));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_NEAR(v->spacing_mm[0], 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(v->spacing_mm[1], 0.5);
  EXPECT_DOUBLE_EQ(v->spacing_mm[2], 0.75);
  EXPECT_NEAR(v->slice_normal[1], 1.0, 1e-12);
  ExpectSeriesMatches("coronal_rescaled", *v);
}

TEST(DicomSeries, RleSeriesWrittenByPydicomDecodes) {
  const auto files = ReadSeriesFiles("rle");
  auto v = ReadDicomSeries(Views(files));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_NEAR(v->spacing_mm[0], 3.0, 1e-9);
  ExpectSeriesMatches("rle", *v);
}

void ExpectSeriesError(const std::string& name, const std::string& needle, const std::string& file_label) {
  const auto files = ReadSeriesFiles(name);
  auto v = ReadDicomSeries(Views(files));
  ASSERT_FALSE(v.ok()) << name;
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find(file_label), std::string::npos) << v.status().message();
}

TEST(DicomSeries, BrokenSeriesAreRefusedNamingTheFile) {
  ExpectSeriesError("mixed_uids", "mixed series", "DICOM file ");
  ExpectSeriesError("no_pixel_data", "no pixel data", "DICOM file 0");
  ExpectSeriesError("no_spacing", "no PixelSpacing", "DICOM file 0");
  ExpectSeriesError("size_mismatch", "image size", "DICOM file ");
  ExpectSeriesError("duplicate_position", "duplicate slice", "DICOM file ");
  ExpectSeriesError("missing_slice", "uneven slice spacing", "DICOM file ");
  auto empty = ReadDicomSeries({});
  EXPECT_FALSE(empty.ok());
}

TEST(DicomSeries, VoxelLimitCoversTheWholeSeries) {
  const auto files = ReadSeriesFiles("axial_shuffled");
  DicomReadOptions options;
  options.max_voxels = 6 * 5 * 3;  // three of the five slices
  auto v = ReadDicomSeries(Views(files), options);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("DICOM file 3"), std::string::npos) << v.status().message();
}

}  // namespace
}  // namespace inferloop::imaging
