#include "base/file_bytes.h"

#include <fstream>

namespace inferloop {

Result<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("cannot open '" + path + "'");
  f.seekg(0, std::ios::end);
  std::streamoff n = f.tellg();
  if (n < 0) return Status::InvalidArgument("cannot read '" + path + "'");
  std::string bytes(static_cast<size_t>(n), '\0');
  f.seekg(0);
  f.read(bytes.data(), n);
  if (!f) return Status::InvalidArgument("failed reading '" + path + "'");
  return bytes;
}

}  // namespace inferloop
