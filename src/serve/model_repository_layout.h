// What a model repository folder holds: the models, their configurations and the versions to
// serve. Reads the file system only (it loads no model).
//
// Layout (the one Triton and KServe use):
//   DIR/<model>/config.pbtxt          optional; protobuf text (src/serve/model_config.h)
//   DIR/<model>/<version>/model.onnx  <version>: a positive integer without leading zeros
// Entries of DIR that are not folders, or whose names start with '.', are not models. Inside a
// model folder, names that are not versions are ignored; a version folder without a regular file
// model.onnx is reported in `skipped` and not served.
// The config's version_policy picks the versions to serve among the available ones:
// latest { num_versions: N } (the default, N = 1; 0 means 1) serves the N highest; all serves
// every one; specific { versions: [...] } serves exactly those, and one that is not available
// is an error for the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "serve/model_config.h"

namespace inferloop::serve {

// A version folder that is not served, and why.
struct SkippedVersion {
  std::string folder;  // its name inside the model folder
  std::string reason;
};

struct ModelVersionFile {
  int64_t version = 0;
  std::string model_path;  // DIR/<model>/<version>/model.onnx
};

// One model folder. When `status` is not OK the model cannot be served (bad or unreadable
// config.pbtxt, no version to serve, a specific version missing) and `versions` is empty.
struct ModelLayout {
  std::string name;                        // the folder name
  std::string dir;                         // DIR/<model>
  bool has_config_file = false;            // config.pbtxt exists
  ModelConfig config;                      // as parsed (not yet completed from the model);
                                           // only `name` set when there is no config.pbtxt
  std::vector<ModelVersionFile> versions;  // to serve, ascending by version
  std::vector<SkippedVersion> skipped;     // version folders without a model file
  Status status;
};

// A version folder name (or a requested version): a positive integer without leading zeros
// that fits int64. False, with *out untouched, otherwise.
bool ParseVersion(const std::string& s, int64_t* out);

// Size and modification time of a file ("" when absent): what poll mode compares.
std::string FileStamp(const std::string& path);

// Largest config.pbtxt read; a larger one is an error for its model.
inline constexpr size_t kMaxConfigFileBytes = size_t{4} << 20;

// Scans every model folder of `repository_dir`, sorted by model name. One model's problems are in
// its own ModelLayout::status and never hide the others; the Result is an error only when
// `repository_dir` itself cannot be listed.
Result<std::vector<ModelLayout>> ScanModelRepository(const std::string& repository_dir);

// LLM models: DIR/<model>/<version>/model.gguf (and no model.onnx) is a GGUF language model,
// served through the OpenAI-compatible API rather than KServe v2; ScanModelRepository leaves
// such folders out. FindLlmModelFile gives the highest version's model.gguf ("" if none);
// ScanLlmModels every (model name, model.gguf path) of the repository, sorted by name.
std::string FindLlmModelFile(const std::string& model_dir);
std::vector<std::pair<std::string, std::string>> ScanLlmModels(const std::string& repository_dir);

// Scans one model folder (`model_dir`, whose last component is the model's name).
ModelLayout ScanModelFolder(const std::string& model_dir);

// The versions `policy` serves among `available` (any order), ascending. Errors: a specific
// version that is not available; nothing available.
Result<std::vector<int64_t>> SelectVersions(const configpb::ModelVersionPolicy& policy,
                                            const std::vector<int64_t>& available);

}  // namespace inferloop::serve
