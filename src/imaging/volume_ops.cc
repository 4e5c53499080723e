#include "imaging/volume_ops.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/status_macros.h"

namespace inferloop::imaging {
namespace {

float UnitValue(float v, double low, double width) {
  const double u = (static_cast<double>(v) - low) / width;
  return static_cast<float>(std::clamp(u, 0.0, 1.0));
}

uint8_t ByteValue(float v, double low, double width) {
  return static_cast<uint8_t>(std::lround(255.0 * UnitValue(v, low, width)));
}

int ResampledCount(int n, double spacing, double target) {
  return static_cast<int>(std::floor(double(n - 1) * spacing / target + 1e-6)) + 1;
}

// For output index i: the input cell [lo, lo + 1] and the weight of lo + 1.
struct AxisSample {
  int lo = 0, hi = 0;
  double t = 0;
};

std::vector<AxisSample> AxisSamples(int n_in, int n_out, double spacing, double target) {
  std::vector<AxisSample> out(static_cast<size_t>(n_out));
  for (int i = 0; i < n_out; ++i) {
    const double x = std::min(double(i) * target / spacing, double(n_in - 1));
    const int lo = static_cast<int>(std::floor(x));
    out[size_t(i)] = {lo, std::min(lo + 1, n_in - 1), x - lo};
  }
  return out;
}

Status CheckVolume(const DicomVolume& v) {
  if (v.depth <= 0 || v.height <= 0 || v.width <= 0 || v.channels <= 0 || v.voxels.size() != v.VoxelCount())
    return Status::InvalidArgument("volume " + std::to_string(v.depth) + "x" + std::to_string(v.height) + "x" +
                                   std::to_string(v.width) + "x" + std::to_string(v.channels) + " holds " +
                                   std::to_string(v.voxels.size()) + " values");
  return Status::Ok();
}

}  // namespace

Status CheckWindow(const IntensityWindow& window) {
  if (!std::isfinite(window.center) || !std::isfinite(window.width) || !(window.width > 0))
    return Status::InvalidArgument("window center " + std::to_string(window.center) + " width " +
                                   std::to_string(window.width) + ": width must be positive and both finite");
  return Status::Ok();
}

Result<std::vector<float>> WindowToUnit(const std::vector<float>& values, const IntensityWindow& window) {
  IL_RETURN_IF_ERROR(CheckWindow(window));
  const double low = window.center - window.width / 2;
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = UnitValue(values[i], low, window.width);
  return out;
}

Result<std::vector<uint8_t>> WindowToUint8(const std::vector<float>& values, const IntensityWindow& window) {
  IL_RETURN_IF_ERROR(CheckWindow(window));
  const double low = window.center - window.width / 2;
  std::vector<uint8_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = ByteValue(values[i], low, window.width);
  return out;
}

Result<DicomVolume> ResampleVolume(const DicomVolume& volume, const std::array<double, 3>& target_spacing_mm,
                                   int64_t max_voxels) {
  IL_RETURN_IF_ERROR(CheckVolume(volume));
  for (int a = 0; a < 3; ++a)
    if (!(target_spacing_mm[size_t(a)] > 0) || !std::isfinite(target_spacing_mm[size_t(a)]) ||
        !(volume.spacing_mm[size_t(a)] > 0))
      return Status::InvalidArgument("resample: spacings must be positive (axis " + std::to_string(a) + ")");
  const int dims_in[3] = {volume.depth, volume.height, volume.width};
  int dims_out[3];
  for (int a = 0; a < 3; ++a) {
    const double n = std::floor(double(dims_in[a] - 1) * volume.spacing_mm[size_t(a)] / target_spacing_mm[size_t(a)]);
    if (n + 1 > double(max_voxels) || n + 1 > 2147483647.0) return Status::InvalidArgument("resample: output exceeds the voxel limit");
    dims_out[a] = ResampledCount(dims_in[a], volume.spacing_mm[size_t(a)], target_spacing_mm[size_t(a)]);
  }
  const double total = double(dims_out[0]) * dims_out[1] * dims_out[2] * volume.channels;
  if (total > double(max_voxels))
    return Status::InvalidArgument("resample: output of " + std::to_string(int64_t(total)) +
                                   " values exceeds the limit of " + std::to_string(max_voxels));
  std::vector<AxisSample> s[3];
  for (int a = 0; a < 3; ++a)
    s[a] = AxisSamples(dims_in[a], dims_out[a], volume.spacing_mm[size_t(a)], target_spacing_mm[size_t(a)]);
  DicomVolume out = volume;
  out.depth = dims_out[0];
  out.height = dims_out[1];
  out.width = dims_out[2];
  out.spacing_mm = target_spacing_mm;
  out.source_file_index.clear();
  out.source_frame_index.clear();
  out.voxels.assign(out.VoxelCount(), 0.0f);
  const size_t C = size_t(volume.channels), W = size_t(volume.width), HW = size_t(volume.height) * W;
  auto at = [&](int z, int y, int x, size_t c) { return double(volume.voxels[(z * HW + y * W + size_t(x)) * C + c]); };
  size_t o = 0;
  for (const AxisSample& sz : s[0])
    for (const AxisSample& sy : s[1])
      for (const AxisSample& sx : s[2])
        for (size_t c = 0; c < C; ++c) {
          auto plane = [&](int z) {
            const double r0 = at(z, sy.lo, sx.lo, c) * (1 - sx.t) + at(z, sy.lo, sx.hi, c) * sx.t;
            const double r1 = at(z, sy.hi, sx.lo, c) * (1 - sx.t) + at(z, sy.hi, sx.hi, c) * sx.t;
            return r0 * (1 - sy.t) + r1 * sy.t;
          };
          out.voxels[o++] = static_cast<float>(plane(sz.lo) * (1 - sz.t) + plane(sz.hi) * sz.t);
        }
  return out;
}

Result<Image> SliceToImage(const DicomVolume& volume, int z, const IntensityWindow& window) {
  IL_RETURN_IF_ERROR(CheckVolume(volume));
  IL_RETURN_IF_ERROR(CheckWindow(window));
  if (z < 0 || z >= volume.depth)
    return Status::InvalidArgument("slice " + std::to_string(z) + " is outside 0.." + std::to_string(volume.depth - 1));
  if (volume.channels != 1 && volume.channels != 3)
    return Status::InvalidArgument("slice image needs 1 or 3 channels, volume has " + std::to_string(volume.channels));
  Image image;
  image.height = volume.height;
  image.width = volume.width;
  image.channels = volume.channels;
  const size_t n = static_cast<size_t>(volume.height) * volume.width * volume.channels;
  const float* src = volume.voxels.data() + n * static_cast<size_t>(z);
  const double low = window.center - window.width / 2;
  image.pixels.resize(n);
  for (size_t i = 0; i < n; ++i) image.pixels[i] = ByteValue(src[i], low, window.width);
  return image;
}

}  // namespace inferloop::imaging
