#include "serve/infer_request.h"

namespace inferloop::serve {

bool WantsBinaryOutput(const InferRequest& request, const std::string& name) {
  for (const auto& out : request.outputs) {
    if (out.name == name && out.binary_data.has_value()) return *out.binary_data;
  }
  auto it = request.parameters.find(kBinaryDataOutputParam);
  if (it != request.parameters.end()) {
    if (const bool* b = std::get_if<bool>(&it->second)) return *b;
  }
  return false;
}

}  // namespace inferloop::serve
