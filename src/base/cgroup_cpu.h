// The CPU quota a Linux cgroup puts on this process (what a Kubernetes CPU limit becomes).
//
// cgroup v2 ("0::/path" in /proc/self/cgroup, cpu.max in the cgroup directory) and v1 (the
// hierarchy carrying the "cpu" controller, cpu.cfs_quota_us / cpu.cfs_period_us), on any layout:
// unified, hybrid (v1 controllers plus cgroup2 at /sys/fs/cgroup/unified) or legacy. Mount points
// come from /proc/self/mountinfo (the usual /sys/fs/cgroup paths when it names none). The process's
// own cgroup and every ancestor up to the mount's root are read: the smallest quota applies, as
// the kernel enforces every level. Inside a container's cgroup namespace the process's path is
// "/" and the mount root is its cgroup, which is the same walk.
#pragma once

#include <functional>
#include <string>

namespace inferloop {

// Each returns the CPU count the quota allows (rounded up, at least 1), or 0 when there is no
// quota or the text does not parse.
// cgroup v2 cpu.max: "max 100000" or "150000 100000".
int CpuLimitFromCgroupV2(const std::string& cpu_max);
// cgroup v1: cpu.cfs_quota_us ("-1" = none) and cpu.cfs_period_us.
int CpuLimitFromCgroupV1(const std::string& quota_us, const std::string& period_us);

// Returns a file's whole text, or "" when it cannot be read.
using CgroupFileReader = std::function<std::string(const std::string& path)>;

// The CPU limit from the texts of /proc/self/cgroup and /proc/self/mountinfo, reading the
// cgroup files through `read` (injectable for tests). 0 when no level of any hierarchy has a quota.
int CpuLimitFromCgroups(const std::string& proc_self_cgroup, const std::string& mountinfo,
                        const CgroupFileReader& read);

// CpuLimitFromCgroups on this process's real /proc files. 0 = no quota.
int CgroupCpuLimit();

}  // namespace inferloop
