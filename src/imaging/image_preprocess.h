// Image -> model input tensor: resize (bilinear), fit to the model's size, normalise, lay out.
//
// Contract:
// - Resizing is bilinear with half-pixel centres, as ONNX Resize mode=linear,
//   coordinate_transformation_mode=half_pixel, antialias=0 (no low-pass when shrinking): output
//   pixel x samples source coordinate (x + 0.5) * in / out - 0.5, clamped to [0, in - 1].
// - Fit modes (output height x width from PreprocessSpec):
//   kStretch: the whole image resized to height x width (aspect ratio not kept);
//   kLetterbox: scaled by min(height / h, width / w), size rounded to nearest, centred (odd
//     padding: the extra pixel goes bottom/right), the rest filled with pad_value;
//   kCenterCrop: scaled by max(height / h, width / w) so the shorter side fits, then the centre
//     height x width cut out (odd surplus: the extra pixel is cut from the bottom/right).
// - Values: float32 out = (v * scale - mean[c]) / std[c] with v the resized 0..255 value (not
//   rounded) and c the OUTPUT channel (after the RGB/BGR order is applied); letterbox padding is
//   v = pad_value, normalised the same way. uint8 out is the resized value rounded to nearest (no
//   normalisation).
// - The image's channel count must equal spec.channels (decode with that count, image_codec.h);
//   with 3 channels, kBGR reverses the channel order. Layout kNCHW writes [C, H, W], kNHWC
//   [H, W, C] (one image: the leading N is the caller's batch).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "imaging/image.h"
#include "inferloop/status.h"

namespace inferloop::imaging {

enum class FitMode { kStretch, kLetterbox, kCenterCrop };
enum class TensorLayout { kNCHW, kNHWC };
enum class ElementType { kFloat32, kUInt8 };
enum class ChannelOrder { kRGB, kBGR };

struct PreprocessSpec {
  int height = 224;
  int width = 224;
  int channels = 3;  // 1 or 3
  FitMode fit = FitMode::kStretch;
  uint8_t pad_value = 0;  // letterbox fill, in 0..255 pixel units
  float scale = 1.0f / 255.0f;
  std::vector<float> mean = {0.0f};  // one value (every channel) or `channels` values
  std::vector<float> std = {1.0f};   // likewise; every value non-zero
  TensorLayout layout = TensorLayout::kNCHW;
  ElementType element_type = ElementType::kFloat32;
  ChannelOrder order = ChannelOrder::kRGB;

  // InvalidArgument naming the first bad field (e.g. "PreprocessSpec.std[1] is 0").
  Status Check() const;
  // Elements of one preprocessed image: height * width * channels.
  size_t ElementCount() const;
};

// Where the resized image lands in the output (to map model coordinates back to the image:
// source = (output - offset) / scale). Offsets are negative for kCenterCrop.
struct FitPlacement {
  int resized_height = 0;
  int resized_width = 0;
  int offset_y = 0;
  int offset_x = 0;
  double scale_y = 1.0;  // resized_height / image height
  double scale_x = 1.0;
};

Result<FitPlacement> ComputeFit(int image_height, int image_width, const PreprocessSpec& spec);

// Bilinear resize (half-pixel, as above) of an image to height x width; HWC float, unrounded.
Result<std::vector<float>> ResizeBilinear(const Image& image, int height, int width);

// One image into `out` (spec.ElementCount() elements; element_type must match).
Status PreprocessImage(const Image& image, const PreprocessSpec& spec, std::span<float> out);
Status PreprocessImage(const Image& image, const PreprocessSpec& spec, std::span<uint8_t> out);

// Image `slot` of a float32 batch buffer of N * spec.ElementCount() elements: writes
// batch[slot * ElementCount(), (slot + 1) * ElementCount()). A slot outside the buffer is
// InvalidArgument.
Status PreprocessIntoBatch(const Image& image, const PreprocessSpec& spec, int64_t slot, std::span<float> batch);

}  // namespace inferloop::imaging
