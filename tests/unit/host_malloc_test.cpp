#include "program/host_malloc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace torchbench {
namespace {

TEST(HostMallocTest, ParsesBothPoliciesAndRejectsOthers) {
  EXPECT_EQ(*ParseHostMalloc("retain"), HostMalloc::kRetain);
  EXPECT_EQ(*ParseHostMalloc("glibc"), HostMalloc::kGlibc);
  for (const char* bad : {"", "Retain", "jemalloc", "retain "}) {
    EXPECT_FALSE(ParseHostMalloc(bad).ok()) << bad;
  }
  EXPECT_EQ(ApplyHostMalloc(HostMalloc::kGlibc), "glibc");
}

#if defined(__GLIBC__)
// ctest runs each test in its own process, so the policy stays here.
TEST(HostMallocTest, RetainKeepsAFreedBlockInTheProcess) {
  ASSERT_EQ(ApplyHostMalloc(HostMalloc::kRetain), "retain");
  constexpr size_t kBytes = size_t{96} << 20;  // above glibc's 32 MiB mmap cap
  const struct mallinfo2 before = mallinfo2();
  char* block = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBytes);
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblks, before.hblks) << "the block was mmap'd";
  std::free(block);
  // Not trimmed: the heap still holds the block's bytes, free.
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.arena, kBytes);
  EXPECT_GE(after.fordblks, kBytes);
}
#endif

}  // namespace
}  // namespace torchbench
