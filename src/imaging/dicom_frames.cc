#include "imaging/dicom_frames.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dcdatset.h>
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcistrmb.h>
#include <dcmtk/dcmdata/dcxfer.h>

#include <cstdint>
#include <cstring>

#include "base/status_macros.h"
#include "imaging/dicom_codecs.h"

namespace inferloop::imaging {
namespace {

Status FileError(int file_index, const std::string& message) {
  return Status::InvalidArgument("DICOM file " + std::to_string(file_index) + ": " + message);
}

bool IsSupportedTransferSyntax(E_TransferSyntax xfer) {
  switch (xfer) {
    case EXS_LittleEndianImplicit:
    case EXS_LittleEndianExplicit:
    case EXS_BigEndianExplicit:
    case EXS_DeflatedLittleEndianExplicit:
    case EXS_JPEGProcess1:
    case EXS_JPEGProcess2_4:
    case EXS_JPEGProcess14:
    case EXS_JPEGProcess14SV1:
    case EXS_JPEGLSLossless:
    case EXS_JPEGLSLossy:
    case EXS_RLELossless:
      return true;
    default:
      return false;
  }
}

std::string GetString(DcmDataset& ds, const DcmTagKey& tag) {
  OFString value;
  if (ds.findAndGetOFStringArray(tag, value).bad()) return "";
  return std::string(value.c_str());
}

// Reads `count` numbers of a multi-valued DS attribute; false when absent or short.
template <size_t N>
bool GetDoubles(DcmDataset& ds, const DcmTagKey& tag, std::array<double, N>& out) {
  for (size_t i = 0; i < N; ++i) {
    Float64 v = 0;
    if (ds.findAndGetFloat64(tag, v, static_cast<unsigned long>(i)).bad()) return false;
    out[i] = v;
  }
  return true;
}

double GetDouble(DcmDataset& ds, const DcmTagKey& tag, double fallback) {
  Float64 v = 0;
  return ds.findAndGetFloat64(tag, v).good() ? v : fallback;
}

struct PixelFormat {
  int bits_allocated = 0, bits_stored = 0, pixel_representation = 0, planar_configuration = 0;
  double slope = 1, intercept = 0;
};

// Reads the stored integer at `p` (little endian, as DCMTK hands pixel data to the host).
double SampleValue(const uint8_t* p, const PixelFormat& f) {
  uint32_t raw = 0;
  if (f.bits_allocated == 8) {
    raw = p[0];
  } else if (f.bits_allocated == 16) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    raw = v;
  } else {
    std::memcpy(&raw, p, 4);
  }
  if (f.bits_stored < 32) raw &= (uint32_t{1} << f.bits_stored) - 1;
  if (f.pixel_representation == 1 && f.bits_stored < 32 && (raw >> (f.bits_stored - 1)) & 1u)
    return static_cast<double>(static_cast<int64_t>(raw) - (int64_t{1} << f.bits_stored));
  if (f.pixel_representation == 1) return static_cast<double>(static_cast<int32_t>(raw));
  return static_cast<double>(raw);
}

Status ReadPixelFormat(DcmDataset& ds, int file_index, const DicomReadOptions& options, PixelFormat& f) {
  Uint16 ba = 0, bs = 0, pr = 0, pc = 0;
  if (ds.findAndGetUint16(DCM_BitsAllocated, ba).bad()) return FileError(file_index, "no BitsAllocated");
  if (ba != 8 && ba != 16 && ba != 32)
    return FileError(file_index, "unsupported BitsAllocated " + std::to_string(ba) + " (expected 8, 16 or 32)");
  if (ds.findAndGetUint16(DCM_BitsStored, bs).bad()) bs = ba;
  if (bs == 0 || bs > ba)
    return FileError(file_index, "BitsStored " + std::to_string(bs) + " does not fit BitsAllocated " + std::to_string(ba));
  (void)ds.findAndGetUint16(DCM_PixelRepresentation, pr);
  (void)ds.findAndGetUint16(DCM_PlanarConfiguration, pc);
  f.bits_allocated = ba;
  f.bits_stored = bs;
  f.pixel_representation = pr == 1 ? 1 : 0;
  f.planar_configuration = pc == 1 ? 1 : 0;
  if (options.apply_rescale) {
    f.slope = GetDouble(ds, DCM_RescaleSlope, 1.0);
    f.intercept = GetDouble(ds, DCM_RescaleIntercept, 0.0);
  }
  return Status::Ok();
}

Status ReadDataset(std::string_view bytes, int file_index, DcmFileFormat& file) {
  if (bytes.empty()) return FileError(file_index, "is empty");
  DcmInputBufferStream stream;
  stream.setBuffer(bytes.data(), static_cast<offile_off_t>(bytes.size()));
  stream.setEos();
  file.transferInit();
  OFCondition cond = file.read(stream, EXS_Unknown, EGL_noChange, DCM_MaxReadLength);
  file.transferEnd();
  if (cond.bad()) return FileError(file_index, std::string("not DICOM or corrupt (") + cond.text() + ")");
  return Status::Ok();
}

// Geometry, identity and sizes of the file (everything but the pixels).
Status ReadAttributes(DcmDataset& ds, int file_index, const DicomReadOptions& options, DicomFileFrames& out) {
  Uint16 rows = 0, columns = 0, samples = 1;
  if (ds.findAndGetUint16(DCM_Rows, rows).bad() || ds.findAndGetUint16(DCM_Columns, columns).bad() || rows == 0 ||
      columns == 0)
    return FileError(file_index, "no image size (Rows/Columns missing or zero)");
  if (ds.findAndGetUint16(DCM_SamplesPerPixel, samples).bad()) samples = 1;
  if (samples != 1 && samples != 3)
    return FileError(file_index, "unsupported SamplesPerPixel " + std::to_string(samples));
  Sint32 frames = 1;
  if (ds.findAndGetSint32(DCM_NumberOfFrames, frames).bad()) frames = 1;
  if (frames < 1) return FileError(file_index, "NumberOfFrames " + std::to_string(frames) + " is not positive");
  out.rows = rows;
  out.columns = columns;
  out.channels = samples;
  out.frames = frames;
  const double count = double(rows) * double(columns) * double(samples) * double(frames);
  if (count > static_cast<double>(options.max_voxels))
    return FileError(file_index, "volume of " + std::to_string(static_cast<int64_t>(count)) +
                                     " values exceeds the limit of " + std::to_string(options.max_voxels));
  out.has_position = GetDoubles(ds, DCM_ImagePositionPatient, out.position);
  out.has_orientation = GetDoubles(ds, DCM_ImageOrientationPatient, out.orientation);
  std::array<double, 2> spacing{};
  out.has_pixel_spacing = GetDoubles(ds, DCM_PixelSpacing, spacing) && spacing[0] > 0 && spacing[1] > 0;
  if (out.has_pixel_spacing) {
    out.row_spacing_mm = spacing[0];
    out.column_spacing_mm = spacing[1];
  } else if (options.require_pixel_spacing) {
    return FileError(file_index, "no PixelSpacing (or not two positive numbers)");
  }
  out.slice_thickness_mm = GetDouble(ds, DCM_SliceThickness, 0.0);
  out.spacing_between_slices_mm = GetDouble(ds, DCM_SpacingBetweenSlices, 0.0);
  out.series_instance_uid = GetString(ds, DCM_SeriesInstanceUID);
  out.modality = GetString(ds, DCM_Modality);
  return Status::Ok();
}

// Decompresses when needed and converts the stored samples to rescaled floats.
Status ReadPixels(DcmDataset& ds, int file_index, const DicomReadOptions& options, DicomFileFrames& out) {
  const E_TransferSyntax xfer = ds.getOriginalXfer();
  const DcmXfer xfer_info(xfer);
  if (!IsSupportedTransferSyntax(xfer))
    return FileError(file_index, std::string("unsupported transfer syntax ") + xfer_info.getXferName() + " (" +
                                     xfer_info.getXferID() + ")");
  DcmElement* pixel_element = nullptr;
  if (ds.findAndGetElement(DCM_PixelData, pixel_element).bad() || pixel_element == nullptr)
    return FileError(file_index, "no pixel data");
  if (xfer_info.isEncapsulated()) {
    EnsureDicomCodecsRegistered();
    OFCondition cond = ds.chooseRepresentation(EXS_LittleEndianExplicit, nullptr);
    if (cond.bad() || !ds.canWriteXfer(EXS_LittleEndianExplicit))
      return FileError(file_index, std::string("cannot decode ") + xfer_info.getXferName() + " pixel data (" +
                                       cond.text() + ")");
  }
  // The decoders may rewrite PhotometricInterpretation/PlanarConfiguration: read them after decoding.
  out.photometric_interpretation = GetString(ds, DCM_PhotometricInterpretation);
  PixelFormat format;
  IL_RETURN_IF_ERROR(ReadPixelFormat(ds, file_index, options, format));
  Uint8* bytes = nullptr;
  if (ds.findAndGetElement(DCM_PixelData, pixel_element).bad() || pixel_element->getUint8Array(bytes).bad() ||
      bytes == nullptr)
    return FileError(file_index, "no pixel data");
  const size_t sample_bytes = static_cast<size_t>(format.bits_allocated / 8);
  const size_t frame_samples = static_cast<size_t>(out.rows) * out.columns * out.channels;
  const size_t total = frame_samples * static_cast<size_t>(out.frames);
  if (static_cast<size_t>(pixel_element->getLength()) < total * sample_bytes)
    return FileError(file_index, "pixel data holds " + std::to_string(pixel_element->getLength()) + " bytes, expected " +
                                     std::to_string(total * sample_bytes));
  out.values.resize(total);
  const size_t plane = static_cast<size_t>(out.rows) * out.columns;
  for (size_t f = 0; f < static_cast<size_t>(out.frames); ++f) {
    const uint8_t* frame = bytes + f * frame_samples * sample_bytes;
    float* dst = out.values.data() + f * frame_samples;
    for (size_t i = 0; i < plane; ++i) {
      for (size_t c = 0; c < static_cast<size_t>(out.channels); ++c) {
        const size_t src = format.planar_configuration == 1 ? c * plane + i : i * out.channels + c;
        const double v = SampleValue(frame + src * sample_bytes, format);
        dst[i * out.channels + c] = static_cast<float>(v * format.slope + format.intercept);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<DicomFileFrames> DecodeDicomFrames(std::string_view bytes, int file_index, const DicomReadOptions& options) {
  DcmFileFormat file;
  IL_RETURN_IF_ERROR(ReadDataset(bytes, file_index, file));
  DcmDataset* ds = file.getDataset();
  if (ds == nullptr) return FileError(file_index, "holds no data set");
  if (!ds->tagExists(DCM_PixelData)) return FileError(file_index, "no pixel data");
  DicomFileFrames out;
  IL_RETURN_IF_ERROR(ReadAttributes(*ds, file_index, options, out));
  IL_RETURN_IF_ERROR(ReadPixels(*ds, file_index, options, out));
  return out;
}

}  // namespace inferloop::imaging
