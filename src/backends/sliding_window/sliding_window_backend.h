// The sliding_window backend (`backend: "sliding_window"`): a whole CT volume in, a 3-D
// segmentation model run over it window by window, the blended probability map out (MONAI's
// sliding_window_inference; imaging/sliding_window.h plans, extracts and blends). Not batched
// (max_batch_size 0): one request is one volume, of any size.
//
// Config:
//   input:  one, TYPE_FP32 dims [1, -1, -1, -1]: the volume [1, Z, Y, X] (HU from dicom_series).
//   output: one, TYPE_FP32 dims [1, -1, -1, -1]: the blended model output [1, Z, Y, X], with the
//           output parameters "windows" and "model_calls" (int64) saying what it cost.
// Parameters (docs/PIPELINES.md):
//   model (required): the segmentation model's name in the repository (loaded before this step:
//     ModelBackend::Dependencies); model_version (default 0: the highest serving);
//   model_input / model_output: its tensor names (default: its only input / output);
//   roi_size "z,y,x": the window (default: the last three dims of the model's input, which must
//     then be fixed); the model's input is [n, 1, rz, ry, rx] (n the batch dimension: max_batch_size
//     > 0, or a leading -1 / fixed dim when 0), its output [n, C, rz, ry, rx] or [n, rz, ry, rx];
//   channel: which output channel is the probability (default -1: the last, so a 1-channel sigmoid
//     map or the foreground of a 2-channel softmax);
//   overlap (0 <= overlap < 1; default 0.25); blend (constant | gaussian; default constant, as
//     MONAI); sigma_scale (gaussian sigma per roi length; default 0.125);
//   window_batch: windows per model request (default 4; capped by the model's batch size: the
//     model's own dynamic batcher may merge requests further); max_calls_in_flight: model
//     requests outstanding at once for one volume (default 2);
//   offset, divisor, clip: the volume fed is clip((v - offset) / divisor, -clip, clip) (defaults
//     40, 100, 5: the CT model's (HU - 40) / 100 clipped to [-5, 5]; clip 0: no clipping). The
//     padding around a volume smaller than the roi is 0 after this normalisation.
//
// Cost: windows = prod over z, y, x of (ceil((max(n, roi) - roi) / step) + 1), step =
// max(1, int(roi * (1 - overlap))); model calls = ceil(windows / window_batch), each carrying
// window_batch x rz x ry x rx floats. The model is called through VersionLoadRequest::models
// (ModelResolver::Find, then ModelVersion::Infer, looking again when a version is draining).
// Errors: a bad volume is InvalidArgument naming the input; a failed model call fails the
// request with the model's code and message, prefixed by the windows (indices and first origin)
// and the model's name; a model output of the wrong name, type or shape is Internal.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeSlidingWindowBackend();

}  // namespace inferloop::backends
