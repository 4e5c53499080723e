#include "serve/model_repository_layout.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

namespace inferloop::serve {
namespace fs = std::filesystem;

bool ParseVersion(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return false;
  int64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  *out = v;
  return true;
}

namespace {

Result<std::string> ReadSmallFile(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return Status::NotFound("cannot read " + path.string() + ": " + ec.message());
  if (size > kMaxConfigFileBytes)
    return Status::InvalidArgument(path.string() + " is " + std::to_string(size) + " bytes (more than " +
                                   std::to_string(kMaxConfigFileBytes) + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::NotFound("cannot read " + path.string());
  return ss.str();
}

}  // namespace

Result<std::vector<int64_t>> SelectVersions(const configpb::ModelVersionPolicy& policy,
                                            const std::vector<int64_t>& available,
                                            const std::string& model_filename) {
  const std::string file = model_filename.empty() ? "" : "/" + model_filename;
  std::vector<int64_t> sorted = available;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (policy.has_specific()) {
    std::vector<int64_t> want(policy.specific().versions().begin(), policy.specific().versions().end());
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    if (want.empty()) return Status::InvalidArgument("version_policy: specific lists no versions");
    for (int64_t v : want)
      if (!std::binary_search(sorted.begin(), sorted.end(), v))
        return Status::NotFound("version_policy: specific version " + std::to_string(v) +
                                " has no folder " + std::to_string(v) + file);
    return want;
  }
  if (sorted.empty()) {
    if (model_filename.empty()) return Status::NotFound("no version folder (expected <model>/1/)");
    return Status::NotFound("no version folder holds a " + model_filename + " (expected <model>/1/" + model_filename + ")");
  }
  if (policy.has_all()) return sorted;
  const size_t n = policy.has_latest() && policy.latest().num_versions() > 0 ? policy.latest().num_versions() : 1;
  if (sorted.size() > n) sorted.erase(sorted.begin(), sorted.end() - static_cast<std::ptrdiff_t>(n));
  return sorted;
}

ModelLayout ScanModelFolder(const std::string& model_dir, const ModelFileRule& rule) {
  ModelLayout m;
  const fs::path dir(model_dir);
  m.dir = model_dir;
  m.name = dir.filename().string();
  if (m.name.empty()) m.name = dir.parent_path().filename().string();  // "DIR/model/"
  m.config.set_name(m.name);

  std::error_code ec;
  const fs::path config_path = dir / "config.pbtxt";
  if (fs::exists(config_path, ec)) {
    m.has_config_file = true;
    auto text = ReadSmallFile(config_path);
    if (!text.ok()) {
      m.status = text.status();
      return m;
    }
    auto config = ParseModelConfig(*text, m.name);
    if (!config.ok()) {
      m.status = config.status();
      return m;
    }
    m.config = std::move(config).value();
  }

  std::map<int64_t, fs::path> folders;  // version -> its folder
  fs::directory_iterator it(dir, ec);
  if (ec) {
    m.status = Status::NotFound("cannot list " + model_dir + ": " + ec.message());
    return m;
  }
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    int64_t version = 0;
    std::error_code ec2;
    if (ParseVersion(it->path().filename().string(), &version) && fs::is_directory(it->path(), ec2))
      folders[version] = it->path();
  }
  if (ec) {
    m.status = Status::NotFound("cannot list " + model_dir + ": " + ec.message());
    return m;
  }
  const std::vector<std::string> highest_files =
      folders.empty() ? std::vector<std::string>{} : FilesIn(folders.rbegin()->second.string());
  if (rule) {
    auto chosen = rule(m.config, highest_files);
    if (!chosen.ok()) {
      m.status = chosen.status();
      return m;
    }
    m.model_filename = *chosen;
  } else {
    m.model_filename = m.config.default_model_filename().empty() ? "model.onnx" : m.config.default_model_filename();
  }
  std::map<int64_t, std::string> available;  // version -> model path ("" when no file)
  for (const auto& [version, folder] : folders) {
    if (m.model_filename.empty()) {
      available[version] = "";
      continue;
    }
    std::error_code ec2;
    const fs::path model = folder / m.model_filename;
    if (!fs::is_regular_file(model, ec2)) {
      m.skipped.push_back({folder.filename().string(), "no regular file " + m.model_filename + " in it"});
      continue;
    }
    available[version] = model.string();
  }
  std::sort(m.skipped.begin(), m.skipped.end(),
            [](const SkippedVersion& a, const SkippedVersion& b) { return a.folder < b.folder; });

  std::vector<int64_t> versions;
  for (const auto& [v, path] : available) versions.push_back(v);
  auto selected = SelectVersions(m.config.version_policy(), versions, m.model_filename);
  if (!selected.ok()) {
    m.status = selected.status();
    return m;
  }
  for (int64_t v : *selected) m.versions.push_back({v, folders[v].string(), available[v]});
  return m;
}

Result<std::vector<ModelLayout>> ScanModelRepository(const std::string& repository_dir, const ModelFileRule& rule) {
  std::error_code ec;
  if (!fs::is_directory(repository_dir, ec))
    return Status::NotFound("model repository " + repository_dir + " is not a folder");
  std::vector<fs::path> model_dirs;
  fs::directory_iterator it(repository_dir, ec);
  if (ec) return Status::NotFound("cannot list model repository " + repository_dir + ": " + ec.message());
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    std::error_code ec2;
    if (name.empty() || name[0] == '.' || !fs::is_directory(it->path(), ec2)) continue;
    model_dirs.push_back(it->path());
  }
  if (ec) return Status::NotFound("cannot list model repository " + repository_dir + ": " + ec.message());
  std::sort(model_dirs.begin(), model_dirs.end());
  std::vector<ModelLayout> models;
  models.reserve(model_dirs.size());
  for (const auto& d : model_dirs) models.push_back(ScanModelFolder(d.string(), rule));
  return models;
}

std::string NameForMessage(const std::string& name) {
  constexpr size_t kShown = 64;
  if (name.size() <= kShown) return name;
  return name.substr(0, kShown) + "... (" + std::to_string(name.size()) + " bytes)";
}

namespace {

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::string WithoutRepositoryPath(std::string message, const std::string& repository) {
  std::vector<std::string> forms;
  auto add = [&forms](std::string form) {
    while (form.size() > 1 && form.back() == '/') form.pop_back();
    if (form.empty() || form == "/" || form == ".") return;
    forms.push_back(std::move(form));
  };
  if (!repository.empty() && repository.front() == '/') add(repository);  // a relative one names no server path
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(repository, ec).lexically_normal();
  if (!ec) {
    add(absolute.string());
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, ec);  // symlinks resolved
    if (!ec) add(canonical.string());
  }
  // Longest first, so that a form that contains another is replaced whole.
  std::sort(forms.begin(), forms.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& form : forms) ReplaceAll(message, form + "/", "");
  for (const std::string& form : forms) ReplaceAll(message, form, "<model repository>");
  return message;
}

std::string FileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;  // hidden: a copy in progress (rsync's .name.XXXXXX)
    if (it->is_regular_file(ec2)) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace inferloop::serve
