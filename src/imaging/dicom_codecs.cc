#include "imaging/dicom_codecs.h"

#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>
#include <dcmtk/oflog/oflog.h>

namespace inferloop::imaging {
namespace {

// Registration is process-global in DCMTK (DcmCodecList). This object is the one owner: built on
// first use, cleaned up when static objects are destroyed at exit. Other code in the process that
// also registers these codecs is harmless: DCMTK's registerCodecs() ignores a second call.
class DicomCodecRegistration {
 public:
  DicomCodecRegistration() {
    // DCMTK's own logger would write parser warnings about odd files to stderr, in the middle of
    // the server's JSON event log; what matters comes back as our Status messages instead.
    OFLog::configure(OFLogger::OFF_LOG_LEVEL);
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
