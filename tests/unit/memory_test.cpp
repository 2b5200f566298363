#include "torchbench/memory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "memory_internal.h"

namespace torchbench {
namespace {

TEST(MemoryTest, CpuCounterTracksCurrentAndPeak) {
  InstallCpuMemoryCounter();
  InstallCpuMemoryCounter();  // Idempotent.
  ASSERT_TRUE(CpuMemoryCounterInstalled());
  const c10::Device cpu(c10::kCPU);
  const int64_t before = CurrentMemoryBytes(cpu);
  ResetPeakMemory(cpu);
  EXPECT_EQ(PeakMemoryBytes(cpu), before);
  {
    torch::Tensor a = torch::empty({1 << 20}, torch::kFloat);  // 4 MiB
    EXPECT_EQ(CurrentMemoryBytes(cpu) - before, 4 << 20);
    torch::Tensor b = torch::empty({1 << 19}, torch::kFloat);  // 2 MiB
    EXPECT_EQ(PeakMemoryBytes(cpu) - before, 6 << 20);
  }
  EXPECT_EQ(CurrentMemoryBytes(cpu), before);
  EXPECT_EQ(PeakMemoryBytes(cpu) - before, 6 << 20);
  ResetPeakMemory(cpu);
  EXPECT_EQ(PeakMemoryBytes(cpu), before);
}

TEST(MemoryTest, CountedTensorsBehave) {
  InstallCpuMemoryCounter();
  torch::Tensor a = torch::arange(1000, torch::kFloat);
  torch::Tensor b = a.clone();
  b.resize_({4000});  // Reallocates through the allocator.
  EXPECT_FLOAT_EQ(b[999].item<float>(), 999.0f);
  EXPECT_FLOAT_EQ(a.sum().item<float>(), 499500.0f);
}

TEST(MemoryTest, HostRssIsReported) {
  EXPECT_GT(PeakHostRssBytes(), 0);
  ResetPeakHostRss();  // May be refused; must not throw.
  EXPECT_GT(PeakHostRssBytes(), 0);
}

}  // namespace
}  // namespace torchbench
