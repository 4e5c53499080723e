// Sliding-window inference over a 3-D volume, without the model call (MONAI's
// sliding_window_inference split in two so windows can be batched elsewhere): plan the windows,
// extract each one, blend the model's window outputs back into a whole-volume output.
//
// Planning (as MONAI): a volume smaller than the roi along an axis is zero-padded to the roi,
// half before and the rest after. Per axis the step is int(roi * (1 - overlap)) (at least 1; the
// roi itself when the padded size equals it); windows start at 0, step, 2 * step, ... until one
// reaches the end, and that last one is moved back to end flush with the volume. Every voxel is
// covered; origins are in padded coordinates, z-major order.
//
// Blending: output = sum(weight * window output) / sum(weight) per voxel, with the weight map
// constant (1) or Gaussian: exp(-d^2 / (2 sigma^2)) per axis, sigma = sigma_scale * roi, centred at
// roi / 2 (integer division), scaled to a maximum of 1 (MONAI samples an erf-integrated kernel; the
// shape is the same, the values differ slightly). The padding is cropped off at the end.
// Layouts: volumes and outputs are [C, Z, Y, X], windows [C, rz, ry, rx], all float, row-major.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::imaging {

using Size3 = std::array<int, 3>;  // {z, y, x}

struct SlidingWindowPlan {
  Size3 volume_size{};  // as given
  Size3 padded_size{};  // volume_size grown to at least roi_size
  Size3 pad_before{};   // zeros in front of the volume along each axis
  Size3 roi_size{};
  std::vector<Size3> origins;  // window starts in padded coordinates
};

// InvalidArgument unless sizes are positive and 0 <= overlap < 1.
Result<SlidingWindowPlan> PlanSlidingWindows(const Size3& volume_size, const Size3& roi_size, double overlap);

// Window `index` of `volume` ([channels, Z, Y, X] of plan.volume_size), zeros where it reaches into
// the padding: [channels, rz, ry, rx].
Result<std::vector<float>> ExtractWindow(const std::vector<float>& volume, int channels, const SlidingWindowPlan& plan,
                                         size_t index);

enum class BlendMode { kConstant, kGaussian };

// The weight map [rz, ry, rx] a blender with this mode uses.
std::vector<float> ImportanceMap(const Size3& roi_size, BlendMode mode, double sigma_scale = 0.125);

class SlidingWindowBlender {
 public:
  // out_channels: C of the model's window outputs (may differ from the input's).
  static Result<SlidingWindowBlender> Create(const SlidingWindowPlan& plan, int out_channels, BlendMode mode,
                                             double sigma_scale = 0.125);
  // Adds window `index`'s output [out_channels, rz, ry, rx]; each window once, in any order.
  Status Accumulate(size_t index, const std::vector<float>& window_output);
  // The blended output [out_channels, Z, Y, X] over plan.volume_size; FailedPrecondition until
  // every window was accumulated.
  Result<std::vector<float>> Finish() const;

 private:
  SlidingWindowPlan plan_;
  int channels_ = 0;
  std::vector<float> weights_;      // [rz, ry, rx]
  std::vector<double> sum_;         // [C, padded]
  std::vector<double> weight_sum_;  // [padded]
  std::vector<bool> done_;
};

}  // namespace inferloop::imaging
