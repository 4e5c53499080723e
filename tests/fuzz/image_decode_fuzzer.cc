// Fuzzes JPEG/PNG decoding (src/imaging/image_codec.h): arbitrary bytes must give an Image or a
// Status, never a crash, hang, leak or an allocation past the pixel limit; a decoded image must
// be well formed and survive EncodePng -> DecodeImage unchanged. The requested channel count
// (0, 1, 3, 4) comes from the input's length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "imaging/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::imaging;
  static constexpr int kChannels[4] = {0, 1, 3, 4};
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto image = DecodeImage(bytes, DecodeLimits{int64_t{1} << 22}, kChannels[size % 4]);
  if (!image.ok()) return 0;
  if (!CheckImage(*image).ok()) std::abort();
  auto png = EncodePng(*image);
  if (!png.ok()) std::abort();
  auto back = DecodeImage(*png, DecodeLimits{int64_t{1} << 22});
  if (!back.ok() || back->pixels != image->pixels) std::abort();
  return 0;
}
