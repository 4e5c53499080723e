#include "imaging/dicom_codecs.h"

#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>

namespace inferloop::imaging {
namespace {

// Registration is process-global in DCMTK (DcmCodecList). This object is the one owner: built on
// first use, cleaned up when static objects are destroyed at exit. Other code in the process that
// also registers these codecs is harmless: DCMTK's registerCodecs() ignores a second call.
class DicomCodecRegistration {
 public:
  DicomCodecRegistration() {
    // YCbCr JPEG comes out as RGB (as pydicom gives it), colour-by-pixel.
    DJDecoderRegistration::registerCodecs(EDC_photometricInterpretation, EUC_never, EPC_colorByPixel);
    DJLSDecoderRegistration::registerCodecs(EJLSUC_never, EJLSPC_colorByPixel);
    DcmRLEDecoderRegistration::registerCodecs();
  }
  ~DicomCodecRegistration() {
    DcmRLEDecoderRegistration::cleanup();
    DJLSDecoderRegistration::cleanup();
    DJDecoderRegistration::cleanup();
  }
  DicomCodecRegistration(const DicomCodecRegistration&) = delete;
  DicomCodecRegistration& operator=(const DicomCodecRegistration&) = delete;
};

}  // namespace

void EnsureDicomCodecsRegistered() {
  static const DicomCodecRegistration registration;  // C++11: initialised once, thread-safely
  (void)registration;
}

}  // namespace inferloop::imaging
