#include "program/trace_analysis.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace torchbench {
namespace {

using K = TraceEventKind;

TraceEvent Host(K kind, const std::string& name, int64_t start, int64_t end,
                uint64_t thread = 1, uint64_t correlation = 0) {
  TraceEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.thread = thread;
  e.correlation = correlation;
  return e;
}

TraceEvent Launch(int64_t start, uint64_t correlation) {
  return Host(K::kRuntime, "cudaLaunchKernel", start, start + 5, 1,
              correlation);
}

TraceEvent Device(K kind, const std::string& name, int64_t start, int64_t end,
                  uint64_t correlation, uint64_t linked = 0,
                  int64_t stream = 7) {
  TraceEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.stream = stream;
  e.correlation = correlation;
  e.linked_correlation = linked;
  return e;
}

TEST(TraceAnalysisTest, UnionLengthMergesOverlapsAndIgnoresEmpty) {
  EXPECT_EQ(UnionLength({}), 0);
  EXPECT_EQ(UnionLength({{0, 10}, {5, 15}, {20, 30}}), 25);
  EXPECT_EQ(UnionLength({{20, 30}, {0, 10}, {10, 20}}), 30);    // touching
  EXPECT_EQ(UnionLength({{0, 100}, {10, 20}, {30, 40}}), 100);  // nested
  EXPECT_EQ(UnionLength({{5, 5}, {9, 3}}), 0);
}

TEST(TraceAnalysisTest, CountsTopLevelAtenOpsPerStepAndSyncsOncePerChain) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", 0, 100),
      Host(K::kAtenOp, "aten::linear", 10, 40),
      Host(K::kAtenOp, "aten::addmm", 12, 38),  // nested: not top-level
      Host(K::kAtenOp, "aten::item", 50, 60),
      Host(K::kAtenOp, "aten::_local_scalar_dense", 51, 59),
      Host(K::kAtenOp, "aten::masked_select", 70, 90),
      Host(K::kAtenOp, "aten::nonzero", 72, 80),  // inside masked_select
      Host(K::kUserScope, "ProfilerStep#1", 100, 200),
      Host(K::kAtenOp, "aten::add", 110, 120),
      // The step HTA drops: outside max_steps.
      Host(K::kUserScope, "ProfilerStep#2", 200, 300),
      Host(K::kAtenOp, "aten::mul", 210, 220),
      // Outside any step (the harness's synchronization).
      Host(K::kAtenOp, "aten::sub", 400, 410),
  };
  const TraceSummary s = AnalyzeTrace(ev, /*max_steps=*/2);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.aten_ops, 4);    // linear, item, masked_select; add
  EXPECT_EQ(s.would_sync, 2);  // _local_scalar_dense; masked_select
  EXPECT_FALSE(s.has_device);
  ASSERT_FALSE(s.ops_by_host.empty());
  // linear: 30 inclusive, 4 self; addmm 26 self.
  for (const OpStat& r : s.ops_by_host) {
    if (r.name == "aten::linear") {
      EXPECT_EQ(r.self_ns, 4);
      EXPECT_EQ(r.total_ns, 30);
      EXPECT_EQ(r.calls, 1);
    }
  }
  EXPECT_EQ(s.ops_by_host.front().name, "aten::addmm");
}

TEST(TraceAnalysisTest, SplitsPhasesByScopesAndBackwardFunctions) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", 0, 1000),
      Host(K::kAtenOp, "aten::conv2d", 10, 100),
      Host(K::kAtenOp, "aten::sum", 100, 110),
      // Backward on the autograd thread (2), as on a GPU.
      Host(K::kBackwardFunction,
           "autograd::engine::evaluate_function: SumBackward0", 200, 260, 2),
      Host(K::kAtenOp, "aten::expand", 210, 220, 2),
      Host(K::kBackwardFunction,
           "autograd::engine::evaluate_function: ConvolutionBackward0", 300,
           500, 2),
      Host(K::kAtenOp, "aten::convolution_backward", 310, 490, 2),
      Host(K::kUserScope, "Optimizer.step#SGD.step", 600, 700),
      Host(K::kAtenOp, "aten::_foreach_add_", 610, 690),
  };
  const TraceSummary s = AnalyzeTrace(ev);
  EXPECT_EQ(s.forward.ops, 2);
  EXPECT_EQ(s.backward.ops, 2);
  EXPECT_EQ(s.optimizer.ops, 1);
  EXPECT_EQ(s.aten_ops, 5);
  EXPECT_EQ(s.forward.host_ns, 100);
  EXPECT_EQ(s.backward.host_ns, 190);
  EXPECT_EQ(s.optimizer.host_ns, 80);
}

// The time in products: the outermost product op of each chain (addmm in
// linear; convolution over _convolution over mkldnn_convolution), over the
// steps' host time.
TEST(TraceAnalysisTest, ProductTimeCountsEachChainOnce) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", 0, 100),
      Host(K::kAtenOp, "aten::linear", 10, 40),  // a composite: not one
      Host(K::kAtenOp, "aten::addmm", 12, 38),
      Host(K::kAtenOp, "aten::relu", 40, 50),
      Host(K::kAtenOp, "aten::convolution", 50, 90),
      Host(K::kAtenOp, "aten::_convolution", 51, 89),
      Host(K::kAtenOp, "aten::mkldnn_convolution", 52, 88),
      Host(K::kUserScope, "ProfilerStep#1", 100, 200),
      Host(K::kAtenOp, "aten::_cummax_helper", 110, 120),  // "mm", not one
      Host(K::kAtenOp, "aten::bmm", 130, 140),
  };
  const TraceSummary s = AnalyzeTrace(ev);
  EXPECT_EQ(s.step_host_ns, 200);
  EXPECT_EQ(s.product_host_ns, 26 + 40 + 10);
  EXPECT_TRUE(IsProductOp("aten::convolution_backward"));
  EXPECT_TRUE(IsProductOp("aten::_scaled_dot_product_flash_attention_for_cpu"));
  EXPECT_FALSE(IsProductOp("aten::matmul"));
}

