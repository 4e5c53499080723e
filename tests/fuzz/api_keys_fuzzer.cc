// Fuzzes the API key file parser and the request checks (src/frontends/api_keys.h): any key file
// text gives keys or a line error, any Authorization value and REST target / gRPC method a
// verdict, never a crash, hang or leak. The input is split at its first NUL: the key file before
// it, the Authorization header (and target) after it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "frontends/api_keys.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferloop::frontends;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view file = in.substr(0, nul);
  const std::string header(nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1));
  (void)RestAccess(header);
  (void)GrpcAccess(header);
  auto keys = ApiKeys::Parse(file, "fuzz.txt");
  if (!keys.ok()) return 0;
  for (Access a : {Access::kOpen, Access::kAnyKey, Access::kInfer, Access::kControl, Access::kMetrics}) {
    (void)(*keys)->Check(&header, a);
    (void)(*keys)->Check(nullptr, a);
  }
  const std::string bearer = "Bearer " + header;
  (void)(*keys)->Check(&bearer, Access::kInfer);
  return 0;
}
