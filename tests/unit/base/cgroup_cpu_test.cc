#include "base/cgroup_cpu.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace inferloop {
namespace {

TEST(CgroupCpu, ParsesCgroupV2CpuMax) {
  EXPECT_EQ(CpuLimitFromCgroupV2("max 100000\n"), 0);
  EXPECT_EQ(CpuLimitFromCgroupV2("200000 100000\n"), 2);
  EXPECT_EQ(CpuLimitFromCgroupV2("150000 100000"), 2);  // 1.5 CPUs -> 2 threads
  EXPECT_EQ(CpuLimitFromCgroupV2("50000 100000"), 1);
  EXPECT_EQ(CpuLimitFromCgroupV2("400000"), 4);         // period defaults to 100000
  EXPECT_EQ(CpuLimitFromCgroupV2(""), 0);
  EXPECT_EQ(CpuLimitFromCgroupV2("garbage 100000"), 0);
  EXPECT_EQ(CpuLimitFromCgroupV2("100000 0"), 0);
}

TEST(CgroupCpu, ParsesCgroupV1Quota) {
  EXPECT_EQ(CpuLimitFromCgroupV1("-1\n", "100000\n"), 0);
  EXPECT_EQ(CpuLimitFromCgroupV1("300000\n", "100000\n"), 3);
  EXPECT_EQ(CpuLimitFromCgroupV1("250000", "100000"), 3);
  EXPECT_EQ(CpuLimitFromCgroupV1("", "100000"), 0);
  EXPECT_EQ(CpuLimitFromCgroupV1("100000", ""), 0);
}

// A fake filesystem: path -> text; anything else reads as "" (missing).
CgroupFileReader Files(std::map<std::string, std::string> files) {
  return [files = std::move(files)](const std::string& path) {
    auto it = files.find(path);
    return it == files.end() ? std::string() : it->second;
  };
}

// A hybrid host (systemd's layout): v1 controllers, cgroup2 at /sys/fs/cgroup/unified.
const char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "50 23 0:40 / /proc rw - proc proc rw\n";

TEST(CgroupCpu, V1ReadsTheProcessCgroupNotTheRoot) {
  const std::string cgroup = "4:cpuset:/\n3:cpu,cpuacct:/jobs/server\n0::/jobs/server\n";
  auto read = Files({{"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"},
                     {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"},
                     {"/sys/fs/cgroup/cpu,cpuacct/jobs/server/cpu.cfs_quota_us", "100000\n"},
                     {"/sys/fs/cgroup/cpu,cpuacct/jobs/server/cpu.cfs_period_us", "100000\n"}});
  EXPECT_EQ(CpuLimitFromCgroups(cgroup, kHybridMountinfo, read), 1);
}

TEST(CgroupCpu, V1SmallestQuotaOfTheAncestorsApplies) {
  const std::string cgroup = "1:cpu:/a/b/c\n";
  const std::string mountinfo = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
  auto read = Files({{"/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "200000"},  // 2 CPUs on the grandparent
                     {"/sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000"},
                     {"/sys/fs/cgroup/cpu/a/b/c/cpu.cfs_quota_us", "-1"},  // none on the leaf
                     {"/sys/fs/cgroup/cpu/a/b/c/cpu.cfs_period_us", "100000"},
                     {"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "400000"},
                     {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(CpuLimitFromCgroups(cgroup, mountinfo, read), 2);
}

TEST(CgroupCpu, V1MountOfASubCgroupStripsItsRoot) {
  // A container without a cgroup namespace: the mount shows /docker/abc, /proc/self/cgroup names it.
  const std::string cgroup = "2:cpu,cpuacct:/docker/abc\n";
  const std::string mountinfo = "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpuacct,cpu\n";
  auto read = Files({{"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "150000"},
                     {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(CpuLimitFromCgroups(cgroup, mountinfo, read), 2);
}

TEST(CgroupCpu, V2AtAHybridMountPointWithAncestors) {
  const std::string cgroup = "1:name=systemd:/x\n0::/kubepods/pod1/ctr\n";
  auto read = Files({{"/sys/fs/cgroup/unified/kubepods/pod1/ctr/cpu.max", "max 100000\n"},
                     {"/sys/fs/cgroup/unified/kubepods/pod1/cpu.max", "300000 100000\n"},
                     {"/sys/fs/cgroup/unified/kubepods/cpu.max", "max 100000\n"},
                     // Not the mount point: must not be read.
                     {"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "100000 100000\n"}});
  EXPECT_EQ(CpuLimitFromCgroups(cgroup, kHybridMountinfo, read), 3);
}

TEST(CgroupCpu, V2AndV1BothLimitedTakesTheSmaller) {
  const std::string cgroup = "3:cpu,cpuacct:/s\n0::/s\n";
  auto read = Files({{"/sys/fs/cgroup/unified/s/cpu.max", "400000 100000"},
                     {"/sys/fs/cgroup/cpu,cpuacct/s/cpu.cfs_quota_us", "50000"},
                     {"/sys/fs/cgroup/cpu,cpuacct/s/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(CpuLimitFromCgroups(cgroup, kHybridMountinfo, read), 1);
}

TEST(CgroupCpu, UnifiedHostWithoutMountinfoUsesSysFsCgroup) {
  auto read = Files({{"/sys/fs/cgroup/user.slice/cpu.max", "200000 100000"}});
  EXPECT_EQ(CpuLimitFromCgroups("0::/user.slice/session-1.scope\n", "", read), 2);
}

TEST(CgroupCpu, MountPointWithEscapedSpace) {
  const std::string mountinfo = "32 31 0:29 / /mnt/cg\\040v1 rw - cgroup cgroup rw,cpu\n";
  auto read = Files({{"/mnt/cg v1/j/cpu.cfs_quota_us", "100000"}, {"/mnt/cg v1/j/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(CpuLimitFromCgroups("5:cpu:/j\n", mountinfo, read), 1);
}

TEST(CgroupCpu, NoQuotaAnywhereIsZero) {
  auto read = Files({{"/sys/fs/cgroup/unified/cpu.max", "max 100000"},
                     {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1"},
                     {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(CpuLimitFromCgroups("3:cpu,cpuacct:/\n0::/\n", kHybridMountinfo, read), 0);
  EXPECT_EQ(CpuLimitFromCgroups("", "", Files({})), 0);
  // A cpuset or cpuacct-only hierarchy is not the cpu controller.
  EXPECT_EQ(CpuLimitFromCgroups("4:cpuset:/j\n", "34 31 0:31 / /c rw - cgroup cgroup rw,cpuset\n",
                                Files({{"/c/j/cpu.cfs_quota_us", "100000"}, {"/c/j/cpu.cfs_period_us", "100000"}})),
            0);
}

}  // namespace
}  // namespace inferloop
