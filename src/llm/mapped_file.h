// A read-only memory mapping of a whole file (RAII: unmapped on destruction). Move-only; the
// mapped bytes never move, so spans into them stay valid while the MappedFile (or whatever it
// was moved into) lives.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "inferloop/status.h"

namespace inferloop::llm {

class MappedFile {
 public:
  // NotFound when the file cannot be opened; InvalidArgument when it is not a regular file.
  // An empty file maps to an empty span.
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void Reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Lets the pages wholly inside `range` (bytes of a MappedFile) leave this process's memory: for
// data that was copied elsewhere. The bytes stay readable; a later read maps them in again.
void ReleaseMappedPages(std::span<const uint8_t> range);

}  // namespace inferloop::llm
