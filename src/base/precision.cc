#include "inferloop/precision.h"

namespace inferloop {

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kAuto: return "auto";
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

Result<Precision> ParsePrecision(const std::string& name) {
  if (name.empty()) return Precision::kAuto;
  for (Precision p : {Precision::kAuto, Precision::kFp32, Precision::kBf16, Precision::kFp16, Precision::kInt8})
    if (name == PrecisionName(p)) return p;
  return Status::InvalidArgument("unknown precision '" + name + "' (expected auto, fp32, bf16, fp16 or int8)");
}

}  // namespace inferloop
