// File: program/profile.h
//
// The profiling pass (--torchbench_profile): after an instance's measured
// repetitions, never before or inside them (ProfilingReporter), one
// discarded step and then K steps run under LibTorch's Kineto profiler, each
// in a "ProfilerStep#n" user scope (the name Holistic Trace Analysis and
// TorchBench's traces use), followed by the device synchronization outside
// the scope. One extra scope is recorded after the K analyzed steps because
// HTA drops the last step of a trace; the counters come from the first K.
//
//   ProfileOptions options;  // steps = 5, trace_dir = "" (no files)
//   InstanceProfile p = ProfileInstance(instance,
//   "resnet18/Train/batch_size:1",
//                                       options);
//   p.counters["aten_ops_per_step"];  // on every device
//   p.counters["gpu_idle_pct"];       // only when the device is a GPU
//
// With a trace directory, three files per instance: <safe name>.pt.trace.json
// (the Chrome trace, read unchanged by Perfetto and HTA), <safe
// name>.profile.txt (top-k tables and the phase split) and <safe
// name>.profile.json (the same, for tools/report.py).
#ifndef TORCHBENCH_PROGRAM_PROFILE_H_
#define TORCHBENCH_PROGRAM_PROFILE_H_

#include <map>
#include <string>

#include "program/trace_analysis.h"
#include "torchbench/instance.h"

namespace torchbench {

struct ProfileOptions {
  int steps = 5;
  std::string trace_dir;  // empty: no files
  // Each op's input shapes, dtypes and scalar arguments in the trace ("Input
  // Dims", "Input type", "Concrete Inputs"): what tools/tb abtest's
  // micro-benchmarks rebuild an op's call from. Costs host time per op.
  bool record_shapes = false;
  int top_k = 15;
};

struct InstanceProfile {
  // Per-step counters (see CountersFromSummary).
  std::map<std::string, double> counters;
  TraceSummary summary;
};

// Per-step counters from a summary: aten_ops_per_step and
// would_sync_per_step always; on a GPU with device events (absent, not 0,
// without them) also gpu_busy_pct,
// gpu_active_pct, gpu_memcpy_pct, gpu_idle_pct, gpu_idle_host_wait_pct,
// gpu_idle_kernel_wait_pct, gpu_idle_other_pct (percent of the GPU window),
// kernels_per_step, syncs_per_step, memcpy_per_step, kernel_median_us.
std::map<std::string, double> CountersFromSummary(const TraceSummary& s,
                                                  bool device_is_gpu);

// The per-instance table: phase split, top-k ops by self host time with
// call counts, and on a GPU top-k ops by device time and top-k kernels.
std::string ProfileTable(const std::string& name, const TraceSummary& s,
                         int top_k);

// The same as JSON (tools/report.py reads it), with every op in
// top_ops_host (the device tables keep the top k).
std::string ProfileJson(const std::string& name, const TraceSummary& s,
                        const std::map<std::string, double>& counters,
                        int top_k);

// A file name for an instance name: characters other than [A-Za-z0-9._-]
// become '_' ("resnet18/Train/batch_size:1" -> "resnet18_Train_batch_size_1").
std::string SafeFileName(const std::string& instance_name);

// Runs one discarded and options.steps + 1 profiled steps of `instance` and
// analyzes the first options.steps. Throws what a step throws, and std::runtime_error when a
// trace file cannot be written.
InstanceProfile ProfileInstance(Instance& instance, const std::string& name,
                                const ProfileOptions& options);

}  // namespace torchbench

#endif  // TORCHBENCH_PROGRAM_PROFILE_H_
