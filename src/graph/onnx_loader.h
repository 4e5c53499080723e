// Loads an ONNX model (ModelProto bytes) into the graph IR.
// Converts initializers (raw, typed, external data, sparse), value types and attributes,
// recursively for subgraphs, and inlines model-local functions (FunctionProto) at their
// call sites. Malformed input yields kInvalidArgument naming what is wrong; never aborts.
#pragma once

#include <string>

#include "graph/graph.h"

namespace inferloop {

// base_dir: folder against which external-data locations are resolved.
Result<Model> LoadModelFromBytes(const void* data, size_t size, const std::string& base_dir);
Result<Model> LoadModelFromFile(const std::string& path);

}  // namespace inferloop
