// DICOM series -> one volume. Each input is the bytes of one DICOM file (Part 10 with preamble
// and meta header, or a bare data set when DCMTK can detect its encoding). Transfer syntaxes:
// implicit/explicit VR little endian, explicit VR big endian, deflated, JPEG baseline/extended/
// lossless, JPEG-LS and RLE (decoded by DCMTK). Pixel values are rescaled by RescaleSlope /
// RescaleIntercept (1 / 0 when absent), so a CT series comes out in Hounsfield units.
//
// Geometry (patient coordinates, mm): slices are sorted by their ImagePositionPatient projected on
// the slice normal (row cosine x column cosine of ImageOrientationPatient), not by file order.
// spacing z is the distance between consecutive positions along that normal (SliceThickness only
// for a single slice); x/y come from PixelSpacing. Every failure is a Status, never a crash:
// InvalidArgument naming the file index for bytes that are not DICOM, no pixel data, mixed
// SeriesInstanceUIDs, missing PixelSpacing, rows/columns that differ between slices, duplicate or
// unevenly spaced positions, an unsupported transfer syntax or pixel format, and a volume over
// DicomReadOptions::max_voxels.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::imaging {

struct DicomReadOptions {
  // Refuse a volume with more values (depth * height * width * channels) than this.
  int64_t max_voxels = int64_t{1024} * 1024 * 1024;
  // PixelSpacing absent: an error when true, 1 mm when false.
  bool require_pixel_spacing = true;
  // Apply RescaleSlope / RescaleIntercept (Modality LUT). False gives the stored values.
  bool apply_rescale = true;
};

struct DicomVolume {
  int depth = 0, height = 0, width = 0;
  int channels = 1;  // SamplesPerPixel: 1 for CT/MR, 3 for RGB (after JPEG YBR->RGB decoding)
  // [Z, Y, X, C] row-major, rescaled modality values (HU for CT).
  std::vector<float> voxels;
  std::array<double, 3> spacing_mm{1, 1, 1};  // {z, y, x}
  // ImagePositionPatient of the first slice (the centre of its first voxel), patient x, y, z.
  std::array<double, 3> origin_mm{0, 0, 0};
  // ImageOrientationPatient: row direction cosines then column direction cosines.
  std::array<double, 6> orientation{1, 0, 0, 0, 1, 0};
  std::array<double, 3> slice_normal{0, 0, 1};  // row x column: the direction z grows in
  std::string series_instance_uid;
  std::string modality;                    // e.g. "CT"
  std::string photometric_interpretation;  // e.g. "MONOCHROME2", "RGB" (MONOCHROME1 is not inverted)
  std::vector<int> source_file_index;      // per slice: which input file it came from
  std::vector<int> source_frame_index;     // per slice: which frame of that file

  size_t VoxelCount() const {
    return static_cast<size_t>(depth) * static_cast<size_t>(height) * static_cast<size_t>(width) *
           static_cast<size_t>(channels);
  }
};

// Reads the files of one series into a volume sorted along the slice normal. Multi-frame files
// are refused here when there is more than one file (use ReadDicomFile for one multi-frame file).
Result<DicomVolume> ReadDicomSeries(const std::vector<std::string_view>& files, const DicomReadOptions& options = {});

// One file: a single slice, or every frame of a multi-frame file (frames stacked along the normal,
// spaced by SpacingBetweenSlices, else SliceThickness, else 1 mm).
Result<DicomVolume> ReadDicomFile(std::string_view bytes, const DicomReadOptions& options = {});

}  // namespace inferloop::imaging
