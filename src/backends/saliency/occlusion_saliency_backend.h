// The occlusion_saliency backend (`backend: "occlusion_saliency"`): which parts of an image a
// classifier's score depends on, without gradients. For each position of a patch x patch square
// moved by `stride` over the model's input, the square is filled with `fill` and the target model
// is run again; a pixel's saliency is the mean drop of the class score (baseline minus occluded)
// over the squares that covered it. The forward passes go through the target model's own
// scheduler, `window_batch` occluded images per call. Cost per image: 1 + ((H - patch) / stride +
// 1) x ((W - patch) / stride + 1) forward passes (128 x 128, patch 16, stride 16: 65).
//
// Inputs: `image` (TYPE_FP32, the target model's input without the batch dim, [C, H, W]) and an
// optional TYPE_STRING dims [1] input named by parameter raw_input (the encoded image the tensor
// came from). Outputs: `heatmap` TYPE_FP32 [H, W] and, when raw_input is given, an output named
// by parameter overlay_output (TYPE_STRING [1]): a PNG of the heatmap blended onto the decoded
// image (imaging/overlay.h: min-max scaled, resized to the image). With batching, rows are
// explained one by one.
// Parameters: model (the classifier's name), model_input, model_output, class_index, score
// ("value": that class's output, the default; "margin": it minus the largest other class's,
// best on logits, which do not saturate as probabilities do), patch (default 16), stride
// (default patch), fill (a number in the model's input units, default 0, or "mean": the image's
// mean value), window_batch (default 8), raw_input, overlay_output.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeOcclusionSaliencyBackend();

}  // namespace inferloop::backends
