#include "imaging/sliding_window.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace inferloop::imaging {
namespace {

std::string SizeText(const Size3& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

size_t Count(const Size3& s) { return size_t(s[0]) * size_t(s[1]) * size_t(s[2]); }

// Window starts along one axis of padded length n.
std::vector<int> AxisStarts(int n, int roi, double overlap) {
  int step = roi == n ? roi : static_cast<int>(roi * (1.0 - overlap));
  step = std::max(step, 1);
  std::vector<int> starts;
  for (int start = 0;; start += step) {
    starts.push_back(std::min(start, n - roi));
    if (start + roi >= n) break;
  }
  return starts;
}

}  // namespace

Result<SlidingWindowPlan> PlanSlidingWindows(const Size3& volume_size, const Size3& roi_size, double overlap) {
  for (int a = 0; a < 3; ++a)
    if (volume_size[size_t(a)] <= 0 || roi_size[size_t(a)] <= 0)
      return Status::InvalidArgument("sliding window: volume " + SizeText(volume_size) + " and roi " +
                                     SizeText(roi_size) + " must be positive");
  if (!(overlap >= 0 && overlap < 1))
    return Status::InvalidArgument("sliding window: overlap " + std::to_string(overlap) + " is outside [0, 1)");
  SlidingWindowPlan plan;
  plan.volume_size = volume_size;
  plan.roi_size = roi_size;
  std::vector<int> starts[3];
  for (size_t a = 0; a < 3; ++a) {
    plan.padded_size[a] = std::max(volume_size[a], roi_size[a]);
    plan.pad_before[a] = (plan.padded_size[a] - volume_size[a]) / 2;
    starts[a] = AxisStarts(plan.padded_size[a], roi_size[a], overlap);
  }
  for (int z : starts[0])
    for (int y : starts[1])
      for (int x : starts[2]) plan.origins.push_back({z, y, x});
  return plan;
}

Result<std::vector<float>> ExtractWindow(const std::vector<float>& volume, int channels, const SlidingWindowPlan& plan,
                                         size_t index) {
  if (channels <= 0 || volume.size() != Count(plan.volume_size) * size_t(channels))
    return Status::InvalidArgument("sliding window: volume holds " + std::to_string(volume.size()) + " values, expected " +
                                   std::to_string(channels) + "x" + SizeText(plan.volume_size));
  if (index >= plan.origins.size())
    return Status::InvalidArgument("sliding window: no window " + std::to_string(index) + " (plan has " +
                                   std::to_string(plan.origins.size()) + ")");
  const Size3& r = plan.roi_size;
  const Size3& v = plan.volume_size;
  std::vector<float> out(Count(r) * size_t(channels), 0.0f);
  size_t o = 0;
  for (int c = 0; c < channels; ++c)
    for (int z = 0; z < r[0]; ++z)
      for (int y = 0; y < r[1]; ++y)
        for (int x = 0; x < r[2]; ++x, ++o) {
          const int vz = plan.origins[index][0] + z - plan.pad_before[0];
          const int vy = plan.origins[index][1] + y - plan.pad_before[1];
          const int vx = plan.origins[index][2] + x - plan.pad_before[2];
          if (vz < 0 || vy < 0 || vx < 0 || vz >= v[0] || vy >= v[1] || vx >= v[2]) continue;
          out[o] = volume[((size_t(c) * v[0] + vz) * v[1] + vy) * v[2] + vx];
        }
  return out;
}

std::vector<float> ImportanceMap(const Size3& roi_size, BlendMode mode, double sigma_scale) {
  std::vector<float> map(Count(roi_size), 1.0f);
  if (mode == BlendMode::kConstant) return map;
  std::vector<double> axis[3];
  for (size_t a = 0; a < 3; ++a) {
    const double sigma = std::max(sigma_scale * roi_size[a], 1e-6);
    const int centre = roi_size[a] / 2;
    for (int i = 0; i < roi_size[a]; ++i) axis[a].push_back(std::exp(-0.5 * std::pow((i - centre) / sigma, 2)));
  }
  size_t o = 0;
  float smallest_positive = 1.0f;
  for (double wz : axis[0])
    for (double wy : axis[1])
      for (double wx : axis[2]) {
        map[o] = static_cast<float>(wz * wy * wx);  // the centre is 1: already scaled to a maximum of 1
        if (map[o] > 0) smallest_positive = std::min(smallest_positive, map[o]);
        ++o;
      }
  // As MONAI: no zero weights (a voxel only far corners cover would otherwise divide by zero).
  for (float& w : map) w = std::max(w, smallest_positive);
  return map;
}

Result<SlidingWindowBlender> SlidingWindowBlender::Create(const SlidingWindowPlan& plan, int out_channels,
                                                          BlendMode mode, double sigma_scale) {
  if (out_channels <= 0) return Status::InvalidArgument("sliding window: out_channels must be positive");
  if (plan.origins.empty()) return Status::InvalidArgument("sliding window: the plan has no windows");
  if (mode == BlendMode::kGaussian && !(sigma_scale > 0))
    return Status::InvalidArgument("sliding window: sigma_scale must be positive");
  SlidingWindowBlender b;
  b.plan_ = plan;
  b.channels_ = out_channels;
  b.weights_ = ImportanceMap(plan.roi_size, mode, sigma_scale);
  b.sum_.assign(Count(plan.padded_size) * size_t(out_channels), 0.0);
  b.weight_sum_.assign(Count(plan.padded_size), 0.0);
  b.done_.assign(plan.origins.size(), false);
  return b;
}

Status SlidingWindowBlender::Accumulate(size_t index, const std::vector<float>& window_output) {
  if (index >= plan_.origins.size()) return Status::InvalidArgument("sliding window: no window " + std::to_string(index));
  if (done_[index]) return Status::InvalidArgument("sliding window: window " + std::to_string(index) + " added twice");
  const Size3& r = plan_.roi_size;
  const Size3& p = plan_.padded_size;
  if (window_output.size() != Count(r) * size_t(channels_))
    return Status::InvalidArgument("sliding window: window output holds " + std::to_string(window_output.size()) +
                                   " values, expected " + std::to_string(channels_) + "x" + SizeText(r));
  const Size3& origin = plan_.origins[index];
  size_t w = 0;
  for (int z = 0; z < r[0]; ++z)
    for (int y = 0; y < r[1]; ++y)
      for (int x = 0; x < r[2]; ++x, ++w) {
        const size_t voxel = (size_t(origin[0] + z) * p[1] + size_t(origin[1] + y)) * p[2] + size_t(origin[2] + x);
        weight_sum_[voxel] += weights_[w];
        for (int c = 0; c < channels_; ++c)
          sum_[size_t(c) * Count(p) + voxel] += double(weights_[w]) * window_output[size_t(c) * Count(r) + w];
      }
  done_[index] = true;
  return Status::Ok();
}

Result<std::vector<float>> SlidingWindowBlender::Finish() const {
  const size_t missing = size_t(std::count(done_.begin(), done_.end(), false));
  if (missing > 0)
    return Status::FailedPrecondition("sliding window: " + std::to_string(missing) + " of " +
                                      std::to_string(done_.size()) + " windows not accumulated");
  const Size3& v = plan_.volume_size;
  const Size3& p = plan_.padded_size;
  std::vector<float> out(Count(v) * size_t(channels_));
  size_t o = 0;
  for (int c = 0; c < channels_; ++c)
    for (int z = 0; z < v[0]; ++z)
      for (int y = 0; y < v[1]; ++y)
        for (int x = 0; x < v[2]; ++x, ++o) {
          const size_t voxel = (size_t(z + plan_.pad_before[0]) * p[1] + size_t(y + plan_.pad_before[1])) * p[2] +
                               size_t(x + plan_.pad_before[2]);
          out[o] = static_cast<float>(sum_[size_t(c) * Count(p) + voxel] / weight_sum_[voxel]);
        }
  return out;
}

}  // namespace inferloop::imaging
