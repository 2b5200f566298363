// File: program/trace_analysis.h
//
// The arithmetic of the profiling pass (--torchbench_profile), on plain event
// lists so that it is unit-tested without a profiler or a GPU. profile.h turns
// LibTorch's Kineto events into TraceEvents and calls AnalyzeTrace.
//
// Definitions (../shared/reference/analysis-and-gate.md §1, the paper's
// TorchExpert and Holistic Trace Analysis):
// - A step is the host interval of its "ProfilerStep#n" user scope. A device
//   event belongs to the step in which its launch (the runtime call with the
//   same correlation id) started; without a launch, to the step whose
//   interval (up to the next step's start) holds its own start.
// - GPU window of a step: first device-event start to last device-event end.
//   busy = |union of kernel, memcpy and memset intervals|; memcpy = |union of
//   memcpy intervals|; active = busy - memcpy; idle = window - busy.
// - Idle split, per stream (HTA): for consecutive device events a gap is
//   host wait when the later event's launch started after the earlier one
//   ended (the CPU enqueued too late), else kernel wait when shorter than
//   kKernelWaitNs, else other. The three shares of all gaps split the
//   window's idle time (with several streams a gap on one stream can be busy
//   time on another; idle the gaps do not explain counts as other).
// - aten_ops: ATen operators not nested in another ATen operator on their
//   thread (what OpCounter calls top-level). would_sync: ops that make the
//   host wait for a GPU (kWouldSyncOps), counted once per nesting chain.
// - Phases: optimizer = inside an "Optimizer.step#" scope; backward = inside
//   an autograd engine function; forward = the rest.
// - product time: the inclusive host time of matrix-product, convolution and
//   attention ops (IsProductOp) not nested in another; over the steps' host
//   time, the share of a step they take (on a CPU, where host time is the
//   kernels' time).
#ifndef TORCHBENCH_PROGRAM_TRACE_ANALYSIS_H_
#define TORCHBENCH_PROGRAM_TRACE_ANALYSIS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchbench {

enum class TraceEventKind {
  kAtenOp,            // an ATen operator (RecordScope::FUNCTION)
  kBackwardFunction,  // autograd::engine::evaluate_function: ...
  kUserScope,         // RECORD_USER_SCOPE: ProfilerStep#n, Optimizer.step#...
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,  // a CUDA runtime or driver call on the host
  kOther,
};

struct TraceEvent {
  TraceEventKind kind = TraceEventKind::kOther;
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t thread = 0;              // host thread (host events)
  int64_t stream = -1;              // device stream (device events)
  uint64_t correlation = 0;         // launch <-> device event; host op id
  uint64_t linked_correlation = 0;  // device event -> the host op
};

// Gaps between two device events on a stream shorter than this are kernel
// waits (HTA's consecutive_kernel_delay).
inline constexpr int64_t kKernelWaitNs = 30;

// One row of a top-k table: totals over the profiled steps.
struct OpStat {
  std::string name;
  int64_t calls = 0;
  int64_t self_ns = 0;   // host self time, or device time for device tables
  int64_t total_ns = 0;  // host inclusive time (host tables only)
};

struct PhaseStat {
  int64_t ops = 0;        // top-level ATen ops
  int64_t host_ns = 0;    // their inclusive host time
  int64_t device_ns = 0;  // device time of what they launched
};

// Sums over the steps analyzed; divide by `steps` for per-step figures.
struct TraceSummary {
  int steps = 0;
  int64_t aten_ops = 0;
  int64_t would_sync = 0;
  int64_t step_host_ns = 0;     // the steps' host intervals
  int64_t product_host_ns = 0;  // product ops' time, not nested in one
  PhaseStat forward, backward, optimizer;
  std::vector<OpStat> ops_by_host;    // every ATen op name, by self host time
  std::vector<OpStat> ops_by_device;  // host op name -> device time launched
  std::vector<OpStat> kernels;        // kernel name -> count, device time

  bool has_device = false;  // any device event in the analyzed steps
  int64_t window_ns = 0;    // sum of per-step GPU windows
  int64_t busy_ns = 0;
  int64_t memcpy_ns = 0;
  int64_t idle_ns = 0;
  double idle_host_wait_ns = 0;
  double idle_kernel_wait_ns = 0;
  double idle_other_ns = 0;
  int64_t kernel_count = 0;
  int64_t memcpy_count = 0;
  int64_t sync_count = 0;  // blocking runtime calls inside the steps
  int64_t kernel_median_ns = 0;
};

// Length of the union of [start, end) intervals.
int64_t UnionLength(std::vector<std::pair<int64_t, int64_t>> intervals);

// Whether an ATen op is a matrix product, a convolution or attention (the
// FLOP counter's operators and a few it has no formula for).
bool IsProductOp(const std::string& name);

// Whether an ATen op makes the host wait for the device on a GPU.
bool IsWouldSyncOp(const std::string& name);

// Whether a CUDA runtime or driver call blocks the host until the device is
// done (cudaStreamSynchronize, a synchronous cudaMemcpy, ...).
bool IsBlockingRuntimeCall(const std::string& name);

// Analyzes the steps named "ProfilerStep#n" in `events`, in order of start;
// only the first `max_steps` (all when < 0) are counted.
TraceSummary AnalyzeTrace(const std::vector<TraceEvent>& events,
                          int max_steps = -1);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_TRACE_ANALYSIS_H_
