// Serializes the graph IR back to an ONNX ModelProto (the inverse of onnx_loader.h).
//
// Everything the loader keeps is written: opset imports, producer, metadata, graph inputs /
// outputs / value_info with their types, initializers (tensor bytes as raw_data), nodes with
// every attribute kind, subgraphs recursively. Model-local functions were inlined at load time
// and sparse initializers densified, so neither appears in the output. Loading the written
// bytes gives back an equivalent Model.
#pragma once

#include <string>

#include "graph/graph.h"
#include "onnx.pb.h"

namespace inferloop {

// Fills `proto` from `model`.
void ModelToProto(const Model& model, onnxpb::ModelProto* proto);

// The serialized ModelProto; kInvalidArgument when it would exceed protobuf's 2 GiB limit.
Result<std::string> SerializeModel(const Model& model);

// Writes SerializeModel(model) to `path` (replacing it); kUnavailable naming the path on I/O errors.
Status SaveModelToFile(const Model& model, const std::string& path);

}  // namespace inferloop
