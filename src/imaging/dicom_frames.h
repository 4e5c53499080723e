// One DICOM file's frames and the attributes a volume needs, decoded through DCMTK (internal to
// src/imaging's DICOM reader: dicom_series.cc assembles these into a DicomVolume). Errors are
// InvalidArgument with "DICOM file <file_index>: " in front.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "imaging/dicom_series.h"
#include "inferloop/status.h"

namespace inferloop::imaging {

struct DicomFileFrames {
  int frames = 0, rows = 0, columns = 0, channels = 1;
  std::vector<float> values;  // [frames, rows, columns, channels], rescaled when the options say so
  bool has_position = false;
  std::array<double, 3> position{0, 0, 0};  // ImagePositionPatient
  bool has_orientation = false;
  std::array<double, 6> orientation{1, 0, 0, 0, 1, 0};  // ImageOrientationPatient
  bool has_pixel_spacing = false;
  double row_spacing_mm = 1, column_spacing_mm = 1;  // PixelSpacing: between rows (y), columns (x)
  double slice_thickness_mm = 0, spacing_between_slices_mm = 0;  // 0 when absent
  std::string series_instance_uid, modality, photometric_interpretation;
};

Result<DicomFileFrames> DecodeDicomFrames(std::string_view bytes, int file_index, const DicomReadOptions& options);

}  // namespace inferloop::imaging
