#include "imaging/dicom_series.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "base/status_macros.h"
#include "imaging/dicom_frames.h"

namespace inferloop::imaging {
namespace {

// Positions closer than this along the normal are the same slice.
constexpr double kDuplicatePositionMm = 1e-3;
// A gap further than this fraction from the mean gap is a missing or misplaced slice.
constexpr double kUnevenGapFraction = 0.1;
// Orientation cosines further apart than this are a different plane.
constexpr double kOrientationTolerance = 1e-4;

std::string FileLabel(int index) { return "DICOM file " + std::to_string(index); }

Result<std::array<double, 3>> SliceNormal(const std::array<double, 6>& o) {
  std::array<double, 3> n{o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
  const double length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (!(length > 1e-6)) return Status::InvalidArgument("ImageOrientationPatient's row and column directions are parallel");
  for (double& v : n) v /= length;
  return n;
}

double Along(const std::array<double, 3>& p, const std::array<double, 3>& n) {
  return p[0] * n[0] + p[1] * n[1] + p[2] * n[2];
}

// One slice of the output: file `file`, frame `frame`.
struct SliceRef {
  int file = 0, frame = 0;
};

DicomVolume AssembleVolume(std::vector<DicomFileFrames>& decoded, const std::vector<SliceRef>& order,
                           const std::array<double, 3>& normal, const std::array<double, 3>& origin, double z_spacing) {
  const DicomFileFrames& first = decoded[static_cast<size_t>(order.front().file)];
  DicomVolume v;
  v.depth = static_cast<int>(order.size());
  v.height = first.rows;
  v.width = first.columns;
  v.channels = first.channels;
  v.spacing_mm = {z_spacing, first.row_spacing_mm, first.column_spacing_mm};
  v.origin_mm = origin;
  v.orientation = first.orientation;
  v.slice_normal = normal;
  v.series_instance_uid = first.series_instance_uid;
  v.modality = first.modality;
  v.photometric_interpretation = first.photometric_interpretation;
  const size_t slice_values = static_cast<size_t>(v.height) * v.width * v.channels;
  v.voxels.resize(slice_values * order.size());
  for (size_t z = 0; z < order.size(); ++z) {
    const auto& src = decoded[static_cast<size_t>(order[z].file)].values;
    std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(slice_values * order[z].frame), slice_values,
                v.voxels.begin() + static_cast<std::ptrdiff_t>(slice_values * z));
    v.source_file_index.push_back(order[z].file);
    v.source_frame_index.push_back(order[z].frame);
  }
  return v;
}

// Every file must match file 0 in series, size and plane.
Status CheckSameSeries(const DicomFileFrames& first, const DicomFileFrames& f, int index) {
  if (f.series_instance_uid != first.series_instance_uid)
    return Status::InvalidArgument(FileLabel(index) + ": SeriesInstanceUID '" + f.series_instance_uid +
                                   "' differs from file 0's '" + first.series_instance_uid + "' (mixed series)");
  if (f.rows != first.rows || f.columns != first.columns || f.channels != first.channels)
    return Status::InvalidArgument(FileLabel(index) + ": image size " + std::to_string(f.columns) + "x" +
                                   std::to_string(f.rows) + "x" + std::to_string(f.channels) + " differs from file 0's " +
                                   std::to_string(first.columns) + "x" + std::to_string(first.rows) + "x" +
                                   std::to_string(first.channels));
  if (!f.has_position || !f.has_orientation)
    return Status::InvalidArgument(FileLabel(index) + ": no ImagePositionPatient/ImageOrientationPatient, cannot order the series");
  for (size_t k = 0; k < 6; ++k)
    if (std::fabs(f.orientation[k] - first.orientation[k]) > kOrientationTolerance)
      return Status::InvalidArgument(FileLabel(index) + ": ImageOrientationPatient differs from file 0's");
  if (std::fabs(f.row_spacing_mm - first.row_spacing_mm) > 1e-4 ||
      std::fabs(f.column_spacing_mm - first.column_spacing_mm) > 1e-4)
    return Status::InvalidArgument(FileLabel(index) + ": PixelSpacing differs from file 0's");
  return Status::Ok();
}

// Sorts the files along the normal and returns the slice spacing; refuses duplicates and gaps.
Result<double> SortAlongNormal(const std::vector<DicomFileFrames>& decoded, const std::array<double, 3>& normal,
                               std::vector<SliceRef>& order) {
  std::vector<double> along(decoded.size());
  for (size_t i = 0; i < decoded.size(); ++i) along[i] = Along(decoded[i].position, normal);
  std::vector<int> idx(decoded.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return along[size_t(a)] < along[size_t(b)]; });
  for (size_t k = 0; k + 1 < idx.size(); ++k)
    if (along[size_t(idx[k + 1])] - along[size_t(idx[k])] < kDuplicatePositionMm)
      return Status::InvalidArgument(FileLabel(idx[k + 1]) + ": same position along the slice normal as file " +
                                     std::to_string(idx[k]) + " (" + std::to_string(along[size_t(idx[k])]) + " mm, duplicate slice)");
  const double spacing = (along[size_t(idx.back())] - along[size_t(idx.front())]) / double(idx.size() - 1);
  for (size_t k = 0; k + 1 < idx.size(); ++k) {
    const double gap = along[size_t(idx[k + 1])] - along[size_t(idx[k])];
    if (std::fabs(gap - spacing) > kUnevenGapFraction * spacing)
      return Status::InvalidArgument(FileLabel(idx[k + 1]) + ": uneven slice spacing, " + std::to_string(gap) +
                                     " mm from file " + std::to_string(idx[k]) + " where the series averages " +
                                     std::to_string(spacing) + " mm (missing slice?)");
  }
  for (int i : idx) order.push_back({i, 0});
  return spacing;
}

}  // namespace

