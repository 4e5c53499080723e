// The image_preprocess backend (`backend: "image_preprocess"`): encoded images in, model input
// tensors out. One input, TYPE_STRING dims [1] (each row one JPEG or PNG file's bytes, decoded
// with libjpeg-turbo / libpng: imaging/image_codec.h); one or more outputs, each a tensor the
// decoded image is resized into (imaging/image_preprocess.h), its size from its dims: [C, H, W]
// with layout nchw, [H, W, C] with nhwc (C 1 or 3), data_type TYPE_FP32 (normalised) or
// TYPE_UINT8 (resized pixels). So one decode feeds several models that want different sizes.
//
// Parameters (docs/PIPELINES.md): fit (stretch | letterbox | center_crop; default stretch),
// pad_value (letterbox fill, 0..255), scale (default 1/255), mean and std (one value or one per
// channel; defaults 0 and 1), color (rgb | bgr | gray), layout (nchw | nhwc), max_pixels (largest
// width x height accepted, checked from the file's header before decoding; default 2^26).
// A row that is not a decodable JPEG/PNG, or is over max_pixels, fails its request with
// InvalidArgument naming the input and row.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeImagePreprocessBackend();

}  // namespace inferloop::backends
