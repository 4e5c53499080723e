#include "base/cgroup_cpu.h"

#include "base/file_bytes.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace inferloop {

namespace {

std::string ReadSmallFile(const std::string& path) {
  auto bytes = ReadFileBytes(path);
  return bytes.ok() ? std::move(bytes).value() : std::string();
}

bool ParseInt64(const std::string& s, int64_t* out) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (i == s.size()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str() + i, &end, 10);
  if (errno || end == s.c_str() + i) return false;
  *out = v;
  return true;
}

int CeilRatio(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  int64_t n = (quota + period - 1) / period;
  return static_cast<int>(std::clamp<int64_t>(n, 1, 1 << 20));
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

bool HasItem(const std::string& comma_list, const std::string& item) {
  for (const std::string& x : Split(comma_list, ','))
    if (x == item) return true;
  return false;
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo (octal).
std::string UnescapeMountPath(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out.push_back(static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// One cgroup filesystem mount: where it is, and which cgroup its root directory is.
struct CgroupMount {
  std::string root;         // the cgroup the mount point shows (field 4 of mountinfo)
  std::string mount_point;  // field 5
};

// The cgroup2 mounts (v2 = true) or the v1 mounts carrying the "cpu" controller.
std::vector<CgroupMount> FindMounts(const std::string& mountinfo, bool v2) {
  std::vector<CgroupMount> mounts;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string w; fields >> w;) f.push_back(w);
    auto sep = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || sep == f.end() || f.end() - sep < 4) continue;
    const std::string& fstype = *(sep + 1);
    const std::string& super_options = *(sep + 3);
    if (v2 ? fstype == "cgroup2" : fstype == "cgroup" && HasItem(super_options, "cpu"))
      mounts.push_back({UnescapeMountPath(f[3]), UnescapeMountPath(f[4])});
  }
  return mounts;
}

// This process's cgroup path in the v2 hierarchy ("0::/path") or in the v1 hierarchy carrying
// the "cpu" controller ("N:cpu,cpuacct:/path"); "/" when /proc/self/cgroup names none.
std::string ProcessCgroupPath(const std::string& proc_self_cgroup, bool v2) {
  std::istringstream in(proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    bool match = v2 ? line.compare(0, a, "0") == 0 && controllers.empty() : HasItem(controllers, "cpu");
    if (match) return line.substr(b + 1);
  }
  return "/";
}

// The smallest quota on `path` and its ancestors under one mount (path relative to the
// hierarchy's root, as /proc/self/cgroup gives it).
int LimitUnderMount(const CgroupMount& m, std::string path, bool v2, const CgroupFileReader& read) {
  if (m.root != "/") {
    // The mount shows a sub-cgroup (a container without a cgroup namespace): strip its root.
    // A path outside it cannot be reached through this mount: read the mount's own root only.
    if (path == m.root) path = "/";
    else if (path.rfind(m.root + "/", 0) == 0) path = path.substr(m.root.size());
    else path = "/";
  }
  int limit = 0;
  for (;;) {
    std::string dir = m.mount_point + (path == "/" ? std::string() : path);
    int l = v2 ? CpuLimitFromCgroupV2(read(dir + "/cpu.max"))
               : CpuLimitFromCgroupV1(read(dir + "/cpu.cfs_quota_us"), read(dir + "/cpu.cfs_period_us"));
    if (l > 0) limit = limit > 0 ? std::min(limit, l) : l;
    if (path.empty() || path == "/") break;
    size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return limit;
}

}  // namespace

int CpuLimitFromCgroupV2(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota, period;
  if (!(in >> quota)) return 0;
  if (quota == "max") return 0;
  int64_t q = 0, p = 100000;
  if (!ParseInt64(quota, &q)) return 0;
  if (in >> period && !ParseInt64(period, &p)) return 0;
  return CeilRatio(q, p);
}

int CpuLimitFromCgroupV1(const std::string& quota_us, const std::string& period_us) {
  int64_t q = 0, p = 0;
  if (!ParseInt64(quota_us, &q) || !ParseInt64(period_us, &p)) return 0;
  return CeilRatio(q, p);  // quota -1 = unlimited -> 0
}

int CpuLimitFromCgroups(const std::string& proc_self_cgroup, const std::string& mountinfo,
                        const CgroupFileReader& read) {
  int limit = 0;
  for (bool v2 : {true, false}) {
    std::vector<CgroupMount> mounts = FindMounts(mountinfo, v2);
    if (mounts.empty()) {
      // No mountinfo (or it lists no such mount): the conventional places.
      if (v2) mounts = {{"/", "/sys/fs/cgroup"}};
      else mounts = {{"/", "/sys/fs/cgroup/cpu"}, {"/", "/sys/fs/cgroup/cpu,cpuacct"}};
    }
    const std::string path = ProcessCgroupPath(proc_self_cgroup, v2);
    for (const CgroupMount& m : mounts) {
      int l = LimitUnderMount(m, path, v2, read);
      if (l > 0) limit = limit > 0 ? std::min(limit, l) : l;
    }
  }
  return limit;
}

int CgroupCpuLimit() {
  return CpuLimitFromCgroups(ReadSmallFile("/proc/self/cgroup"), ReadSmallFile("/proc/self/mountinfo"), ReadSmallFile);
}

}  // namespace inferloop
