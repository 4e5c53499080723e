// Greedy non-maximum suppression (nms.h).
#include "imaging/nms.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "base/status_macros.h"

namespace inferloop::imaging {
namespace {

Status CheckArguments(std::span<const float> boxes, std::span<const float> scores, int64_t num_boxes, int64_t num_classes,
                      const NmsOptions& options) {
  if (num_boxes < 0 || num_classes < 1)
    return Status::InvalidArgument("NMS needs num_boxes >= 0 and num_classes >= 1, got " + std::to_string(num_boxes) +
                                   " and " + std::to_string(num_classes));
  if (boxes.size() != static_cast<size_t>(num_boxes) * 4)
    return Status::InvalidArgument("boxes hold " + std::to_string(boxes.size()) + " values, [" + std::to_string(num_boxes) +
                                   ", 4] needs " + std::to_string(num_boxes * 4));
  if (scores.size() != static_cast<size_t>(num_boxes * num_classes))
    return Status::InvalidArgument("scores hold " + std::to_string(scores.size()) + " values, [" +
                                   std::to_string(num_boxes) + ", " + std::to_string(num_classes) + "] needs " +
                                   std::to_string(num_boxes * num_classes));
  if (options.max_output < 0) return Status::InvalidArgument("max_output " + std::to_string(options.max_output) + " is negative");
  if (!std::isfinite(options.iou_threshold) || !std::isfinite(options.score_threshold))
    return Status::InvalidArgument("NMS thresholds must be finite");
  return Status::Ok();
}

// Greedy selection over one set of (box, score) candidates; appends to `out` with class `cls`.
void SuppressOne(std::span<const float> boxes, const std::vector<float>& score, int64_t cls, const NmsOptions& options,
                 std::vector<Detection>& out) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < static_cast<int64_t>(score.size()); ++i)
    if (score[i] > options.score_threshold) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  std::vector<int64_t> kept;
  for (int64_t i : order) {
    if (static_cast<int64_t>(kept.size()) >= options.max_output) break;
    bool suppressed = false;
    for (int64_t k : kept)
      if (BoxIoU(&boxes[i * 4], &boxes[k * 4]) > options.iou_threshold) {
        suppressed = true;
        break;
      }
    if (suppressed) continue;
    kept.push_back(i);
    out.push_back({i, cls, score[i]});
  }
}

}  // namespace

float BoxIoU(const float* a, const float* b) {
  const float ax1 = std::min(a[0], a[2]), ax2 = std::max(a[0], a[2]), ay1 = std::min(a[1], a[3]), ay2 = std::max(a[1], a[3]);
  const float bx1 = std::min(b[0], b[2]), bx2 = std::max(b[0], b[2]), by1 = std::min(b[1], b[3]), by2 = std::max(b[1], b[3]);
  const float area_a = (ax2 - ax1) * (ay2 - ay1), area_b = (bx2 - bx1) * (by2 - by1);
  if (area_a <= 0.0f || area_b <= 0.0f) return 0.0f;
  const float iw = std::min(ax2, bx2) - std::max(ax1, bx1), ih = std::min(ay2, by2) - std::max(ay1, by1);
  if (iw <= 0.0f || ih <= 0.0f) return 0.0f;
  const float inter = iw * ih;
  return inter / (area_a + area_b - inter);
}

Result<std::vector<Detection>> NonMaxSuppression(std::span<const float> boxes, std::span<const float> scores,
                                                 int64_t num_boxes, int64_t num_classes, const NmsOptions& options) {
  IL_RETURN_IF_ERROR(CheckArguments(boxes, scores, num_boxes, num_classes, options));
  std::vector<Detection> out;
  std::vector<float> score(static_cast<size_t>(num_boxes));
  if (options.per_class) {
    for (int64_t c = 0; c < num_classes; ++c) {
      for (int64_t i = 0; i < num_boxes; ++i) score[i] = scores[i * num_classes + c];
      SuppressOne(boxes, score, c, options, out);
    }
    return out;
  }
  std::vector<int64_t> best(static_cast<size_t>(num_boxes), 0);
  for (int64_t i = 0; i < num_boxes; ++i) {
    const float* row = &scores[i * num_classes];
    for (int64_t c = 1; c < num_classes; ++c)
      if (row[c] > row[best[i]] || std::isnan(row[best[i]])) best[i] = c;
    score[i] = row[best[i]];
  }
  SuppressOne(boxes, score, 0, options, out);
  for (Detection& d : out) d.class_index = best[d.box_index];
  return out;
}

}  // namespace inferloop::imaging
