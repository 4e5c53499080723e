// Non-maximum suppression of a detector's boxes, as ONNX NonMaxSuppression (center_point_box 0)
// computes it.
//
// Contract:
// - boxes: [N, 4] as (x1, y1, x2, y2) corners (either order of each pair: min/max are taken);
//   scores: [N, C] row-major, one score per box and class.
// - A box is a candidate when its score is > score_threshold. Candidates are taken highest score
//   first (equal scores: lower box index first); one is kept unless its IoU with an
//   already-kept box is > iou_threshold (boxes of zero area overlap nothing), until max_output
//   are kept.
// - per_class: classes are suppressed independently, max_output per class; results ordered by
//   class, then by selection. Otherwise (class-agnostic) each box takes its best class (ties: the
//   lower class) and score, all boxes compete, max_output in total.
// - Bad sizes, a negative max_output, non-finite thresholds: InvalidArgument. NaN scores are never
//   candidates.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "inferloop/status.h"

namespace inferloop::imaging {

struct NmsOptions {
  float iou_threshold = 0.5f;
  float score_threshold = 0.0f;
  int64_t max_output = 100;
  bool per_class = false;
};

struct Detection {
  int64_t box_index = 0;
  int64_t class_index = 0;
  float score = 0.0f;
};

// Intersection over union of two (x1, y1, x2, y2) boxes; 0 when either has no area.
float BoxIoU(const float* a, const float* b);

Result<std::vector<Detection>> NonMaxSuppression(std::span<const float> boxes, std::span<const float> scores,
                                                 int64_t num_boxes, int64_t num_classes, const NmsOptions& options);

}  // namespace inferloop::imaging
