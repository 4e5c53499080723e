// Fuzzes the DICOM reader (src/imaging/dicom_series.h) on arbitrary bytes: ReadDicomFile must
// give a volume or a Status, never a crash, hang or huge allocation (the voxel limit is small
// here); a volume that reads must hold exactly depth * height * width * channels values and
// window into a slice picture. Seeds: tests/fuzz/corpus_dicom/ (small pydicom test files).
// Run with -malloc_limit_mb=4200: DCMTK 3.6.7 allocates an element's declared length (up to 4 GiB,
// with new(nothrow), untouched) before it finds the stream too short, which is an error, not a
// crash, but over libFuzzer's default single-malloc limit (dcmtk_huge_element_length.dcm).
// -rss_limit_mb stays at its default, so real memory use is still bounded.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <dcmtk/oflog/oflog.h>

#include "imaging/dicom_series.h"
#include "imaging/volume_ops.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  OFLog::configure(OFLogger::OFF_LOG_LEVEL);  // DCMTK's parser warnings would flood the output
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::imaging;
  DicomReadOptions options;
  options.max_voxels = int64_t{1} << 22;
  options.require_pixel_spacing = size % 2 == 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto volume = ReadDicomFile(bytes, options);
  if (!volume.ok()) return 0;
  if (volume->voxels.size() != volume->VoxelCount()) __builtin_trap();
  (void)SliceToImage(*volume, volume->depth - 1, {40, 400});
  return 0;
}
