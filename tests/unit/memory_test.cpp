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

// The CPU has no allocator reserve and no NVML; a CUDA device asked for
// without a GPU or NVML is unknown (-1), and the status says why in one line.
TEST(MemoryTest, ReserveAndDeviceMemoryAreUnknownWithoutAGpu) {
  EXPECT_EQ(PeakReservedMemoryBytes(c10::Device(c10::kCPU)), -1);
  EXPECT_EQ(DeviceMemoryUsedBytes(c10::Device(c10::kCPU)), -1);
  const std::string status = DeviceMemoryUsedStatus();
  EXPECT_TRUE(status == "available" || status.rfind("unavailable: ", 0) == 0)
      << status;
  EXPECT_EQ(status.find('\n'), std::string::npos) << status;
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(DeviceMemoryUsedBytes(c10::Device(c10::kCUDA, 0)), -1);
  }
}

TEST(MemoryTest, HostRssIsReported) {
  EXPECT_GT(PeakHostRssBytes(), 0);
  ResetPeakHostRss();  // May be refused; must not throw.
  EXPECT_GT(PeakHostRssBytes(), 0);
}

}  // namespace
}  // namespace torchbench
