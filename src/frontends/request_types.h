// The transport-independent request/response types (src/serve/infer_request.h), named in the
// frontends namespace the codecs and servers use.
#pragma once

#include "serve/infer_request.h"

namespace inferloop::frontends {

using serve::InferInput;
using serve::InferOutput;
using serve::InferParameter;
using serve::InferParameters;
using serve::InferRequest;
using serve::InferResponse;
using serve::RequestedOutput;
using serve::WantsBinaryOutput;
using serve::kBinaryDataOutputParam;
using serve::kBinaryDataParam;
using serve::kBinaryDataSizeParam;

}  // namespace inferloop::frontends
