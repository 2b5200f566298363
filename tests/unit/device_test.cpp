#include "torchbench/device.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "step_timer.h"

namespace torchbench {
namespace {

TEST(DeviceTest, ParsesCpuAndRejectsUnknown) {
  auto cpu = ParseDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(cpu->is_cpu());
  EXPECT_EQ(ParseDevice("tpu").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDevice("cuda:x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeviceTest, CudaWithoutGpuIsAClearError) {
  if (CudaAvailable()) GTEST_SKIP() << "a GPU is present";
  auto cuda = ParseDevice("cuda");
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cuda.status().message().find("no CUDA device"), std::string::npos);
  EXPECT_TRUE(DefaultDevice().is_cpu());
}

TEST(StepTimerTest, CpuTimeIsWallTime) {
  StepTimer timer(c10::Device(c10::kCPU));
  timer.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  StepTime t = timer.Stop();
  EXPECT_GE(t.seconds, 0.019);
  EXPECT_LT(t.seconds, 1.0);
  EXPECT_DOUBLE_EQ(t.seconds, t.wall_seconds);
}

TEST(StepTimerTest, RestartsOnEachStart) {
  StepTimer timer(c10::Device(c10::kCPU));
  timer.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  timer.Stop();
  timer.Start();
  StepTime t = timer.Stop();
  EXPECT_LT(t.seconds, 0.005);
}

TEST(DeviceTest, NamesTheCpu) { EXPECT_FALSE(DeviceName(c10::kCPU).empty()); }

}  // namespace
}  // namespace torchbench
