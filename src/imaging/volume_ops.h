// Operations on DicomVolume (imaging/dicom_series.h) for CT/MR pipelines: intensity windowing,
// resampling to a target spacing, and an 8-bit picture of one slice.
//
// Window: value v maps to clamp((v - (center - width / 2)) / width, 0, 1), so [center - width/2,
// center + width/2] spans [0, 1] (MONAI's ScaleIntensityRange with a_min/a_max from the window;
// DICOM's VOI LUT formula differs from this by half a unit). The 8-bit form is round(255 * that).
//
// Resampling grid convention: the first voxel centres of input and output coincide (the origin does
// not move); output voxel i along an axis sits at i * target_spacing from it, and the output has
// floor((n - 1) * spacing / target_spacing + 1e-6) + 1 voxels, so it never reaches past the last
// input centre. Values are trilinear in the input (per channel). source_file_index/
// source_frame_index are cleared: output slices no longer map to one file each.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "imaging/dicom_series.h"
#include "imaging/image.h"
#include "inferloop/status.h"

namespace inferloop::imaging {

struct IntensityWindow {
  double center = 40;  // e.g. soft tissue: center 40, width 400 HU
  double width = 400;
};

// InvalidArgument unless width > 0 and both are finite.
Status CheckWindow(const IntensityWindow& window);

// Values scaled to [0, 1] by the window (see the top of this file).
Result<std::vector<float>> WindowToUnit(const std::vector<float>& values, const IntensityWindow& window);
// The same as round(255 * unit value).
Result<std::vector<uint8_t>> WindowToUint8(const std::vector<float>& values, const IntensityWindow& window);

// Trilinear resampling to `target_spacing_mm` {z, y, x}; refuses non-positive spacings, an empty
// volume, and an output of more than max_voxels values.
Result<DicomVolume> ResampleVolume(const DicomVolume& volume, const std::array<double, 3>& target_spacing_mm,
                                   int64_t max_voxels = int64_t{1024} * 1024 * 1024);

// Slice z (0-based, along the sorted axis) as an 8-bit image through the window: gray for one
// channel, RGB for three.
Result<Image> SliceToImage(const DicomVolume& volume, int z, const IntensityWindow& window);

}  // namespace inferloop::imaging
