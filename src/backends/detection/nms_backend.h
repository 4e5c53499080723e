// The nms backend (`backend: "nms"`): a detector's raw boxes in, the kept detections out
// (imaging/nms.h: as ONNX NonMaxSuppression computes them). No batching (max_batch_size 0; one
// request = one image's candidates).
//
// Inputs: `boxes` TYPE_FP32 dims [-1, 4] (x1, y1, x2, y2) and `scores` TYPE_FP32 dims [-1, C].
// Outputs (declare those wanted): `detections` TYPE_FP32 dims [-1, 6]: per kept box x1, y1, x2,
// y2, score, class, in selection order; `indices` TYPE_INT64 dims [-1]: the kept boxes' rows.
// Parameters: iou_threshold (0.5), score_threshold (0), max_output (100), per_class ("false").
// Boxes and scores with different row counts, or a wrong width, are InvalidArgument.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeNmsBackend();

}  // namespace inferloop::backends
