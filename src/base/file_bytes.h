// Reading a whole file into memory (model files, .npy / .pb tensors, JSON, exclusion lists).
#pragma once

#include <string>

#include "inferloop/status.h"

namespace inferloop {

// Reads a whole file, also one whose size the file system does not report (/proc, /sys);
// kNotFound / kInvalidArgument with the path on failure.
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace inferloop
