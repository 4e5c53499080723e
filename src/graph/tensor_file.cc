#include "graph/tensor_file.h"

#include <filesystem>

#include "base/file_bytes.h"
#include "base/npy.h"
#include "base/status_macros.h"
#include "graph/tensor_proto.h"
#include "onnx.pb.h"

namespace inferloop {

namespace fs = std::filesystem;

bool IsTensorFile(const std::string& path) {
  const fs::path ext = fs::path(path).extension();
  return ext == ".npy" || ext == ".pb";
}

Result<Tensor> LoadTensorFile(const std::string& path, std::string* name) {
  const fs::path p(path);
  if (p.extension() == ".npy") {
    auto t = ReadNpyFile(path);
    if (!t.ok()) return t.status().WithContext(path);
    if (name) *name = p.stem().string();
    return t;
  }
  IL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  onnxpb::TensorProto tp;
  if (!tp.ParseFromString(bytes)) return Status::InvalidArgument(path + ": not a TensorProto (.pb) file");
  auto t = TensorFromProto(tp, p.parent_path().string());
  if (!t.ok()) return t.status().WithContext(path);
  if (name) *name = tp.name().empty() ? p.stem().string() : tp.name();
  return t;
}

}  // namespace inferloop
