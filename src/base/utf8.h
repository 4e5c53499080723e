// UTF-8 encoding of one code point, the project's one copy (JSON and template text, .npy strings,
// string kernels, SVG text).
#pragma once

#include <cstdint>
#include <string>

namespace inferloop {

// Appends `code_point` (below 0x110000) to `out` as UTF-8: 1 to 4 bytes. Surrogate code points
// are encoded like any other (callers that must refuse them check first).
void AppendUtf8(std::string& out, uint32_t code_point);

}  // namespace inferloop