// One stream: window 0..130 holds kernels [0,20) [50,60) [60,70) [110,130)
// and a memcpy [20,30). Gaps: 30..50 (launch at 40 > 30: host wait),
// 70..110 (launched early, 40 ns: other), none between [50,60) and [60,70).
TEST(TraceAnalysisTest, GpuWindowBusyIdleAndIdleSplit) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", -100, 200),
      Host(K::kAtenOp, "aten::mm", -50, -10, 1, 900),
      Launch(-40, 1),
      Launch(-30, 2),
      Launch(40, 3),
      Launch(-20, 4),
      Launch(-15, 5),
      Host(K::kRuntime, "cudaStreamSynchronize", 150, 190),
      Device(K::kKernel, "gemm", 0, 20, 1, 900),
      Device(K::kMemcpy, "Memcpy DtoD", 20, 30, 2),
      Device(K::kKernel, "relu", 50, 60, 3),
      Device(K::kKernel, "relu", 60, 70, 4),
      Device(K::kKernel, "add", 110, 130, 5),
  };
  const TraceSummary s = AnalyzeTrace(ev);
  ASSERT_TRUE(s.has_device);
  EXPECT_EQ(s.window_ns, 130);
  EXPECT_EQ(s.busy_ns, 70);
  EXPECT_EQ(s.memcpy_ns, 10);
  EXPECT_EQ(s.idle_ns, 60);
  EXPECT_DOUBLE_EQ(s.idle_host_wait_ns, 20);
  EXPECT_DOUBLE_EQ(s.idle_kernel_wait_ns, 0);
  EXPECT_DOUBLE_EQ(s.idle_other_ns, 40);
  EXPECT_EQ(s.kernel_count, 4);
  EXPECT_EQ(s.memcpy_count, 1);
  EXPECT_EQ(s.sync_count, 1);
  EXPECT_EQ(s.kernel_median_ns, 20);  // durations 20 10 10 20
  ASSERT_FALSE(s.ops_by_device.empty());
  EXPECT_EQ(s.ops_by_device.front().name, "(no host op)");  // 50 ns unlinked
  EXPECT_EQ(s.forward.device_ns, 20);  // gemm, launched by aten::mm
  ASSERT_FALSE(s.kernels.empty());
  EXPECT_EQ(s.kernels.front().name, "add");  // 20 ns, ties keep name order
}

TEST(TraceAnalysisTest, TinyGapsAreKernelWaits) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", -100, 200),
      Launch(-40, 1),
      Launch(-30, 2),
      Device(K::kKernel, "a", 0, 20, 1),
      Device(K::kKernel, "b", 20 + kKernelWaitNs - 1, 60, 2),
  };
  const TraceSummary s = AnalyzeTrace(ev);
  EXPECT_EQ(s.idle_ns, kKernelWaitNs - 1);
  EXPECT_DOUBLE_EQ(s.idle_kernel_wait_ns, kKernelWaitNs - 1);
  EXPECT_DOUBLE_EQ(s.idle_host_wait_ns + s.idle_other_ns, 0);
}

// Device work is given to the step of its launch even when it runs after
// that step's host scope ended; windows add up per step, so the host time
// between steps is not idle.
TEST(TraceAnalysisTest, DeviceEventsBelongToTheStepOfTheirLaunch) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", 0, 10),
      Launch(5, 1),
      Host(K::kUserScope, "ProfilerStep#1", 1000, 1010),
      Launch(1005, 2),
      Device(K::kKernel, "k", 20, 40, 1),
      Device(K::kKernel, "k", 1020, 1050, 2),
  };
  const TraceSummary s = AnalyzeTrace(ev);
  EXPECT_EQ(s.kernel_count, 2);
  EXPECT_EQ(s.window_ns, 50);
  EXPECT_EQ(s.idle_ns, 0);
  const TraceSummary first = AnalyzeTrace(ev, 1);
  EXPECT_EQ(first.kernel_count, 1);
}

// Two streams: a gap on one stream that the other fills is not idle.
TEST(TraceAnalysisTest, OverlappingStreamsAreNotIdle) {
  std::vector<TraceEvent> ev = {
      Host(K::kUserScope, "ProfilerStep#0", -100, 200),
      Launch(-50, 1),
      Launch(-50, 2),
      Launch(-50, 3),
      Device(K::kKernel, "a", 0, 10, 1, 0, 7),
      Device(K::kKernel, "b", 50, 60, 2, 0, 7),
      Device(K::kKernel, "c", 5, 55, 3, 0, 8),
  };
  const TraceSummary s = AnalyzeTrace(ev);
  EXPECT_EQ(s.window_ns, 60);
  EXPECT_EQ(s.busy_ns, 60);
  EXPECT_EQ(s.idle_ns, 0);
  EXPECT_DOUBLE_EQ(
      s.idle_host_wait_ns + s.idle_kernel_wait_ns + s.idle_other_ns, 0);
}

TEST(TraceAnalysisTest, NoStepsNoFigures) {
  const TraceSummary s = AnalyzeTrace({Host(K::kAtenOp, "aten::add", 0, 10)});
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.aten_ops, 0);
}

}  // namespace
}  // namespace torchbench
