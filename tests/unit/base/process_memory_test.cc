// HeapBytesInUse / ReleaseFreeMemoryToSystem / HeapAllocatorName against the allocator that
// serves this executable's malloc: glibc (or the sanitizers') in inferloop_unit_tests, tcmalloc in
// process_memory_tcmalloc_test (the same file, linked as the inferloop binary is:
// tests/CMakeLists.txt), so the counts the model manager charges are checked under both.
#include "base/process_memory.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define IL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IL_TEST_ASAN 1
#endif
#endif

#ifndef IL_EXPECT_ALLOCATOR
#ifdef IL_TEST_ASAN
#define IL_EXPECT_ALLOCATOR "asan"
#else
#define IL_EXPECT_ALLOCATOR "glibc"
#endif
#endif

namespace inferloop {
namespace {

constexpr int64_t kBlock = 64 << 20;
constexpr int64_t kSlack = 4 << 20;  // what gtest or the allocator's own books may add meanwhile

int64_t ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(ProcessMemory, NamesTheAllocatorServingMalloc) { EXPECT_STREQ(HeapAllocatorName(), IL_EXPECT_ALLOCATOR); }

TEST(ProcessMemory, CountsABlockUntilItIsFreed) {
  const int64_t before = HeapBytesInUse();
  auto block = std::make_unique<char[]>(kBlock);
  std::memset(block.get(), 1, kBlock);
  const int64_t held = HeapBytesInUse() - before;
  EXPECT_GE(held, kBlock);
  EXPECT_LT(held, kBlock + kSlack);
  block.reset();
  EXPECT_LT(HeapBytesInUse() - before, kSlack);
}

#ifndef IL_TEST_ASAN
// Not in sanitizer builds: AddressSanitizer keeps freed blocks in its quarantine (to catch a use
// after free) and no release call applies to it, so the resident set keeps them by design there.
TEST(ProcessMemory, FreedMemoryLeavesTheResidentSetAfterRelease) {
  ReleaseFreeMemoryToSystem();
  const int64_t base = ResidentBytes();
  auto block = std::make_unique<char[]>(kBlock);
  std::memset(block.get(), 1, kBlock);
  const int64_t touched = ResidentBytes();
  EXPECT_GE(touched - base, kBlock - kSlack);
  block.reset();
  ReleaseFreeMemoryToSystem();
  EXPECT_LT(ResidentBytes() - base, kSlack) << "resident " << base << " -> " << touched << " -> " << ResidentBytes();
}
#endif

}  // namespace
}  // namespace inferloop
