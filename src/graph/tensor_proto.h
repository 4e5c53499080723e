// Conversions between ONNX's TensorProto / SequenceProto / OptionalProto and Tensor / Value.
// Handles raw_data and the typed fields, packed sub-byte types, strings, and external data
// files (resolved relative to base_dir; paths may not escape it).
#pragma once

#include <string>

#include "inferloop/tensor.h"
#include "onnx.pb.h"

namespace inferloop {

Result<Tensor> TensorFromProto(const onnxpb::TensorProto& proto, const std::string& base_dir);
Result<Tensor> SparseTensorFromProto(const onnxpb::SparseTensorProto& proto, const std::string& base_dir);
Result<Value> ValueFromSequenceProto(const onnxpb::SequenceProto& proto, const std::string& base_dir);
Result<Value> ValueFromOptionalProto(const onnxpb::OptionalProto& proto, const std::string& base_dir);
// Writes raw_data (sub-byte types packed) or string_data.
void TensorToProto(const Tensor& t, onnxpb::TensorProto* proto);

}  // namespace inferloop
