// Input data of the model tools (`inferloop compare`, `quantize`): samples of named tensors read
// from a folder of tensor files (graph/tensor_file.h).
#pragma once

#include <string>
#include <vector>

#include "inferloop/session.h"
#include "inferloop/status.h"

namespace inferloop {

// One input sample: named tensors.
using Sample = std::vector<NamedValue>;

// Reads DATA: a folder of <input>.npy / <input>.pb (TensorProto; its name field, when set, names
// the input) files = one sample, or a folder of such folders = one sample per folder (sorted by
// name). Errors: not a folder, no tensor files, unreadable files.
Result<std::vector<Sample>> LoadSamples(const std::string& dir);

}  // namespace inferloop
