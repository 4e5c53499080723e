#include "base/file_bytes.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace inferloop {

Result<std::string> ReadFileBytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::InvalidArgument("'" + path + "' is a folder, not a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound("cannot open '" + path + "'");
  f.seekg(0, std::ios::end);
  const std::streamoff n = f.tellg();  // -1 where the file cannot seek (/proc)
  f.clear();
  f.seekg(0);
  std::string bytes;
  if (n > 0) {
    bytes.resize(static_cast<size_t>(n));
    f.read(bytes.data(), n);
    if (!f) return Status::InvalidArgument("failed reading '" + path + "'");
  }
  // Files whose size says nothing (/proc and cgroup files report 0 or cannot seek): the rest,
  // streamed.
  if (f.peek() != std::ifstream::traits_type::eof()) {
    std::ostringstream rest;
    rest << f.rdbuf();
    bytes += rest.str();
  }
  if (f.bad()) return Status::InvalidArgument("failed reading '" + path + "'");
  return bytes;
}

}  // namespace inferloop
