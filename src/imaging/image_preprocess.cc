// Resize, fit, normalise and lay out an image as a model input (image_preprocess.h).
#include "imaging/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/status_macros.h"
#include "imaging/linear_taps.h"

namespace inferloop::imaging {
namespace {

// Calls put(y, x, c, value) for each pixel of the window [y0, y0 + h) x [x0, x0 + w) of `image`
// resized to rh x rw.
template <typename Put>
void ResampleWindow(const Image& image, int rh, int rw, int y0, int x0, int h, int w, Put&& put) {
  const std::vector<LinearTap> ty = LinearTaps(image.height, rh, y0, h);
  const std::vector<LinearTap> tx = LinearTaps(image.width, rw, x0, w);
  const int c = image.channels;
  const size_t stride = static_cast<size_t>(image.width) * static_cast<size_t>(c);
  for (int y = 0; y < h; ++y) {
    const LinearTap& a = ty[static_cast<size_t>(y)];
    const uint8_t* r0 = image.pixels.data() + static_cast<size_t>(a.i0) * stride;
    const uint8_t* r1 = image.pixels.data() + static_cast<size_t>(a.i1) * stride;
    for (int x = 0; x < w; ++x) {
      const LinearTap& b = tx[static_cast<size_t>(x)];
      for (int k = 0; k < c; ++k) {
        const float top = r0[b.i0 * c + k] * (1.0f - b.w1) + r0[b.i1 * c + k] * b.w1;
        const float bottom = r1[b.i0 * c + k] * (1.0f - b.w1) + r1[b.i1 * c + k] * b.w1;
        put(y, x, k, top * (1.0f - a.w1) + bottom * a.w1);
      }
    }
  }
}

Status CheckInput(const Image& image, const PreprocessSpec& spec, ElementType type, size_t out_size) {
  IL_RETURN_IF_ERROR(spec.Check());
  IL_RETURN_IF_ERROR(CheckImage(image));
  if (spec.element_type != type)
    return Status::InvalidArgument(std::string("PreprocessSpec.element_type is ") +
                                   (spec.element_type == ElementType::kFloat32 ? "float32" : "uint8") +
                                   " but the output buffer is " + (type == ElementType::kFloat32 ? "float32" : "uint8"));
  if (image.channels != spec.channels)
    return Status::InvalidArgument("image has " + std::to_string(image.channels) + " channels, PreprocessSpec.channels is " +
                                   std::to_string(spec.channels));
  if (out_size != spec.ElementCount())
    return Status::InvalidArgument("output buffer holds " + std::to_string(out_size) + " elements, the spec needs " +
                                   std::to_string(spec.ElementCount()));
  return Status::Ok();
}

// Runs the fit: emit(y, x, c, v) for every output element, c being the image's channel and v the
// 0..255 value (padding included).
template <typename Emit>
Status ForEachOutputValue(const Image& image, const PreprocessSpec& spec, Emit&& emit) {
  IL_ASSIGN_OR_RETURN(FitPlacement fit, ComputeFit(image.height, image.width, spec));
  // The window of the resized image that lands inside the output, in output coordinates.
  const int y_begin = std::max(0, fit.offset_y), y_end = std::min(spec.height, fit.offset_y + fit.resized_height);
  const int x_begin = std::max(0, fit.offset_x), x_end = std::min(spec.width, fit.offset_x + fit.resized_width);
  if (y_begin > 0 || x_begin > 0 || y_end < spec.height || x_end < spec.width) {
    const float pad = spec.pad_value;
    for (int y = 0; y < spec.height; ++y)
      for (int x = 0; x < spec.width; ++x)
        if (y < y_begin || y >= y_end || x < x_begin || x >= x_end)
          for (int k = 0; k < spec.channels; ++k) emit(y, x, k, pad);
  }
  ResampleWindow(image, fit.resized_height, fit.resized_width, y_begin - fit.offset_y, x_begin - fit.offset_x,
                 y_end - y_begin, x_end - x_begin,
                 [&](int y, int x, int k, float v) { emit(y + y_begin, x + x_begin, k, v); });
  return Status::Ok();
}

// Index of output element (y, x, image channel k) under the spec's layout and channel order.
size_t OutputIndex(const PreprocessSpec& spec, int y, int x, int k) {
  const int c = (spec.order == ChannelOrder::kBGR && spec.channels == 3) ? 2 - k : k;
  if (spec.layout == TensorLayout::kNCHW)
    return (static_cast<size_t>(c) * spec.height + static_cast<size_t>(y)) * spec.width + static_cast<size_t>(x);
  return (static_cast<size_t>(y) * spec.width + static_cast<size_t>(x)) * spec.channels + static_cast<size_t>(c);
}

}  // namespace

Status PreprocessSpec::Check() const {
  auto bad = [](const std::string& m) { return Status::InvalidArgument("PreprocessSpec." + m); };
  if (height <= 0 || width <= 0 || height > (1 << 16) || width > (1 << 16))
    return bad("height x width " + std::to_string(height) + "x" + std::to_string(width) + " is not in 1..65536");
  if (channels != 1 && channels != 3) return bad("channels is " + std::to_string(channels) + " (expected 1 or 3)");
  if (!std::isfinite(scale)) return bad("scale is not finite");
  for (const auto* field : {&mean, &std}) {
    const char* name = field == &mean ? "mean" : "std";
    if (field->size() != 1 && field->size() != static_cast<size_t>(channels))
      return bad(std::string(name) + " has " + std::to_string(field->size()) + " values (expected 1 or " +
                 std::to_string(channels) + ")");
    for (size_t i = 0; i < field->size(); ++i)
      if (!std::isfinite((*field)[i]) || (field == &std && (*field)[i] == 0.0f))
        return bad(std::string(name) + "[" + std::to_string(i) + "] is " + std::to_string((*field)[i]));
  }
  if (order == ChannelOrder::kBGR && channels != 3) return bad("order is BGR but channels is " + std::to_string(channels));
  return Status::Ok();
}

size_t PreprocessSpec::ElementCount() const {
  return static_cast<size_t>(height) * static_cast<size_t>(width) * static_cast<size_t>(channels);
}

Result<FitPlacement> ComputeFit(int image_height, int image_width, const PreprocessSpec& spec) {
  if (image_height <= 0 || image_width <= 0)
    return Status::InvalidArgument("image size " + std::to_string(image_width) + "x" + std::to_string(image_height) +
                                   " is not positive");
  FitPlacement fit;
  if (spec.fit == FitMode::kStretch) {
    fit.resized_height = spec.height;
    fit.resized_width = spec.width;
  } else {
    const double sy = static_cast<double>(spec.height) / image_height, sx = static_cast<double>(spec.width) / image_width;
    const double s = spec.fit == FitMode::kLetterbox ? std::min(sy, sx) : std::max(sy, sx);
    if (image_height * s > (1 << 30) || image_width * s > (1 << 30))
      return Status::InvalidArgument("image " + std::to_string(image_width) + "x" + std::to_string(image_height) +
                                     " would be resized past 2^30 pixels on a side to fit " + std::to_string(spec.width) +
                                     "x" + std::to_string(spec.height));
    fit.resized_height = std::max(1, static_cast<int>(std::lround(image_height * s)));
    fit.resized_width = std::max(1, static_cast<int>(std::lround(image_width * s)));
    if (spec.fit == FitMode::kLetterbox) {
      fit.resized_height = std::min(fit.resized_height, spec.height);
      fit.resized_width = std::min(fit.resized_width, spec.width);
    } else {
      fit.resized_height = std::max(fit.resized_height, spec.height);
      fit.resized_width = std::max(fit.resized_width, spec.width);
    }
    // Halves rounded toward zero: letterbox pads the extra pixel bottom/right, the
    // crop cuts it from the bottom/right.
    fit.offset_y = (spec.height - fit.resized_height) / 2;
    fit.offset_x = (spec.width - fit.resized_width) / 2;
  }
  fit.scale_y = static_cast<double>(fit.resized_height) / image_height;
  fit.scale_x = static_cast<double>(fit.resized_width) / image_width;
  return fit;
}

Result<std::vector<float>> ResizeBilinear(const Image& image, int height, int width) {
  IL_RETURN_IF_ERROR(CheckImage(image));
  if (height <= 0 || width <= 0 || height > (1 << 16) || width > (1 << 16))
    return Status::InvalidArgument("resize target " + std::to_string(width) + "x" + std::to_string(height) +
                                   " is not in 1..65536");
  std::vector<float> out(static_cast<size_t>(height) * width * image.channels);
  const int c = image.channels;
  ResampleWindow(image, height, width, 0, 0, height, width, [&](int y, int x, int k, float v) {
    out[(static_cast<size_t>(y) * width + x) * c + k] = v;
  });
  return out;
}

Status PreprocessImage(const Image& image, const PreprocessSpec& spec, std::span<float> out) {
  IL_RETURN_IF_ERROR(CheckInput(image, spec, ElementType::kFloat32, out.size()));
  float mean[3], std_dev[3];  // per output channel
  for (int c = 0; c < spec.channels; ++c) {
    mean[c] = spec.mean.size() == 1 ? spec.mean[0] : spec.mean[c];
    std_dev[c] = spec.std.size() == 1 ? spec.std[0] : spec.std[c];
  }
  const bool bgr = spec.order == ChannelOrder::kBGR;
  return ForEachOutputValue(image, spec, [&](int y, int x, int k, float v) {
    const int c = bgr ? 2 - k : k;
    out[OutputIndex(spec, y, x, k)] = (v * spec.scale - mean[c]) / std_dev[c];
  });
}

Status PreprocessImage(const Image& image, const PreprocessSpec& spec, std::span<uint8_t> out) {
  IL_RETURN_IF_ERROR(CheckInput(image, spec, ElementType::kUInt8, out.size()));
  return ForEachOutputValue(image, spec, [&](int y, int x, int k, float v) {
    out[OutputIndex(spec, y, x, k)] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
  });
}

Status PreprocessIntoBatch(const Image& image, const PreprocessSpec& spec, int64_t slot, std::span<float> batch) {
  IL_RETURN_IF_ERROR(spec.Check());
  const size_t n = spec.ElementCount();
  if (slot < 0 || static_cast<size_t>(slot) >= batch.size() / n)
    return Status::InvalidArgument("batch slot " + std::to_string(slot) + " is outside a buffer of " +
                                   std::to_string(batch.size() / n) + " images");
  return PreprocessImage(image, spec, batch.subspan(static_cast<size_t>(slot) * n, n));
}

}  // namespace inferloop::imaging