Result<DicomVolume> ReadDicomFile(std::string_view bytes, const DicomReadOptions& options) {
  std::vector<DicomFileFrames> decoded;
  IL_ASSIGN_OR_RETURN(DicomFileFrames file, DecodeDicomFrames(bytes, 0, options));
  decoded.push_back(std::move(file));
  const DicomFileFrames& f = decoded.front();
  IL_ASSIGN_OR_RETURN(auto normal, SliceNormal(f.orientation));
  double z = f.spacing_between_slices_mm > 0 ? f.spacing_between_slices_mm
                                             : (f.slice_thickness_mm > 0 ? f.slice_thickness_mm : 1.0);
  std::vector<SliceRef> order;
  for (int k = 0; k < f.frames; ++k) order.push_back({0, k});
  return AssembleVolume(decoded, order, normal, f.position, z);
}

Result<DicomVolume> ReadDicomSeries(const std::vector<std::string_view>& files, const DicomReadOptions& options) {
  if (files.empty()) return Status::InvalidArgument("DICOM series: no files");
  if (files.size() == 1) return ReadDicomFile(files.front(), options);
  std::vector<DicomFileFrames> decoded;
  int64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const int index = static_cast<int>(i);
    IL_ASSIGN_OR_RETURN(DicomFileFrames f, DecodeDicomFrames(files[i], index, options));
    if (f.frames != 1)
      return Status::InvalidArgument(FileLabel(index) + ": a multi-frame file (" + std::to_string(f.frames) +
                                     " frames) in a series of several files is not supported");
    total += static_cast<int64_t>(f.values.size());
    if (total > options.max_voxels)
      return Status::InvalidArgument(FileLabel(index) + ": the series exceeds the limit of " +
                                     std::to_string(options.max_voxels) + " values");
    if (!decoded.empty()) IL_RETURN_IF_ERROR(CheckSameSeries(decoded.front(), f, index));
    decoded.push_back(std::move(f));
  }
  IL_RETURN_IF_ERROR(CheckSameSeries(decoded.front(), decoded.front(), 0));
  IL_ASSIGN_OR_RETURN(auto normal, SliceNormal(decoded.front().orientation));
  std::vector<SliceRef> order;
  IL_ASSIGN_OR_RETURN(double z_spacing, SortAlongNormal(decoded, normal, order));
  const std::array<double, 3> origin = decoded[static_cast<size_t>(order.front().file)].position;
  return AssembleVolume(decoded, order, normal, origin, z_spacing);
}

}  // namespace inferloop::imaging
