// Flood-fill labelling and per-component measurements (connected_components.h).
#include "imaging/connected_components.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/status_macros.h"

namespace inferloop::imaging {
namespace {

Status CheckArguments(std::span<const float> volume, std::array<int64_t, 3> shape, const ComponentOptions& options) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 1 || d > (int64_t{1} << 31))
      return Status::InvalidArgument("volume shape [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ", " +
                                     std::to_string(shape[2]) + "] has a dimension out of range");
    total *= d;
    if (total > (int64_t{1} << 31)) return Status::InvalidArgument("volume has more than 2^31 voxels");
  }
  if (static_cast<int64_t>(volume.size()) != total)
    return Status::InvalidArgument("volume holds " + std::to_string(volume.size()) + " values, its shape needs " +
                                   std::to_string(total));
  for (double s : options.spacing_mm)
    if (!std::isfinite(s) || s <= 0.0) return Status::InvalidArgument("spacing " + std::to_string(s) + " mm is not positive");
  return Status::Ok();
}

// The neighbour offsets (dz, dy, dx) of a connectivity.
std::vector<std::array<int, 3>> NeighbourOffsets(Connectivity c) {
  std::vector<std::array<int, 3>> out;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int manhattan = std::abs(dz) + std::abs(dy) + std::abs(dx);
        if (manhattan == 0 || (c == Connectivity::k6 && manhattan > 1)) continue;
        out.push_back({dz, dy, dx});
      }
  return out;
}

// Running sums of one component while it is filled.
struct Accumulator {
  int64_t count = 0;
  std::array<int64_t, 3> lo = {0, 0, 0}, hi = {0, 0, 0};
  std::array<double, 3> sum_index = {0.0, 0.0, 0.0};
  double sum_value = 0.0;
  float max_value = -std::numeric_limits<float>::infinity();

  void Add(const std::array<int64_t, 3>& p, float v) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = count == 0 ? p[k] : std::min(lo[k], p[k]);
      hi[k] = count == 0 ? p[k] : std::max(hi[k], p[k]);
      sum_index[k] += static_cast<double>(p[k]);
    }
    ++count;
    sum_value += v;
    max_value = std::max(max_value, v);
  }

  Component Finish(int32_t label, const std::array<double, 3>& spacing) const {
    Component c;
    c.label = label;
    c.voxel_count = count;
    c.volume_mm3 = static_cast<double>(count) * spacing[0] * spacing[1] * spacing[2];
    c.bbox_min = lo;
    c.bbox_max = hi;
    for (int k = 0; k < 3; ++k) c.centroid_mm[k] = sum_index[k] / static_cast<double>(count) * spacing[k];
    c.max_value = max_value;
    c.mean_value = static_cast<float>(sum_value / static_cast<double>(count));
    return c;
  }
};

}  // namespace

Result<ComponentLabels> LabelComponents(std::span<const float> volume, std::array<int64_t, 3> shape,
                                        const ComponentOptions& options) {
  IL_RETURN_IF_ERROR(CheckArguments(volume, shape, options));
  const int64_t nz = shape[0], ny = shape[1], nx = shape[2];
  const auto offsets = NeighbourOffsets(options.connectivity);
  ComponentLabels out;
  out.labels.assign(volume.size(), 0);
  std::vector<int64_t> stack;
  for (int64_t start = 0; start < static_cast<int64_t>(volume.size()); ++start) {
    if (out.labels[start] != 0 || !(volume[start] > options.threshold)) continue;
    const int32_t label = ++out.label_count;
    Accumulator acc;
    out.labels[start] = label;
    stack.assign(1, start);
    while (!stack.empty()) {
      const int64_t i = stack.back();
      stack.pop_back();
      const std::array<int64_t, 3> p = {i / (ny * nx), (i / nx) % ny, i % nx};
      acc.Add(p, volume[i]);
      for (const auto& d : offsets) {
        const int64_t z = p[0] + d[0], y = p[1] + d[1], x = p[2] + d[2];
        if (z < 0 || z >= nz || y < 0 || y >= ny || x < 0 || x >= nx) continue;
        const int64_t j = (z * ny + y) * nx + x;
        if (out.labels[j] != 0 || !(volume[j] > options.threshold)) continue;
        out.labels[j] = label;
        stack.push_back(j);
      }
    }
    if (acc.count >= options.min_voxels) out.components.push_back(acc.Finish(label, options.spacing_mm));
  }
  return out;
}

}  // namespace inferloop::imaging
