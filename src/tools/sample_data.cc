#include "tools/sample_data.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/status_macros.h"
#include "graph/tensor_file.h"

namespace inferloop {

namespace fs = std::filesystem;

namespace {

Result<NamedValue> LoadNamedTensorFile(const fs::path& p) {
  std::string name;
  IL_ASSIGN_OR_RETURN(Tensor t, LoadTensorFile(p.string(), &name));
  return NamedValue(std::move(name), Value(std::move(t)));
}

Result<Sample> LoadSampleDir(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && IsTensorFile(e.path().string())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Sample s;
  std::set<std::string> seen;
  for (const auto& f : files) {
    IL_ASSIGN_OR_RETURN(NamedValue nv, LoadNamedTensorFile(f));
    if (!seen.insert(nv.first).second)
      return Status::InvalidArgument(dir.string() + ": two files give input '" + nv.first + "'");
    s.push_back(std::move(nv));
  }
  return s;
}

}  // namespace

Result<std::vector<Sample>> LoadSamples(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::InvalidArgument("data '" + dir + "' is not a folder (expected <input>.npy/.pb files or folders of them)");
  bool direct = false;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && IsTensorFile(e.path().string())) direct = true;
    if (e.is_directory()) subdirs.push_back(e.path());
  }
  std::vector<Sample> samples;
  if (direct) {
    IL_ASSIGN_OR_RETURN(Sample s, LoadSampleDir(dir));
    samples.push_back(std::move(s));
    return samples;
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& d : subdirs) {
    IL_ASSIGN_OR_RETURN(Sample s, LoadSampleDir(d));
    if (!s.empty()) samples.push_back(std::move(s));
  }
  if (samples.empty()) return Status::InvalidArgument("data '" + dir + "' holds no .npy or .pb tensor files");
  return samples;
}

}  // namespace inferloop
