#include "base/file_bytes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace inferloop {
namespace {

TEST(ReadFileBytes, ReadsAnEmptyFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "inferloop_file_bytes_empty.bin").string();
  std::ofstream(path, std::ios::binary).close();
  auto got = ReadFileBytes(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got.value(), "");
}

TEST(ReadFileBytes, ReadsARegularFileWholeWithItsZeroBytes) {
  const std::string path = (std::filesystem::temp_directory_path() / "inferloop_file_bytes_test.bin").string();
  const std::string content = std::string("ab\0cd", 5) + std::string(100000, 'x');
  std::ofstream(path, std::ios::binary) << content;
  auto got = ReadFileBytes(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got.value(), content);
}

TEST(ReadFileBytes, ReadsAProcFileWhoseSizeIsReportedAsZero) {
  ASSERT_EQ(std::filesystem::file_size("/proc/self/status"), 0u);  // what makes it a special case
  EXPECT_FALSE(ReadFileBytes("/proc/self/cgroup").value().empty());  // what the cgroup quota reads
  auto got = ReadFileBytes("/proc/self/status");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got.value().rfind("Name:", 0), 0u) << got.value().substr(0, 80);
  EXPECT_NE(got.value().find("\nPid:"), std::string::npos);
}

TEST(ReadFileBytes, AFolderIsAClearErrorNotACrash) {
  // A folder opens as a stream and seeks to an absurd end: it must be refused before that.
  auto got = ReadFileBytes(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("is a folder"), std::string::npos) << got.status().ToString();
}

TEST(ReadFileBytes, AMissingFileIsNotFoundNamingThePath) {
  auto got = ReadFileBytes("/nonexistent/inferloop/file");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("/nonexistent/inferloop/file"), std::string::npos);
}

}  // namespace
}  // namespace inferloop
