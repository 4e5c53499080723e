// Connected components of a thresholded 3-D float volume (a segmentation model's probability or
// logit map), with per-component measurements for a lesion report.
//
// Contract:
// - The volume is [Z, Y, X] row-major (a 2-D map is Z = 1). A voxel is foreground when its value
//   is > threshold (NaN is background).
// - Connectivity k26 (the default: voxels sharing a face, edge or corner; in 2-D the 8
//   neighbours) or k6 (sharing a face; in 2-D the 4 neighbours). k26 keeps a thin diagonal
//   structure in one piece, as scipy.ndimage.label with a full 3x3x3 structure does; k6 matches
//   its default cross structure.
// - Labels 1..n are given in raster order of each component's first voxel (as scipy numbers
//   them); 0 is background. Components below min_voxels are dropped from the list (their voxels
//   keep their label in `labels`; the numbering is not compacted).
// - Measurements: voxel_count; volume_mm3 = voxel_count * z * y * x spacing; the bounding box in
//   voxel indices, inclusive; the centroid in mm relative to the centre of voxel (0, 0, 0)
//   (index * spacing, the mean over the component's voxels; map to patient coordinates with the
//   series' origin and direction); max and mean of the voxel values.
// - Bad shapes (a dimension < 1, a size that does not match), non-positive or non-finite
//   spacing: InvalidArgument.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::imaging {

enum class Connectivity { k6, k26 };

struct ComponentOptions {
  float threshold = 0.5f;
  Connectivity connectivity = Connectivity::k26;
  std::array<double, 3> spacing_mm = {1.0, 1.0, 1.0};  // z, y, x
  int64_t min_voxels = 1;
};

struct Component {
  int32_t label = 0;
  int64_t voxel_count = 0;
  double volume_mm3 = 0.0;
  std::array<int64_t, 3> bbox_min = {0, 0, 0};  // z, y, x (inclusive)
  std::array<int64_t, 3> bbox_max = {0, 0, 0};
  std::array<double, 3> centroid_mm = {0.0, 0.0, 0.0};  // z, y, x
  float max_value = 0.0f;
  float mean_value = 0.0f;
};

struct ComponentLabels {
  std::vector<int32_t> labels;  // one per voxel, [Z, Y, X]
  int32_t label_count = 0;      // n, including components under min_voxels
  std::vector<Component> components;
};

// shape: {Z, Y, X}.
Result<ComponentLabels> LabelComponents(std::span<const float> volume, std::array<int64_t, 3> shape,
                                        const ComponentOptions& options);

}  // namespace inferloop::imaging
