// Fuzzes config.pbtxt parsing and checking: arbitrary text must give a config or a Status, never a
// crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/model_config.h"
#include "serve/model_repository_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = inferloop::serve::ParseModelConfig(text, "m");
  if (!config.ok()) return 0;
  (void)inferloop::serve::ValidateCompleteModelConfig(*config);
  (void)inferloop::serve::SelectVersions(config->version_policy(), {1, 2, 3, 10});
  for (const auto& in : config->input())
    (void)inferloop::serve::KServeDataTypeName(static_cast<inferloop::serve::ConfigDataType>(in.data_type()));
  return 0;
}
