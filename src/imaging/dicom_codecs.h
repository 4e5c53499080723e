// DCMTK's decoders for compressed pixel data (JPEG via dcmjpeg, JPEG-LS via dcmjpls, RLE via
// dcmdata). DCMTK keeps its codec list in process-global state; EnsureDicomCodecsRegistered
// registers them exactly once (thread-safe, a function-local static) and the same static object
// deregisters them at process exit. Internal to src/imaging's DICOM reader.
#pragma once

namespace inferloop::imaging {

void EnsureDicomCodecsRegistered();

}  // namespace inferloop::imaging
