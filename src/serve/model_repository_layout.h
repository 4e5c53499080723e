// What a model repository folder holds: the models, their configurations and the versions to
// serve. Reads the file system only (it loads no model).
//
// Layout (the one Triton and KServe use):
//   DIR/<model>/config.pbtxt          optional; protobuf text (src/serve/model_config.h)
//   DIR/<model>/<version>/<model file>  <version>: a positive integer without leading zeros
// The model file is what the model's backend reads (model.onnx, model.gguf; none for an ensemble,
// whose version folders are empty): a ModelFileRule says which, from the config and the files of
// the highest version folder (the default rule: config's default_model_filename, else
// model.onnx). Entries of DIR that are not folders, or whose names start with '.', are not
// models. Inside a model folder, names that are not versions are ignored; a version folder
// without the model file is reported in `skipped` and not served.
// The config's version_policy picks the versions to serve among the available ones:
// latest { num_versions: N } (the default, N = 1; 0 means 1) serves the N highest; all serves
// every one; specific { versions: [...] } serves exactly those, and one that is not available
// is an error for the model.
#pragma once

#include <cstdint>
#include <functional>
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
  std::string version_dir;  // DIR/<model>/<version>
  std::string model_path;   // DIR/<model>/<version>/<model file>; "" when the backend reads no file
};

// The file each version folder of a model must hold, given its (partial) config and the names of
// the regular files in its highest version folder; "" when the folder itself is the version.
// An error (no backend serves such a model) becomes the model's status.
using ModelFileRule =
    std::function<Result<std::string>(const ModelConfig& config, const std::vector<std::string>& version_files)>;

// One model folder. When `status` is not OK the model cannot be served (bad or unreadable
// config.pbtxt, no version to serve, a specific version missing) and `versions` is empty.
struct ModelLayout {
  std::string name;                        // the folder name
  std::string dir;                         // DIR/<model>
  bool has_config_file = false;            // config.pbtxt exists
  ModelConfig config;                      // as parsed (not yet completed from the model);
                                           // only `name` set when there is no config.pbtxt
  std::string model_filename;              // what the rule chose ("" = no file)
  std::vector<ModelVersionFile> versions;  // to serve, ascending by version
  std::vector<SkippedVersion> skipped;     // version folders without a model file
  Status status;
};

// A version folder name (or a requested version): a positive integer without leading zeros
// that fits int64. False, with *out untouched, otherwise.
bool ParseVersion(const std::string& s, int64_t* out);

// A model name (or version) as a client gave it, for error messages: whole up to 64 bytes, else
// its first 64 bytes and "... (N bytes)", so a huge name never makes a huge message (a gRPC
// error's text goes in a header that clients cap).
std::string NameForMessage(const std::string& name);

// `message` with every mention of the model repository's folder (as given, and as an absolute,
// normalized path) taken out: "<repository>/m/1/model.onnx" becomes "m/1/model.onnx" and the folder
// itself "<model repository>". For what clients see: error messages and reasons name no server path.
std::string WithoutRepositoryPath(std::string message, const std::string& repository);

// Size and modification time of a file ("" when absent): what poll mode compares.
std::string FileStamp(const std::string& path);

// Largest config.pbtxt read; a larger one is an error for its model.
inline constexpr size_t kMaxConfigFileBytes = size_t{4} << 20;

// Scans every model folder of `repository_dir`, sorted by model name. One model's problems are in
// its own ModelLayout::status and never hide the others; the Result is an error only when
// `repository_dir` itself cannot be listed. `rule` null: the default rule.
Result<std::vector<ModelLayout>> ScanModelRepository(const std::string& repository_dir,
                                                     const ModelFileRule& rule = nullptr);

// Scans one model folder (`model_dir`, whose last component is the model's name).
ModelLayout ScanModelFolder(const std::string& model_dir, const ModelFileRule& rule = nullptr);

// Names of the regular files directly in `dir`, sorted ([] when it cannot be listed). Hidden
// files (names starting with '.') are left out: deploy tools write a file under a hidden name and
// rename it when complete (rsync's ".model.onnx.XXXXXX"), so one appearing or growing is not a
// change of the version (polling would reload the old files while the copy is under way).
std::vector<std::string> FilesIn(const std::string& dir);

// The versions `policy` serves among `available` (any order), ascending. Errors: a specific
// version that is not available; nothing available. `model_filename` only words the errors.
Result<std::vector<int64_t>> SelectVersions(const configpb::ModelVersionPolicy& policy,
                                            const std::vector<int64_t>& available,
                                            const std::string& model_filename = "model.onnx");

}  // namespace inferloop::serve
